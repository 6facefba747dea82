// The OpenAPI root's data settings, row by row, as PostgREST (v12–v14) answers under its `openapi-mode`
// (follow-privileges, ignore-privileges, disabled: 404 PGRST126, PostgREST v13+) and `openapi-security-active`
// (the JWT `securityDefinitions` and `security` of Response/OpenAPI.hs), per project and from `DATA_*`.
import { assertEquals } from "./assert.ts";
import { ownerSql } from "./data_fixture.ts";
import { startPlatform, type TestPlatform } from "./harness.ts";
import { err } from "./data_wire_cases.ts";

const SQL = `
create table open_items (id int primary key, name text);
create table secret_items (id int primary key, note text);
revoke all on secret_items from anon;
create view open_view as select id from open_items;
create function open_fn() returns int language sql stable as $$ select 1 $$;
create function secret_fn() returns int language sql stable as $$ select 2 $$;
revoke execute on function secret_fn() from public, anon;
insert into open_items values (1, 'one');
`;

/** A value the document must not have at that path. */
const ABSENT = "(absent)";

const SECURITY_DEFINITIONS = {
  JWT: {
    type: "apiKey",
    in: "header",
    name: "Authorization",
    description: 'Add the token prepending "Bearer " (without quotes) to it',
  },
};

const DISABLED = err("PGRST126", "Root endpoint metadata is disabled");

interface ModeCase {
  name: string;
  method?: string;
  /** Below /rest/v1 (default: the root, `/`). */
  path?: string;
  headers?: Record<string, string>;
  /** Send the public key (anon) instead of the secret key. */
  anon?: boolean;
  status: number;
  /** The whole JSON body expected. */
  json?: unknown;
  /** Paths into the document and the value expected at each (ABSENT: not there). */
  at?: [(string | number)[], unknown][];
  /** Expected header values; null: absent. */
  expect?: Record<string, string | null>;
  /** The body is empty (HEAD, OPTIONS). */
  empty?: boolean;
}

/** Each group: the data settings PATCHed first, then its rows. */
const GROUPS: { settings: Record<string, unknown>; cases: ModeCase[] }[] = [
  {
    settings: {},
    cases: [
      {
        name: "follow-privileges (default): anon sees what it may use",
        anon: true,
        status: 200,
        at: [
          [["paths", "/open_items", "get", "tags"], ["open_items"]],
          [["paths", "/open_view", "get", "tags"], ["open_view"]],
          [["paths", "/secret_items"], ABSENT],
          [["definitions", "secret_items"], ABSENT],
          [["paths", "/rpc/open_fn", "get", "tags"], ["(rpc) open_fn"]],
          [["paths", "/rpc/secret_fn"], ABSENT],
          [["securityDefinitions"], ABSENT],
          [["security"], ABSENT],
        ],
        expect: { "content-type": "application/openapi+json; charset=utf-8" },
      },
      {
        name: "follow-privileges: the service role sees everything it holds",
        status: 200,
        at: [
          [["paths", "/secret_items", "get", "tags"], ["secret_items"]],
          [["paths", "/rpc/secret_fn", "get", "tags"], ["(rpc) secret_fn"]],
        ],
      },
    ],
  },
  {
    settings: { openapi_mode: "ignore-privileges" },
    cases: [
      {
        name: "ignore-privileges: anon sees every table, view and function of the schema",
        anon: true,
        status: 200,
        at: [
          [["paths", "/open_items", "get", "tags"], ["open_items"]],
          [["paths", "/secret_items", "get", "tags"], ["secret_items"]],
          [["definitions", "secret_items", "properties", "note"], { format: "text", type: "string" }],
          [["parameters", "rowFilter.secret_items.note"], {
            name: "note",
            required: false,
            in: "query",
            type: "string",
          }],
          [["paths", "/rpc/secret_fn", "get", "tags"], ["(rpc) secret_fn"]],
          [["securityDefinitions"], ABSENT],
        ],
      },
      {
        name: "ignore-privileges: the document only; the table itself still refuses anon",
        path: "secret_items",
        anon: true,
        status: 401,
        json: err("42501", "permission denied for table secret_items"),
      },
    ],
  },
  {
    settings: { openapi_mode: null, openapi_security_active: true },
    cases: [
      {
        name: "openapi_security_active: PostgREST's JWT security definition and requirement",
        anon: true,
        status: 200,
        at: [
          [["securityDefinitions"], SECURITY_DEFINITIONS],
          [["security"], [{ JWT: [] }]],
          [["paths", "/secret_items"], ABSENT],
        ],
      },
    ],
  },
  {
    settings: { openapi_mode: "disabled", openapi_security_active: null },
    cases: [
      { name: "disabled: GET / is 404 PGRST126", status: 404, json: DISABLED },
      { name: "disabled: anon alike", anon: true, status: 404, json: DISABLED },
      {
        name: "disabled: the error is JSON",
        status: 404,
        expect: { "content-type": "application/json; charset=utf-8" },
      },
      { name: "disabled: HEAD / is 404 without a body", method: "HEAD", status: 404, empty: true },
      { name: "disabled: OPTIONS / is 404", method: "OPTIONS", status: 404, json: DISABLED },
      { name: "disabled: /rest/v1 without the slash too", path: "", status: 404, json: DISABLED },
      {
        name: "disabled: answered before Accept is negotiated (no 406)",
        headers: { accept: "text/html" },
        status: 404,
        json: DISABLED,
      },
      {
        name: "disabled: answered before the profile is checked (no 406 PGRST106)",
        headers: { "accept-profile": "nope" },
        status: 404,
        json: DISABLED,
      },
      {
        name: "disabled: tables are still served",
        path: "open_items?select=id",
        anon: true,
        status: 200,
        json: [{ id: 1 }],
      },
      {
        name: "disabled: functions are still served",
        path: "rpc/open_fn",
        anon: true,
        status: 200,
        json: 1,
      },
    ],
  },
  {
    settings: { openapi_mode: null },
    cases: [
      {
        name: "null: back to the platform's default (follow-privileges)",
        anon: true,
        status: 200,
        at: [[["paths", "/secret_items"], ABSENT], [["swagger"], "2.0"]],
      },
    ],
  },
];

