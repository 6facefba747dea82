// Tenant SQL never holds a superuser's rights on PostgreSQL: every path that runs a project's own SQL (the data
// API, RPC, views, column defaults, triggers, casts run by realtime's capture, realtime's RLS check, NL-to-SQL,
// `POST /v1/sql`) lands on a login with no rights of its own once the SQL does `reset role`.
import { assert, assertEquals } from "./assert.ts";
import { startFakeOpenAI } from "./fake_openai.ts";
import { json, serverUrl, startPlatform, type TestPlatform } from "./harness.ts";
import { WsClient } from "./realtime_client.ts";

/**
 * What SQL can do once it drops the role it was given: who it is then, and whether it can create a role, run a
 * program on the database host, read a server file, load dblink (another database's data) or become the session
 * superuser. Every attempt is its own sub-transaction, so the report comes back whatever fails.
 */
const PROBE_BODY = `
declare
  r jsonb;
begin
  begin reset role; exception when others then null; end;
  r := jsonb_build_object('user', current_user::text,
    'super', (select rolsuper from pg_catalog.pg_roles where rolname = current_user));
  begin execute 'create role probe_escalated'; r := r || '{"create_role": true}';
  exception when others then r := r || '{"create_role": false}'; end;
  begin execute 'copy (select 1) to program ''true'''; r := r || '{"program": true}';
  exception when others then r := r || '{"program": false}'; end;
  begin perform pg_catalog.pg_read_file('postgresql.conf'); r := r || '{"read_file": true}';
  exception when others then r := r || '{"read_file": false}'; end;
  begin execute 'create extension if not exists dblink'; r := r || '{"dblink": true}';
  exception when others then r := r || '{"dblink": false}'; end;
  begin execute 'set session authorization postgres'; r := r || '{"session_authorization": true}';
  exception when others then r := r || '{"session_authorization": false}'; end;
  return r;
end`;

const SETUP = `
create function public.probe() returns jsonb language plpgsql as $$${PROBE_BODY}$$;
create function public.probe_is_harmless() returns boolean language sql as $$
  select not (r->>'super')::boolean and not (r->>'create_role')::boolean and not (r->>'program')::boolean
     and not (r->>'read_file')::boolean and not (r->>'dblink')::boolean
     and not (r->>'session_authorization')::boolean
    from (select public.probe() as r) p
$$;
create table public.things (id int primary key, report jsonb default public.probe());
create view public.things_report as select id, public.probe() as report from public.things;
create function public.things_trigger() returns trigger language plpgsql as $$
begin
  new.report := public.probe();
  return new;
end $$;
create table public.triggered (id int primary key, report jsonb);
create trigger probe_on_insert before insert on public.triggered for each row execute function public.things_trigger();
insert into public.things (id) values (1);
-- A type whose cast to json is the tenant's own: realtime's capture applies it to every captured row.
create type public.mood as enum ('calm');
create table public.cast_reports (report jsonb not null);
grant insert on public.cast_reports to public;
create function public.mood_json(m public.mood) returns json language plpgsql as $$${
  PROBE_BODY.replace("return r;", "insert into public.cast_reports values (r); return '\"calm\"'::json;")
}$$;
create cast (public.mood as json) with function public.mood_json(public.mood);
create table public.moods (id int primary key, mood public.mood not null);
select realtime.enable('public.moods');
-- Realtime's RLS check runs this policy as each subscriber: it lets a row through only if dropping the role
-- reached nothing.
create table public.guarded (id int primary key);
alter table public.guarded enable row level security;
create policy probe_policy on public.guarded for select using (public.probe_is_harmless());
select realtime.enable('public.guarded');
grant all on all tables in schema public to anon, authenticated, service_role;
`;

/** The probe's verdict: nothing gained. `who` must not be a superuser's name either. */
function assertHarmless(report: Record<string, unknown>, path: string): void {
  assertEquals(
    { ...report, user: undefined },
    {
      user: undefined,
      super: false,
      create_role: false,
      program: false,
      read_file: false,
      dblink: false,
      session_authorization: false,
    },
    `${path}: ${JSON.stringify(report)}`,
  );
  assert(report.user !== "postgres", `${path} ran as ${report.user}`);
}

async function sql(p: TestPlatform, query: string): Promise<Record<string, unknown>[]> {
  const res = await p.fetch("/v1/sql", { method: "POST", headers: { apikey: p.secretKey }, json: { query } });
  const body = await res.json();
  if (res.status !== 200) throw new Error(JSON.stringify(body));
  return body.data;
}

