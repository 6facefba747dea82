// The settings a data request's transaction takes beyond its request context, as PostgREST (v12–v14) applies
// them: the impersonated role's settings (the catalog's `alter role … set`, then the project's `role_settings`),
// a called function's hoisted `set` settings, and the project's `app_settings` as `app.settings.*`.
import { assertEquals } from "./assert.ts";
import { ownerSql } from "./data_fixture.ts";
import { startPlatform, type TestPlatform } from "./harness.ts";
import { runWireCase, type WireCase } from "./data_wire_cases.ts";

const SQL = `
create function gucs() returns json language sql stable as $$
  select json_build_object(
    'statement_timeout', current_setting('statement_timeout'),
    'lock_timeout', current_setting('lock_timeout'),
    'isolation', current_setting('transaction_isolation'),
    'cost', nullif(current_setting('plan_filter.statement_cost_limit', true), ''),
    'name', nullif(current_setting('app.settings.name', true), ''),
    'secret', nullif(current_setting('app.settings.jwt_secret', true), ''),
    'user', current_user)
$$;
create function serial_fn() returns text language sql stable set default_transaction_isolation = 'serializable'
  as $$ select current_setting('transaction_isolation') $$;
create function timed_fn() returns text language sql stable set statement_timeout = '3s'
  as $$ select 'done' $$;
create function locked_fn() returns text language sql stable set lock_timeout = '7s'
  as $$ select 'done' $$;
create function work_fn() returns text language sql stable set work_mem = '1234kB'
  as $$ select current_setting('work_mem') $$;
create function long_fn() returns text language sql stable set statement_timeout = '10min'
  as $$ select 'done' $$;
create function mixed_fn() returns text language sql stable
  set statement_timeout = '4s' set lock_timeout = '6s' set work_mem = '2MB'
  as $$ select 'done' $$;
-- Run before every request once it is the project's pre_request: what the transaction has, as headers.
create function observe() returns void language plpgsql as $$ begin
  perform set_config('response.headers', json_build_array(
    json_build_object('X-Timeout', current_setting('statement_timeout')),
    json_build_object('X-Lock', current_setting('lock_timeout')),
    json_build_object('X-Isolation', current_setting('transaction_isolation')),
    json_build_object('X-Cost', coalesce(current_setting('plan_filter.statement_cost_limit', true), '')),
    json_build_object('X-Secret', coalesce(current_setting('app.settings.jwt_secret', true), '')),
    json_build_object('X-Work', current_setting('work_mem'))
  )::text, true);
end $$;
create table notes (id int primary key, body text);
grant select, insert on notes to anon;
`;

/** What `rpc/gucs` answers, with `over` in place of the defaults (the test platforms' 8 s timeout). */
function seen(over: Record<string, string | null> = {}) {
  return {
    statement_timeout: "8s",
    lock_timeout: "0",
    isolation: "read committed",
    cost: null,
    name: null,
    secret: null,
    user: "service_role",
    ...over,
  };
}

async function patchSettings(p: TestPlatform, body: unknown) {
  const res = await p.fetch("/v1/project/data-settings", {
    method: "PATCH",
    headers: { apikey: p.secretKey },
    json: body,
  });
  return { status: res.status, body: await res.json() };
}

/** A signed-up user's access token (requests as authenticated). */
async function signUpToken(p: TestPlatform): Promise<string> {
  const res = await p.fetch("/v1/auth/signup", {
    method: "POST",
    headers: { apikey: p.publicKey },
    json: { email: "settings@example.com", password: "correct-horse-1" },
  });
  const body = await res.json();
  assertEquals(res.status, 200, JSON.stringify(body));
  return body.data.session.access_token;
}

/** What the engine's own superuser session runs (an operator's `alter role`), then a schema reload. */
async function operatorSql(p: TestPlatform, sql: string) {
  const db = await p.platform.dbs.project("default");
  const [row] = await db.query<{ name: string }>("select current_database() as name");
  await db.exec(sql.replaceAll("$DB", `"${row!.name}"`));
  p.platform.data.schemaChanged("default");
}

