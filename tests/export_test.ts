import postgres from "postgres";
import { randomHex } from "../lib/crypto.ts";
import { controlDir, openSource } from "../db/move_source.ts";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { ADMIN, type Json, json, startPlatform, type TestPlatform } from "./harness.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const SERVER = Deno.env.get("DATABASE_URL") ?? "postgres://postgres@127.0.0.1:5432/test";

/** A URL of `database` on the test server. */
function serverUrl(database: string): string {
  const url = new URL(SERVER);
  url.pathname = `/${database}`;
  return url.toString();
}

/** Runs `deno task export --to <to>` as a user would, with the platform's environment. */
async function runExport(env: Record<string, string>, to: string): Promise<{ code: number; out: string }> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--unstable-kv", "cli/export.ts", "--to", to],
    cwd: ROOT,
    // The embedded platform's environment: DATABASE_URL unset (an empty value counts as unset).
    env: { ...env, DATABASE_URL: "" },
    stdout: "piped",
    stderr: "piped",
    // A liveness bound, not a timing claim: a CLI that never ends is killed (SIGTERM) and its test fails.
    signal: AbortSignal.timeout(180_000),
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code, out: decode(stdout) + decode(stderr) };
}

/** Drops the target database, the project databases beside it and their logins. */
async function dropTarget(name: string): Promise<void> {
  const admin = postgres(SERVER, { max: 1, onnotice: () => {} });
  try {
    const dbs = await admin.unsafe<{ datname: string }[]>(
      "select datname from pg_database where datname = $1 or datname like $2",
      [name, `${name}\\_%`],
    );
    for (const { datname } of dbs) await admin.unsafe(`drop database if exists "${datname}" with (force)`);
    const roles = await admin.unsafe<{ rolname: string }[]>(
      "select rolname from pg_roles where rolname like $1",
      [
        `${name}\\_%`,
      ],
    );
    for (const { rolname } of roles) await admin.unsafe(`drop role if exists "${rolname}"`);
  } finally {
    await admin.end();
  }
}

const SCHEMA = `
create table notes (
  id serial primary key,
  body text not null,
  public boolean not null default false,
  owner uuid default auth.uid(),
  tags text[] not null default '{}',
  blob bytea,
  at timestamptz not null default now()
);
alter table notes enable row level security;
create policy notes_read on notes for select using (public or owner = auth.uid());
create policy notes_insert on notes for insert to authenticated with check (owner = auth.uid());
create function add_one(x int) returns int language sql immutable as 'select x + 1';
create schema crm;
create table crm.accounts (id bigint generated always as identity primary key, name text not null);
insert into crm.accounts (name) values ('acme'), ('globex');
alter table crm.accounts add constraint named_after_acme check (name like 'a%') not valid;
grant usage on schema crm to service_role;
grant select on crm.accounts to service_role;
insert into notes (body, public, tags, blob) values ('hello world', true, '{a,b}', '\\x00ff'), ('hidden', false, '{}', null);
select realtime.enable('public.notes');
create policy room_members on realtime.messages for select to authenticated
  using (realtime.topic() = 'room:' || auth.uid()::text and extension = 'broadcast');`;