function pick(doc: unknown, path: (string | number)[]): unknown {
  let at: unknown = doc;
  for (const key of path) {
    if (at === null || typeof at !== "object" || !(key in at)) return ABSENT;
    at = (at as Record<string | number, unknown>)[key];
  }
  return at;
}

async function run(p: TestPlatform, c: ModeCase): Promise<void> {
  const headers = { apikey: c.anon ? p.publicKey : p.secretKey, ...c.headers };
  const path = c.path === undefined ? "/" : c.path === "" ? "" : `/${c.path}`;
  const res = await p.fetch(`/rest/v1${path}`, { method: c.method ?? "GET", headers });
  const text = await res.text();
  assertEquals(res.status, c.status, text);
  for (const [name, value] of Object.entries(c.expect ?? {})) {
    assertEquals(res.headers.get(name), value, name);
  }
  if (c.empty) assertEquals(text, "");
  if (c.json !== undefined) assertEquals(JSON.parse(text), c.json);
  for (const [path, value] of c.at ?? []) assertEquals(pick(JSON.parse(text), path), value, path.join("."));
}

async function patchSettings(p: TestPlatform, body: unknown) {
  const res = await p.fetch("/v1/project/data-settings", {
    method: "PATCH",
    headers: { apikey: p.secretKey },
    json: body,
  });
  return { status: res.status, body: await res.json() };
}

/** Bad OpenAPI settings: 400, nothing changed. */
const BAD_PATCHES: unknown[] = [
  { openapi_mode: "follow_privileges" },
  { openapi_mode: "Disabled" },
  { openapi_mode: "" },
  { openapi_mode: true },
  { openapi_security_active: "true" },
  { openapi_security_active: 1 },
];

Deno.test("data API OpenAPI root: openapi_mode and openapi_security_active", async (t) => {
  const p = await startPlatform();
  try {
    await ownerSql(p, SQL);
    await t.step("the defaults, shown back", async () => {
      const res = await p.fetch("/v1/project/data-settings", { headers: { apikey: p.secretKey } });
      const body = await res.json();
      assertEquals(
        [res.status, body.data.openapi_mode, body.data.openapi_security_active],
        [200, "follow-privileges", false],
      );
    });
    for (const group of GROUPS) {
      const label = JSON.stringify(group.settings);
      if (Object.keys(group.settings).length > 0) {
        await t.step(`PATCH ${label}`, async () => {
          const res = await patchSettings(p, group.settings);
          assertEquals(res.status, 200, JSON.stringify(res.body));
        });
      }
      for (const c of group.cases) await t.step(`${label}: ${c.name}`, () => run(p, c));
    }
    await t.step("bad openapi_mode / openapi_security_active → 400, nothing changed", async () => {
      await patchSettings(p, { openapi_mode: "ignore-privileges", openapi_security_active: true });
      const before = await (await p.fetch("/v1/project/data-settings", { headers: { apikey: p.secretKey } }))
        .json();
      for (const bad of BAD_PATCHES) {
        const res = await patchSettings(p, bad);
        assertEquals(res.status, 400, JSON.stringify(bad));
        assertEquals(res.body.error.code, "VALIDATION_ERROR", JSON.stringify(res.body));
      }
      const after = await (await p.fetch("/v1/project/data-settings", { headers: { apikey: p.secretKey } }))
        .json();
      assertEquals(after, before);
      assertEquals([after.data.openapi_mode, after.data.openapi_security_active], [
        "ignore-privileges",
        true,
      ]);
    });
    await t.step("another role than the service role cannot change them: 403", async () => {
      const res = await p.fetch("/v1/project/data-settings", {
        method: "PATCH",
        headers: { apikey: p.publicKey },
        json: { openapi_mode: "disabled" },
      });
      assertEquals(res.status, 403);
      await res.body?.cancel();
    });
  } finally {
    await p.close();
  }
});

Deno.test("data API OpenAPI root: DATA_OPENAPI_MODE and DATA_OPENAPI_SECURITY_ACTIVE are the defaults", async (t) => {
  const p = await startPlatform({ DATA_OPENAPI_MODE: "disabled", DATA_OPENAPI_SECURITY_ACTIVE: "true" });
  try {
    await ownerSql(p, SQL);
    await t.step("disabled by default", () => run(p, { name: "root", status: 404, json: DISABLED }));
    await t.step("a project's own setting wins over the default", async () => {
      assertEquals((await patchSettings(p, { openapi_mode: "follow-privileges" })).status, 200);
      await run(p, {
        name: "root",
        anon: true,
        status: 200,
        at: [[["security"], [{ JWT: [] }]], [["paths", "/secret_items"], ABSENT]],
      });
    });
  } finally {
    await p.close();
  }
});