/** Settings a function's `set` clause hoists to its call's transaction, seen by the pre-request function. */
const HOISTED: WireCase[] = [
  {
    name: "no set clause: the platform's timeout, read committed",
    url: "rpc/gucs",
    status: 200,
    json: seen(),
    expect: { "x-timeout": "8s", "x-isolation": "read committed", "x-cost": "" },
  },
  {
    name: "set statement_timeout: the whole transaction takes it (seen before the call)",
    url: "rpc/timed_fn",
    status: 200,
    json: "done",
    expect: { "x-timeout": "3s", "x-isolation": "read committed" },
  },
  {
    name: "set default_transaction_isolation: the transaction starts at that level",
    url: "rpc/serial_fn",
    status: 200,
    json: "serializable",
    expect: { "x-isolation": "serializable", "x-timeout": "8s" },
  },
  {
    name: "set default_transaction_isolation on a POST call (read write)",
    method: "POST",
    url: "rpc/serial_fn",
    body: "{}",
    status: 200,
    json: "serializable",
    expect: { "x-isolation": "serializable" },
  },
  {
    name: "set plan_filter.statement_cost_limit: hoisted",
    url: "rpc/costly_fn",
    status: 200,
    json: "done",
    expect: { "x-cost": "5000" },
  },
  {
    name: "set lock_timeout: not a hoisted setting, the function keeps it to itself",
    url: "rpc/locked_fn",
    status: 200,
    json: "done",
    expect: { "x-lock": "0" },
  },
  {
    name: "a table read takes no function's settings",
    url: "notes?select=id",
    status: 200,
    json: [],
    expect: { "x-timeout": "8s", "x-isolation": "read committed" },
  },
  {
    name: "set work_mem: not a hoisted setting, the function keeps it to itself",
    url: "rpc/work_fn",
    status: 200,
    json: "1234kB",
    expect: { "x-work": "4MB" },
  },
];

/** The project's hoisted_tx_settings (PostgREST's db-hoisted-tx-settings), group by group: each PATCHed first. */
const HOISTED_CONFIGURED: { hoisted: string[] | null; cases: WireCase[] }[] = [
  {
    hoisted: ["lock_timeout", "WORK_MEM"],
    cases: [
      {
        name: "lock_timeout now hoisted: the transaction takes it",
        url: "rpc/locked_fn",
        status: 200,
        json: "done",
        expect: { "x-lock": "7s" },
      },
      {
        name: "work_mem hoisted (named in any case)",
        url: "rpc/work_fn",
        status: 200,
        json: "1234kB",
        expect: { "x-work": "1234kB" },
      },
      {
        name: "statement_timeout no longer hoisted: the platform's",
        url: "rpc/timed_fn",
        status: 200,
        json: "done",
        expect: { "x-timeout": "8s" },
      },
      {
        name: "plan_filter.statement_cost_limit no longer hoisted",
        url: "rpc/costly_fn",
        status: 200,
        json: "done",
        expect: { "x-cost": "" },
      },
      {
        name: "a function's isolation level starts its transaction whether hoisted or not (as PostgREST)",
        url: "rpc/serial_fn",
        status: 200,
        json: "serializable",
        expect: { "x-isolation": "serializable" },
      },
      {
        name: "only the hoisted ones of several",
        url: "rpc/mixed_fn",
        status: 200,
        json: "done",
        expect: { "x-timeout": "8s", "x-lock": "6s", "x-work": "2MB" },
      },
    ],
  },
  {
    hoisted: [],
    cases: [
      {
        name: "[]: nothing hoisted",
        url: "rpc/mixed_fn",
        status: 200,
        json: "done",
        expect: { "x-timeout": "8s", "x-lock": "0", "x-work": "4MB" },
      },
      {
        name: "[]: the function still has its own setting inside",
        url: "rpc/work_fn",
        status: 200,
        json: "1234kB",
        expect: { "x-work": "4MB" },
      },
      {
        name: "[]: the isolation level still applies",
        url: "rpc/serial_fn",
        status: 200,
        json: "serializable",
        expect: { "x-isolation": "serializable" },
      },
    ],
  },
  {
    hoisted: ["statement_timeout"],
    cases: [
      {
        name: "a hoisted timeout past the platform's is held to DATA_STATEMENT_TIMEOUT_MS",
        url: "rpc/long_fn",
        status: 200,
        json: "done",
        expect: { "x-timeout": "8s" },
      },
      {
        name: "a lower one applies",
        url: "rpc/mixed_fn",
        status: 200,
        json: "done",
        expect: { "x-timeout": "4s", "x-lock": "0", "x-work": "4MB" },
      },
    ],
  },
  {
    hoisted: null,
    cases: [
      {
        name: "null: PostgREST's default three again",
        url: "rpc/mixed_fn",
        status: 200,
        json: "done",
        expect: { "x-timeout": "4s", "x-lock": "0", "x-work": "4MB" },
      },
      {
        name: "null: plan_filter.statement_cost_limit hoisted again",
        url: "rpc/costly_fn",
        status: 200,
        json: "done",
        expect: { "x-cost": "5000" },
      },
    ],
  },
];