// PGlite has only a superuser session: there the instance is the boundary (security_pglite_test).
if (serverUrl) {
  Deno.test({
    name: "tenant SQL on PostgreSQL cannot become a superuser through any path",
    async fn(t) {
      const fake = startFakeOpenAI();
      const p = await startPlatform({ AI_BASE_URL: fake.baseUrl, AI_CHAT_MODEL: "fake-chat" });
      const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, p.handler);
      const clients: WsClient[] = [];
      try {
        await sql(p, SETUP);
        const anon = { apikey: p.publicKey };

        await t.step("RPC", async () => {
          const { status, body } = await json(
            await p.fetch("/rest/v1/rpc/probe", { method: "POST", headers: anon, json: {} }),
          );
          assertEquals(status, 200, JSON.stringify(body));
          assertHarmless(body, "rpc");
        });

        await t.step("a view's column, through both data API mounts", async () => {
          const rest = await json(await p.fetch("/rest/v1/things_report?select=report", { headers: anon }));
          assertEquals(rest.status, 200, JSON.stringify(rest.body));
          assertHarmless(rest.body[0].report, "rest view");
          const v1 = await json(await p.fetch("/v1/db/things_report?select=report", { headers: anon }));
          assertHarmless(v1.body.data[0].report, "v1 view");
        });

        await t.step("a column default and a trigger, on insert", async () => {
          const headers = { ...anon, prefer: "return=representation" };
          const byDefault = await json(
            await p.fetch("/rest/v1/things", { method: "POST", headers, json: { id: 2 } }),
          );
          assertEquals(byDefault.status, 201, JSON.stringify(byDefault.body));
          assertHarmless(byDefault.body[0].report, "default");
          const byTrigger = await json(
            await p.fetch("/rest/v1/triggered", { method: "POST", headers, json: { id: 1 } }),
          );
          assertEquals(byTrigger.status, 201, JSON.stringify(byTrigger.body));
          assertHarmless(byTrigger.body[0].report, "trigger");
        });

        await t.step("POST /v1/sql runs on the owner's own login", async () => {
          const [row] = await sql(p, "select public.probe() as report");
          assertHarmless(row!.report as Record<string, unknown>, "/v1/sql");
        });

        await t.step("NL-to-SQL's execution", async () => {
          // NL-to-SQL refuses to call functions itself; a view's column still runs the project's code.
          fake.replies.push("SELECT report FROM things_report");
          const { status, body } = await json(
            await p.fetch("/v1/ai/nl2sql", {
              method: "POST",
              headers: { apikey: p.secretKey },
              json: { question: "probe", execute: true },
            }),
          );
          assertEquals(status, 200, JSON.stringify(body));
          assertHarmless(body.data.rows[0].report, "nl2sql");
        });

        const connect = async () => {
          const c = await WsClient.connect(
            `ws://127.0.0.1:${server.addr.port}/v1/realtime/ws?apikey=${p.publicKey}`,
          );
          clients.push(c);
          return c;
        };

        await t.step("a tenant cast applied by realtime's capture trigger", async () => {
          const c = await connect();
          await c.subscribe({ channel: "moods", postgres_changes: [{ event: "INSERT", table: "moods" }] });
          const res = await p.fetch("/rest/v1/moods", {
            method: "POST",
            headers: anon,
            json: { id: 1, mood: "calm" },
          });
          assertEquals(res.status, 201, await res.text());
          const event = await c.next((m) => m.type === "event" && m.channel === "moods", 10_000);
          assertEquals(event.payload.record, { id: 1, mood: "calm" });
          const [row] = await sql(p, "select report from public.cast_reports");
          const report = row!.report as Record<string, unknown>;
          assertHarmless(report, "capture cast");
          // The capture trigger acts for realtime alone, not as a superuser.
          assertEquals(report.user, "platform_realtime");
        });

        await t.step("realtime's RLS check", async () => {
          const c = await connect();
          await c.subscribe({
            channel: "guarded",
            postgres_changes: [{ event: "INSERT", table: "guarded" }],
          });
          // Inserted by the owner: the policy lets the subscriber see it only if the probe gained nothing.
          await sql(p, "insert into public.guarded values (1)");
          const event = await c.next((m) => m.type === "event" && m.channel === "guarded", 10_000);
          assertEquals(event.payload.record, { id: 1 });
        });

        await t.step("nothing the probes tried was kept", async () => {
          const roles = await p.internalSql("select 1 from pg_roles where rolname = 'probe_escalated'");
          assertEquals(roles.length, 0);
          const ext = await p.internalSql("select 1 from pg_extension where extname = 'dblink'");
          assertEquals(ext.length, 0);
        });

        await t.step(
          "the tenant login has no rights of its own and cannot reach the other roles' logins",
          async () => {
            const [login] = await p.internalSql(
              `select r.rolsuper, r.rolinherit, r.rolcreaterole, r.rolcreatedb, r.rolbypassrls,
                  array(select g.rolname::text from pg_auth_members m join pg_roles g on g.oid = m.roleid
                         where m.member = r.oid order by 1) as member_of
             from pg_roles r where r.rolname = $1`,
              [
                (await (await p.fetch("/rest/v1/rpc/probe", { method: "POST", headers: anon, json: {} }))
                  .json()).user,
              ],
            );
            assertEquals(login, {
              rolsuper: false,
              rolinherit: false,
              rolcreaterole: false,
              rolcreatedb: false,
              rolbypassrls: false,
              member_of: ["anon", "authenticated", "service_role"],
            });
          },
        );
      } finally {
        for (const c of clients) await c.close();
        await server.shutdown();
        await p.close();
        await fake.close();
      }
    },
  });
}