Deno.test("export: the embedded platform moves to PostgreSQL whole, refusing a running source or a used target", async (t) => {
  // The source is always the embedded default, whichever database the suite runs on.
  const source = await startPlatform({ DATABASE_URL: "" });
  const sandbox = source.sandbox;
  const target = `export_test_${randomHex(6)}`;
  let moved: TestPlatform | undefined;
  let sourceOpen = true;
  const sk = { apikey: sandbox.secretKey };
  try {
    const call = async (
      p: TestPlatform,
      method: string,
      path: string,
      body?: unknown,
      headers: HeadersInit = sk,
    ) => await json(await p.fetch(path, { method, headers, json: body }));
    let userToken = "";
    let userRefresh = "";
    let userId = "";
    let other: Json;
    await t.step("the embedded platform gets a project's worth of state", async () => {
      const sql = await call(source, "POST", "/v1/sql", { query: SCHEMA });
      assertEquals(sql.status, 200, JSON.stringify(sql.body));
      const signup = await call(source, "POST", "/v1/auth/signup", {
        email: "ada@example.com",
        password: "correct-horse-battery",
      }, { apikey: sandbox.publicKey });
      assertEquals(signup.status, 200, JSON.stringify(signup.body));
      userToken = signup.body.data.session.access_token;
      userRefresh = signup.body.data.session.refresh_token;
      userId = signup.body.data.user.id;
      const mine = await source.fetch("/rest/v1/notes", {
        method: "POST",
        headers: { apikey: sandbox.publicKey, authorization: `Bearer ${userToken}` },
        json: { body: "ada's own" },
      });
      assertEquals(mine.status, 201, await mine.text());
      const fn = await call(source, "POST", "/v1/functions", {
        name: "greet",
        runtime: "deno",
        code: 'export default () => new Response("hi from greet");',
      });
      assert(fn.status === 201 || fn.status === 200, JSON.stringify(fn.body));
      const job = await call(source, "POST", "/v1/functions/jobs", {
        function_name: "greet",
        delay_secs: 3600,
      });
      assertEquals(job.status, 201, JSON.stringify(job.body));
      const cron = await call(source, "POST", "/v1/functions/cron", {
        name: "nightly",
        schedule: "@daily",
        function_name: "greet",
      });
      assert(cron.status === 201 || cron.status === 200, JSON.stringify(cron.body));
      const alert = await call(source, "POST", "/v1/functions/alerts", {
        name: "errors",
        metric: "errors",
        condition: "gt",
        threshold: 1,
        channel: "webhook",
        destination: "https://hooks.example.com/alerts",
      });
      assertEquals(alert.status, 201, JSON.stringify(alert.body));
      const template = await call(source, "POST", "/v1/notifications/templates", {
        name: "welcome",
        channel: "email",
        subject: "Welcome {{ name }}",
        body: "Hello {{ name }}.",
      });
      assertEquals(template.status, 201, JSON.stringify(template.body));
      const ingest = await call(source, "POST", "/v1/ai/rag/ingest", {
        namespace: "kb",
        document: { id: "moving", text: "PostgreSQL keeps the rows once the platform has moved." },
      });
      assertEquals(ingest.status, 200, JSON.stringify(ingest.body));
      const admin = { authorization: `Bearer ${await source.adminToken()}` };
      const created = await call(source, "POST", "/v1/admin/projects", { ref: "second" }, admin);
      assertEquals(created.status, 201, JSON.stringify(created.body));
      other = created.body.data;
      const seeded = await json(
        await source.fetch("http://second.localhost/v1/sql", {
          method: "POST",
          headers: { apikey: other.secret_key },
          json: {
            query: "create table items (name text primary key); insert into items values ('one'), ('two');",
          },
        }),
      );
      assertEquals(seeded.status, 200, JSON.stringify(seeded.body));
      // A table the server's control database lacks: the first export fails on it (taken away after).
      await source.platform.dbs.control.exec(
        "create table platform.export_blocker (id int); insert into platform.export_blocker values (1)",
      );
    });

    await t.step("refuses while the platform runs", async () => {
      const { code, out } = await runExport(sandbox.env, serverUrl(target));
      assertEquals(code, 1, out);
      assertMatch(out, /Export refused: the platform is running/);
    });

    await source.close({ keepSandbox: true });
    sourceOpen = false;

    await t.step("refuses a target that holds anything", async () => {
      const admin = postgres(SERVER, { max: 1, onnotice: () => {} });
      await admin.unsafe(`create database "${target}"`);
      await admin.end();
      const used = postgres(serverUrl(target), { max: 1, onnotice: () => {} });
      await used.unsafe("create table left_over (id int)");
      const { code, out } = await runExport(sandbox.env, serverUrl(target));
      assertEquals(code, 1, out);
      assertMatch(out, /Export refused: the target database is not empty/);
      await used.unsafe("drop table left_over");
      await used.end();
    });

    await t.step("refuses a PLATFORM_SECRET that did not write the data", async () => {
      const { code, out } = await runExport(
        { ...sandbox.env, PLATFORM_SECRET: `another-secret-${randomHex(16)}` },
        serverUrl(target),
      );
      assertEquals(code, 1, out);
      assertMatch(out, /Export refused: PLATFORM_SECRET differs/);
    });

    await t.step("a move that fails takes back what it made on the target", async () => {
      const { code, out } = await runExport(sandbox.env, serverUrl(target));
      assertEquals(code, 1, out);
      assertMatch(out, /Export failed: .*export_blocker/);
      const admin = postgres(SERVER, { max: 1, onnotice: () => {} });
      const left = await admin.unsafe(
        "select datname as name from pg_database where datname like $1 union all select rolname from pg_roles where rolname like $1",
        [`${target}\\_%`],
      );
      await admin.end();
      assertEquals([...left], []);
      const used = postgres(serverUrl(target), { max: 1, onnotice: () => {} });
      const schemas = await used.unsafe("select nspname from pg_namespace where nspname = 'platform'");
      await used.end();
      assertEquals([...schemas], []);
      const control = await openSource(controlDir(sandbox.env.DATA_DIR!));
      await control.exec("drop table platform.export_blocker");
      await control.close();
    });

    await t.step("copies every table and prints matching row counts", async () => {
      const { code, out } = await runExport(sandbox.env, serverUrl(target));
      assertEquals(code, 0, out);
      for (const table of ["control  platform.api_keys", "default  public.notes", "default  auth.users"]) {
        assertMatch(out, new RegExp(`${table}\\s+\\d+\\s+\\d+\\n`), table);
      }
      assertMatch(out, /default {2}public\.notes\s+3\s+3\n/);
      assertMatch(out, /default {2}crm\.accounts\s+2\s+2\n/);
      assertMatch(out, /default {2}platform\.ai_chunks\s+1\s+1\n/);
      assertMatch(out, /second {2}public\.items\s+2\s+2\n/);
      assert(!/MISMATCH/.test(out), out);
    });

    await t.step("a second export finds the target taken", async () => {
      const { code, out } = await runExport(sandbox.env, serverUrl(target));
      assertEquals(code, 1, out);
      assertMatch(out, /Export refused: the target database is not empty/);
    });

    // Started on the target with the same secret and nothing else telling it the keys or the admin: what it
    // serves comes from the copy.
    moved = await startPlatform({
      DATABASE_URL: serverUrl(target),
      DEFAULT_PUBLIC_KEY: "",
      DEFAULT_SECRET_KEY: "",
      ADMIN_EMAIL: "",
      ADMIN_PASSWORD: "",
    }, { sandbox });
    const p = moved;

    await t.step("the same keys, admin, users and sessions authenticate", async () => {
      const anon = await p.fetch("/rest/v1/notes?select=body&order=id", {
        headers: { apikey: sandbox.publicKey },
      });
      assertEquals(anon.status, 200);
      assertEquals(await anon.json(), [{ body: "hello world" }]);
      const earlier = await p.fetch("/rest/v1/notes?select=body,owner&order=id", {
        headers: { apikey: sandbox.publicKey, authorization: `Bearer ${userToken}` },
      });
      assertEquals(await earlier.json(), [{ body: "hello world", owner: null }, {
        body: "ada's own",
        owner: userId,
      }]);
      const signin = await call(p, "POST", "/v1/auth/token", {
        grant_type: "password",
        email: "ada@example.com",
        password: "correct-horse-battery",
      }, { apikey: sandbox.publicKey });
      assertEquals(signin.status, 200, JSON.stringify(signin.body));
      assertEquals(signin.body.data.user.id, userId);
      const refreshed = await call(p, "POST", "/v1/auth/token", {
        grant_type: "refresh_token",
        refresh_token: userRefresh,
      }, { apikey: sandbox.publicKey });
      assertEquals(refreshed.status, 200, JSON.stringify(refreshed.body));
      assertEquals(refreshed.body.data.user.id, userId);
      const admin = await p.fetch("/v1/admin/login", { method: "POST", json: ADMIN });
      assertEquals(admin.status, 200);
      const all = await p.fetch("/rest/v1/notes?select=body,tags,blob&order=id", { headers: sk });
      assertEquals(await all.json(), [
        { body: "hello world", tags: ["a", "b"], blob: "\\x00ff" },
        { body: "hidden", tags: [], blob: null },
        { body: "ada's own", tags: [], blob: null },
      ]);
    });

    await t.step(
      "sequences go on where they stood; functions, jobs, cron, alerts and templates are there",
      async () => {
        const insert = await p.fetch("/rest/v1/notes?select=id", {
          method: "POST",
          headers: { ...sk, prefer: "return=representation" },
          json: { body: "after the move", public: true },
        });
        assertEquals(insert.status, 201);
        assertEquals(await insert.json(), [{ id: 4 }]);
        const rpc = await p.fetch("/rest/v1/rpc/add_one", {
          method: "POST",
          headers: { apikey: sandbox.publicKey, "content-type": "application/json" },
          body: JSON.stringify({ x: 41 }),
        });
        assertEquals(await rpc.json(), 42);
        const invoke = await p.fetch("/v1/functions/greet/invoke", {
          method: "POST",
          headers: { apikey: sandbox.publicKey },
          json: {},
        });
        assertEquals(invoke.status, 200);
        assertEquals((await invoke.json()).data.body, "hi from greet");
        const jobs = await call(p, "GET", "/v1/functions/jobs");
        assertEquals(jobs.body.data.map((j: Json) => j.function_name), ["greet"]);
        const cron = await call(p, "GET", "/v1/functions/cron");
        assertEquals(cron.body.data.map((c: Json) => c.name), ["nightly"]);
        const alerts = await call(p, "GET", "/v1/functions/alerts");
        assertEquals(alerts.body.data.map((a: Json) => a.name), ["errors"]);
        const templates = await call(p, "GET", "/v1/notifications/templates");
        assertEquals(templates.body.data.map((x: Json) => x.name), ["welcome"]);
        const captured = await p.internalSql("select table_name from realtime.tables");
        assertEquals(captured, [{ table_name: "notes" }]);
        // The owner's policy on realtime.messages (private channels) came along, as the owner's own.
        const policies = await p.internalSql(
          `select policyname, cmd, roles::text[] as roles, qual from pg_catalog.pg_policies
            where schemaname = 'realtime' and tablename = 'messages'`,
        );
        assertEquals(policies.map((x) => [x.policyname, x.cmd, x.roles]), [["room_members", "SELECT", [
          "authenticated",
        ]]]);
        assert(String(policies[0]!.qual).includes("realtime.topic()"), String(policies[0]!.qual));
        const unchecked = await p.internalSql(
          "select convalidated from pg_catalog.pg_constraint where conname = 'named_after_acme'",
        );
        assertEquals(unchecked, [{ convalidated: false }]);
      },
    );

    await t.step("AI corpora and every project move", async () => {
      const found = await call(p, "POST", "/v1/ai/search", {
        query: "rows moved PostgreSQL",
        namespace: "kb",
      });
      assertEquals(found.status, 200, JSON.stringify(found.body));
      assertEquals(found.body.data.map((d: Json) => d.document_id), ["moving"]);
      const items = await p.fetch("http://second.localhost/rest/v1/items?select=name&order=name", {
        headers: { apikey: other.secret_key },
      });
      assertEquals(await items.json(), [{ name: "one" }, { name: "two" }]);
    });
  } finally {
    if (sourceOpen) await source.close({ keepSandbox: true });
    await moved?.close({ keepSandbox: true });
    await dropTarget(target);
    await sandbox.destroy();
  }
});