/** Bad hoisted_tx_settings: 400, nothing changed. */
const BAD_HOISTED: unknown[] = [
  "statement_timeout",
  "statement_timeout, lock_timeout",
  [""],
  ["lock timeout"],
  ["lock_timeout;"],
  ["1abc"],
  ["a..b"],
  [".a"],
  ["a."],
  ["a-b"],
  ["café"],
  ["a\u0000b"],
  [1],
  [null],
  ["role"],
  ["ROLE"],
  // PostgreSQL takes a transaction's modes only before its first query (PostgreSQL's 25001 otherwise).
  ["transaction_read_only"],
  ["Transaction_Isolation"],
  ["transaction_deferrable"],
  ["session_authorization"],
  ["request.jwt.claims"],
  ["response.status"],
  ["x".repeat(64)],
  [`${"a".repeat(63)}.${"b".repeat(63)}.c`],
  ["work_mem", "WORK_MEM"],
  Array.from({ length: 65 }, (_, i) => `s${i}`),
  { statement_timeout: true },
];

/** The project's role_settings for anon, as each request role sees them. */
const ROLE_CASES: WireCase[] = [
  {
    name: "anon takes its settings; the isolation level starts the transaction",
    url: "rpc/gucs",
    anon: true,
    status: 200,
    json: seen({
      statement_timeout: "2s",
      lock_timeout: "1500ms",
      isolation: "repeatable read",
      cost: "100000",
      user: "anon",
    }),
  },
  {
    name: "service_role has none of anon's",
    url: "rpc/gucs",
    status: 200,
    json: seen(),
  },
  {
    name: "a function's set statement_timeout wins over the role's (PostgREST's precedence)",
    url: "rpc/timed_fn",
    anon: true,
    status: 200,
    json: "done",
    expect: { "x-timeout": "3s", "x-isolation": "repeatable read" },
  },
  {
    name: "a function's isolation level wins over the role's",
    url: "rpc/serial_fn",
    anon: true,
    status: 200,
    json: "serializable",
  },
  {
    name: "a write as anon runs with its settings too",
    method: "POST",
    url: "notes",
    anon: true,
    headers: { prefer: "return=representation" },
    body: '{"id":1,"body":"x"}',
    status: 201,
    json: [{ id: 1, body: "x" }],
    expect: { "x-timeout": "2s", "x-lock": "1500ms", "x-isolation": "repeatable read" },
  },
];

/** Bad role_settings and app_settings: 400, nothing changed. */
const BAD_PATCHES: unknown[] = [
  { role_settings: { anon: { role: "service_role" } } },
  { role_settings: { anon: { session_authorization: "postgres" } } },
  { role_settings: { anon: { search_path: "evil" } } },
  { role_settings: { anon: { row_security: "off" } } },
  { role_settings: { anon: { statement_timeout: "soon" } } },
  { role_settings: { anon: { statement_timeout: "1s; drop table notes" } } },
  { role_settings: { anon: { default_transaction_isolation: "chaos" } } },
  { role_settings: { anon: { "plan_filter.statement_cost_limit": "-1" } } },
  { role_settings: { postgres: { statement_timeout: "1s" } } },
  { role_settings: { anon: "1s" } },
  { app_settings: { "bad-name": "x" } },
  { app_settings: { "a.b": "x" } },
  { app_settings: { "1abc": "x" } },
  { app_settings: { ["n".repeat(64)]: "x" } },
  { app_settings: { name: "x".repeat(4097) } },
  { app_settings: { name: "a\u0000b" } },
  { app_settings: { name: 1 } },
  { app_settings: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, "v"])) },
  { app_settings: ["x"] },
];

Deno.test("data requests take their role's settings, a function's hoisted settings and app.settings", async (t) => {
  const p = await startPlatform();
  try {
    await ownerSql(p, SQL);
    // A placeholder setting (no plan_filter loaded) in a set clause is for a superuser to write.
    await operatorSql(
      p,
      `create function public.costly_fn() returns text language sql stable
         set plan_filter.statement_cost_limit = '5000' as $$ select 'done' $$;
       grant execute on function public.costly_fn() to anon, authenticated, service_role;`,
    );
    assertEquals((await patchSettings(p, { pre_request: "observe" })).status, 200);

    for (const c of HOISTED) await t.step(`hoisted: ${c.name}`, () => runWireCase(p, c));

    await t.step("role_settings: set by the service role, shown back", async () => {
      const set = await patchSettings(p, {
        role_settings: {
          anon: {
            statement_timeout: "2s",
            lock_timeout: "1500ms",
            default_transaction_isolation: "repeatable read",
            "plan_filter.statement_cost_limit": "100000",
          },
        },
      });
      assertEquals(set.status, 200, JSON.stringify(set.body));
      assertEquals(set.body.data.role_settings, {
        anon: {
          statement_timeout: "2s",
          lock_timeout: "1500ms",
          default_transaction_isolation: "repeatable read",
          "plan_filter.statement_cost_limit": "100000",
        },
      });
    });

    for (const c of ROLE_CASES) await t.step(`role_settings: ${c.name}`, () => runWireCase(p, c));

    await t.step("role_settings: a timeout past the platform's is held to the platform's", async () => {
      await patchSettings(p, { role_settings: { anon: { statement_timeout: "10min" } } });
      await runWireCase(p, {
        name: "anon's 10min",
        url: "rpc/gucs",
        anon: true,
        status: 200,
        json: seen({ user: "anon" }),
      });
    });

    await t.step("app_settings: every request reads them as app.settings.<name>", async () => {
      const set = await patchSettings(p, { app_settings: { name: "café ☕", jwt_secret: "s3cret'; --" } });
      assertEquals([set.status, set.body.data.app_settings], [200, {
        name: "café ☕",
        jwt_secret: "s3cret'; --",
      }]);
      await runWireCase(p, {
        name: "service role",
        url: "rpc/gucs",
        status: 200,
        json: seen({ name: "café ☕", secret: "s3cret'; --" }),
      });
      await runWireCase(p, {
        name: "anon, on a table read",
        url: "notes?select=id",
        anon: true,
        status: 200,
        json: [{ id: 1 }],
        expect: { "x-secret": "s3cret'; --", "x-timeout": "8s" },
      });
    });

    await t.step(
      "app_settings: past the 100 arguments one function takes, every one is set, in order",
      async () => {
        // 9 settings of the request's own + 100: the transaction's first statement nests its calls.
        const many: Record<string, string> = { name: "first" };
        for (let i = 0; i < 98; i++) many[`k${i}`] = `v${i}`;
        many.jwt_secret = "last";
        const set = await patchSettings(p, { app_settings: many });
        assertEquals(set.status, 200, JSON.stringify(set.body));
        await runWireCase(p, {
          name: "many",
          url: "rpc/gucs",
          status: 200,
          json: seen({ name: "first", secret: "last" }),
        });
        const back = await patchSettings(p, { app_settings: { name: "café ☕", jwt_secret: "s3cret'; --" } });
        assertEquals(back.status, 200);
      },
    );

    await t.step("bad role_settings and app_settings → 400, nothing changed", async () => {
      const before = await (await p.fetch("/v1/project/data-settings", { headers: { apikey: p.secretKey } }))
        .json();
      for (const bad of BAD_PATCHES) {
        const res = await patchSettings(p, bad);
        assertEquals(res.status, 400, JSON.stringify(bad).slice(0, 200));
        assertEquals(res.body.error.code, "VALIDATION_ERROR", JSON.stringify(res.body));
      }
      const after = await (await p.fetch("/v1/project/data-settings", { headers: { apikey: p.secretKey } }))
        .json();
      assertEquals(after, before);
    });

    await t.step("hoisted_tx_settings: PostgREST's default, shown back", async () => {
      const res = await p.fetch("/v1/project/data-settings", { headers: { apikey: p.secretKey } });
      assertEquals((await res.json()).data.hoisted_tx_settings, [
        "statement_timeout",
        "plan_filter.statement_cost_limit",
        "default_transaction_isolation",
      ]);
    });

    for (const group of HOISTED_CONFIGURED) {
      const label = `hoisted_tx_settings ${JSON.stringify(group.hoisted)}`;
      await t.step(`${label}: set`, async () => {
        const set = await patchSettings(p, { hoisted_tx_settings: group.hoisted });
        assertEquals(set.status, 200, JSON.stringify(set.body));
        const shown = group.hoisted?.map((n) => n.toLowerCase()) ??
          ["statement_timeout", "plan_filter.statement_cost_limit", "default_transaction_isolation"];
        assertEquals(set.body.data.hoisted_tx_settings, shown);
      });
      for (const c of group.cases) await t.step(`${label}: ${c.name}`, () => runWireCase(p, c));
    }

    await t.step("bad hoisted_tx_settings → 400, nothing changed", async () => {
      await patchSettings(p, { hoisted_tx_settings: ["lock_timeout", "plan_filter.statement_cost_limit"] });
      const before = await (await p.fetch("/v1/project/data-settings", { headers: { apikey: p.secretKey } }))
        .json();
      for (const bad of BAD_HOISTED) {
        const res = await patchSettings(p, { hoisted_tx_settings: bad });
        assertEquals(res.status, 400, JSON.stringify(bad).slice(0, 200));
        assertEquals(res.body.error.code, "VALIDATION_ERROR", JSON.stringify(res.body));
      }
      const after = await (await p.fetch("/v1/project/data-settings", { headers: { apikey: p.secretKey } }))
        .json();
      assertEquals(after, before);
      assertEquals(after.data.hoisted_tx_settings, ["lock_timeout", "plan_filter.statement_cost_limit"]);
      await patchSettings(p, { hoisted_tx_settings: null });
    });

    await t.step(
      "the catalog's role settings (an operator's alter role): in this database over role-wide",
      async () => {
        await patchSettings(p, { role_settings: null, app_settings: null });
        await operatorSql(
          p,
          `alter role authenticated set lock_timeout = '9s';
         alter role authenticated in database $DB set lock_timeout = '4s';
         alter role authenticated in database $DB set statement_timeout = '5s';
         alter role authenticated in database $DB set default_transaction_isolation = 'serializable';`,
        );
        try {
          const token = await signUpToken(p);
          await runWireCase(p, {
            name: "authenticated",
            url: "rpc/gucs",
            headers: { authorization: `Bearer ${token}` },
            anon: true,
            status: 200,
            json: seen({
              statement_timeout: "5s",
              lock_timeout: "4s",
              isolation: "serializable",
              user: "authenticated",
            }),
          });
          await patchSettings(p, { role_settings: { authenticated: { lock_timeout: "2s" } } });
          await runWireCase(p, {
            name: "the project's role_settings over the catalog's",
            url: "rpc/gucs",
            headers: { authorization: `Bearer ${token}` },
            anon: true,
            status: 200,
            json: seen({
              statement_timeout: "5s",
              lock_timeout: "2s",
              isolation: "serializable",
              user: "authenticated",
            }),
          });
        } finally {
          await operatorSql(
            p,
            `alter role authenticated reset lock_timeout;
           alter role authenticated in database $DB reset all;`,
          );
        }
        await runWireCase(p, {
          name: "reset: the defaults again",
          url: "rpc/gucs",
          status: 200,
          json: seen(),
        });
      },
    );
  } finally {
    await p.close();
  }
});
