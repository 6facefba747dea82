// Request context for SQL (request.method/path/headers/cookies), response.headers / response.status set by SQL,
// Server-Timing, PostgREST's JWT claim errors, and the per-project data settings, as PostgREST (v12–v14) does.
import { SignJWT } from "jose";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { ownerSql } from "./data_fixture.ts";
import { startPlatform, type TestPlatform } from "./harness.ts";
import { err, runWireCase, type WireCase } from "./data_wire_cases.ts";

const SQL = `
create function whoami() returns json language sql stable as $$
  select json_build_object(
    'method', current_setting('request.method', true),
    'path', current_setting('request.path', true),
    'headers', current_setting('request.headers', true)::json,
    'cookies', current_setting('request.cookies', true)::json,
    'role', current_setting('request.jwt.claims', true)::json->>'role')
$$;
create function set_answer() returns int language plpgsql as $$ begin
  perform set_config('response.headers',
    '[{"X-Answer":"42"},{"Set-Cookie":"a=1"},{"Set-Cookie":"b=2"},{"Content-Range":"custom"}]', true);
  perform set_config('response.status', '202', true);
  return 1;
end $$;
create function no_content() returns int language plpgsql as $$ begin
  perform set_config('response.status', '204', true);
  return 1;
end $$;
create function headers_object() returns int language plpgsql as $$ begin
  perform set_config('response.headers', '{"X-A":"b"}', true);
  return 1;
end $$;
create function headers_number() returns int language plpgsql as $$ begin
  perform set_config('response.headers', '[{"X-A":1}]', true);
  return 1;
end $$;
create function unicode_header() returns int language plpgsql as $$ begin
  perform set_config('response.headers', '[{"X-Name":"café ☕"}]', true);
  return 1;
end $$;
create function status_text() returns int language plpgsql as $$ begin
  perform set_config('response.status', 'teapot', true);
  return 1;
end $$;
create function status_session() returns int language plpgsql as $$ begin
  perform set_config('response.status', '418', false);
  return 1;
end $$;
create table visits (
  id int primary key,
  method text default current_setting('request.method', true),
  path text default current_setting('request.path', true)
);
create table located (id int primary key);
create function locate() returns trigger language plpgsql as $$ begin
  perform set_config('response.headers', '[{"Location":"/located?id=eq.' || new.id || '"}]', true);
  return new;
end $$;
create trigger locate after insert on located for each row execute function locate();
create function check_request() returns void language plpgsql as $$ begin
  if current_setting('request.headers', true)::json->>'x-blocked' = 'yes' then
    raise sqlstate 'PT403' using message = 'Blocked';
  end if;
  perform set_config('response.headers', json_build_array(json_build_object('X-Pre',
    current_setting('request.method', true) || ' ' || current_setting('request.path', true)))::text, true);
end $$;
create schema api;
grant usage on schema api to anon, authenticated, service_role;
create table api.items (id int primary key, name text not null);
grant select on api.items to anon, authenticated, service_role;
insert into api.items values (1, 'one');
create table stamps (id int primary key, t timestamptz not null);
insert into stamps values (1, '2023-10-18 12:37:59.611+00');
create function stamp_zone() returns text language sql as $$ select current_setting('timezone') $$;
`;

/** The OpenAPI and hoisted settings' defaults, as the data settings show them. */
const OPENAPI_AND_HOISTED = {
  openapi_mode: "follow-privileges",
  openapi_security_active: false,
  hoisted_tx_settings: [
    "statement_timeout",
    "plan_filter.statement_cost_limit",
    "default_transaction_isolation",
  ],
};

const HEADERS_ERROR =
  "response.headers guc must be a JSON array composed of objects with a single key and a string value";

const CASES: WireCase[] = [
  {
    name: "response.headers and response.status from a function: status replaced, headers added or replaced",
    method: "POST",
    url: "rpc/set_answer",
    body: "{}",
    status: 202,
    json: 1,
    expect: { "x-answer": "42", "set-cookie": "a=1, b=2", "content-range": "custom" },
  },
  {
    name: "response.status 204 from a function: no body",
    method: "POST",
    url: "rpc/no_content",
    body: "{}",
    status: 204,
    expect: { "content-type": null },
  },
  {
    name: "response.headers from a trigger on insert (PostgREST's Location recipe)",
    method: "POST",
    url: "located",
    body: '{"id":7}',
    status: 201,
    expect: { location: "/located?id=eq.7" },
  },
  {
    name: "response.headers not an array → 500 PGRST111",
    method: "POST",
    url: "rpc/headers_object",
    body: "{}",
    status: 500,
    json: err("PGRST111", HEADERS_ERROR),
    expect: { "proxy-status": "PostgREST; error=PGRST111" },
  },
  {
    name: "response.headers with a value that is not a string → 500 PGRST111",
    url: "rpc/headers_number",
    status: 500,
    json: err("PGRST111", HEADERS_ERROR),
  },
  {
    name: "response.headers beyond ASCII: sent as its UTF-8 bytes, as PostgREST sends them",
    url: "rpc/unicode_header",
    status: 200,
    json: 1,
    expect: { "x-name": String.fromCharCode(...new TextEncoder().encode("café ☕")) },
  },
  {
    name: "response.status not a number → 500 PGRST112",
    url: "rpc/status_text",
    status: 500,
    json: err("PGRST112", "response.status guc must be a valid status code"),
  },
  {
    name: "Prefer: timezone sets the transaction's time zone, applied after handling",
    url: "stamps?select=t",
    headers: { prefer: "handling=strict, timezone=America/Los_Angeles" },
    status: 200,
    json: [{ t: "2023-10-18T05:37:59.611-07:00" }],
    expect: { "preference-applied": "handling=strict, timezone=America/Los_Angeles" },
  },
  {
    name: "Prefer: timezone as an offset is not a listed name: not applied (v14)",
    url: "stamps?select=t",
    headers: { prefer: "timezone=+05:30" },
    status: 200,
    json: [{ t: "2023-10-18T12:37:59.611+00:00" }],
    expect: { "preference-applied": null },
  },
  {
    name: "Prefer: timezone on a function call and on a write",
    method: "POST",
    url: "rpc/stamp_zone",
    body: "{}",
    headers: { prefer: "timezone=Asia/Tokyo" },
    status: 200,
    json: "Asia/Tokyo",
    expect: { "preference-applied": "timezone=Asia/Tokyo" },
  },
  {
    name: "Prefer: timezone with an insert returns the row in that zone",
    method: "POST",
    url: "stamps?select=t",
    body: '{"id":2,"t":"2023-10-18 12:37:59.611+00"}',
    headers: { prefer: "return=representation, timezone=America/New_York" },
    status: 201,
    json: [{ t: "2023-10-18T08:37:59.611-04:00" }],
    expect: { "preference-applied": "return=representation, timezone=America/New_York" },
  },
  {
    name: "Prefer: an unknown timezone, lenient: written in the default zone, not applied",
    method: "POST",
    url: "stamps?select=t",
    body: '{"id":3,"t":"2023-10-18 12:37:59.611+00"}',
    headers: { prefer: "return=representation, handling=lenient, timezone=Invalid/Timezone" },
    status: 201,
    json: [{ t: "2023-10-18T12:37:59.611+00:00" }],
    expect: { "preference-applied": "return=representation, handling=lenient" },
  },
  {
    name: "Prefer: an unknown timezone, strict: 400 PGRST122, nothing written",
    method: "POST",
    url: "stamps",
    body: '{"id":4,"t":"2023-10-18 12:37:59.611+00"}',
    headers: { prefer: "handling=strict, timezone=Invalid/Timezone" },
    status: 400,
    json: err(
      "PGRST122",
      "Invalid preferences given with handling=strict",
      "Invalid preferences: timezone=Invalid/Timezone",
    ),
  },
  {
    name: "the row refused above was not written; the time zone did not outlive its request",
    url: "stamps?select=id,t&order=id",
    status: 200,
    json: [
      { id: 1, t: "2023-10-18T12:37:59.611+00:00" },
      { id: 2, t: "2023-10-18T12:37:59.611+00:00" },
      { id: 3, t: "2023-10-18T12:37:59.611+00:00" },
    ],
  },
];

/** Calls `rpc/whoami` with `headers` and returns what the SQL saw. */
async function whoami(p: TestPlatform, path: string, init: RequestInit) {
  const res = await p.fetch(path, init);
  const text = await res.text();
  assertEquals(res.status, 200, text);
  const body = JSON.parse(text);
  return (body.data ?? body) as {
    method: string;
    path: string;
    headers: Record<string, string>;
    cookies: Record<string, string>;
    role: string;
  };
}

async function patchSettings(p: TestPlatform, body: unknown, key = p.secretKey, host = "http://127.0.0.1") {
  const res = await p.fetch(`${host}/v1/project/data-settings`, {
    method: "PATCH",
    headers: { apikey: key },
    json: body,
  });
  return { status: res.status, body: await res.json() };
}

Deno.test("data API request context, response settings, Server-Timing and data settings", async (t) => {
  const p = await startPlatform();
  try {
    await ownerSql(p, SQL);

    await t.step(
      "request.method, request.path, request.headers and request.cookies on a GET call",
      async () => {
        const seen = await whoami(p, "/rest/v1/rpc/whoami", {
          headers: { apikey: p.secretKey, "X-Custom": "yes", cookie: "theme=dark; lang=fr" },
        });
        assertEquals([seen.method, seen.path, seen.role], ["GET", "/rpc/whoami", "service_role"]);
        assertEquals(seen.headers["x-custom"], "yes");
        assertEquals(seen.headers.apikey, p.secretKey); // the project's own key, as PostgREST passes it
        assertEquals(seen.headers.cookie, undefined); // cookies go to request.cookies
        assertEquals(seen.cookies, { theme: "dark", lang: "fr" });
      },
    );

    await t.step("a POST call on the envelope mount: method POST, the path below the mount", async () => {
      const seen = await whoami(p, "/v1/db/rpc/whoami", {
        method: "POST",
        headers: { apikey: p.publicKey },
      });
      assertEquals([seen.method, seen.path, seen.role, seen.cookies], ["POST", "/rpc/whoami", "anon", {}]);
    });

    await t.step("the console session (cookie or bearer) never reaches the project's SQL", async () => {
      const session = await p.adminToken();
      const byCookie = await whoami(p, "/rest/v1/rpc/whoami", {
        headers: { apikey: p.secretKey, cookie: `console_session=${session}; theme=dark` },
      });
      assertEquals(byCookie.cookies, { theme: "dark" });
      assert(!JSON.stringify(byCookie).includes(session), "the console session leaked by cookie");
      const byBearer = await whoami(p, "/rest/v1/rpc/whoami", {
        headers: { apikey: p.secretKey, authorization: `Bearer ${session}` },
      });
      assertEquals(byBearer.headers.authorization, undefined);
      assert(!JSON.stringify(byBearer).includes(session), "the console session leaked by bearer");
    });

    await t.step("a write: column defaults read request.method and request.path", async () => {
      const res = await p.fetch("/rest/v1/visits", {
        method: "POST",
        headers: { apikey: p.secretKey, prefer: "return=representation" },
        json: { id: 1 },
      });
      assertEquals([res.status, await res.json()], [201, [{ id: 1, method: "POST", path: "/visits" }]]);
    });

    for (const c of CASES) await t.step(c.name, () => runWireCase(p, c));

    await t.step("a status a function set on the session does not reach the next request", async () => {
      const leaky = await p.fetch("/rest/v1/rpc/status_session", { headers: { apikey: p.secretKey } });
      assertEquals(leaky.status, 418); // its own answer takes it, as in PostgREST
      await leaky.body?.cancel();
      for (let i = 0; i < 4; i++) {
        const res = await p.fetch("/rest/v1/rpc/whoami", { headers: { apikey: p.secretKey } });
        assertEquals(res.status, 200);
        await res.body?.cancel();
      }
    });

    await t.step(
      "JWT errors: another audience, not valid yet → 401 PGRST303 as PostgREST words them",
      async () => {
        const project = await p.platform.projects.get("default");
        const key = await p.platform.projects.signingKey("default");
        const now = Math.floor(Date.now() / 1000);
        const sign = (aud: string, nbf?: number) => {
          const jwt = new SignJWT({ role: "authenticated", ref: "default", session_id: crypto.randomUUID() })
            .setProtectedHeader({ alg: "ES256", kid: project.jwt_kid })
            .setSubject(crypto.randomUUID()).setAudience(aud).setIssuedAt(now).setExpirationTime(now + 600);
          if (nbf !== undefined) jwt.setNotBefore(nbf);
          return jwt.sign(key);
        };
        const refused: [string, string][] = [
          [await sign("someone-else"), "JWT not in audience"],
          [await sign("authenticated", now + 3600), "JWT not yet valid"],
        ];
        for (const [token, message] of refused) {
          await runWireCase(p, {
            name: message,
            url: "visits",
            headers: { authorization: `Bearer ${token}` },
            anon: true,
            status: 401,
            json: err("PGRST303", message),
            expect: {
              "www-authenticate": `Bearer error="invalid_token", error_description="${message}"`,
              "proxy-status": "PostgREST; error=PGRST303",
            },
          });
        }
      },
    );

    await t.step(
      "Server-Timing: absent by default, PostgREST's five phases once the project enables it",
      async () => {
        const before = await p.fetch("/rest/v1/visits", { headers: { apikey: p.secretKey } });
        assertEquals([before.status, before.headers.get("server-timing")], [200, null]);
        await before.body?.cancel();
        assertEquals((await patchSettings(p, { server_timing: true })).status, 200);
        for (const path of ["/rest/v1/visits", "/rest/v1/rpc/whoami", "/v1/db/visits"]) {
          const res = await p.fetch(path, { headers: { apikey: p.secretKey } });
          assertEquals(res.status, 200);
          assertMatch(
            res.headers.get("server-timing") ?? "",
            /^jwt;dur=\d+\.\d, parse;dur=\d+\.\d, plan;dur=\d+\.\d, transaction;dur=\d+\.\d, response;dur=\d+\.\d$/,
          );
          await res.body?.cancel();
        }
        assertEquals((await patchSettings(p, { server_timing: null })).body.data.server_timing, false);
      },
    );

    await t.step(
      "data settings: read and changed by the service role, refused to anon, validated",
      async () => {
        const read = await p.fetch("/v1/project/data-settings", { headers: { apikey: p.secretKey } });
        assertEquals(await read.json(), {
          data: {
            schemas: ["public"],
            aggregates: true, // the test platforms' DATA_AGGREGATES
            plan: false,
            server_timing: false,
            pre_request: null,
            role_settings: {},
            app_settings: {},
            ...OPENAPI_AND_HOISTED,
          },
          meta: null,
        });
        const anon = await patchSettings(p, { plan: true }, p.publicKey);
        assertEquals([anon.status, anon.body.error.code], [403, "FORBIDDEN"]);
        const anonRead = await p.fetch("/v1/project/data-settings", { headers: { apikey: p.publicKey } });
        assertEquals(anonRead.status, 403);
        await anonRead.body?.cancel();
        for (
          const bad of [
            { schemas: [] },
            { schemas: ["pg_catalog"] },
            { schemas: ["auth"] },
            { schemas: ["public", "platform"] },
            { schemas: ["migrations"] },
            { schemas: ["api", "api"] },
            { schemas: ["a\u0001"] },
            { plan: "yes" },
            { unknown: true },
          ]
        ) {
          const res = await patchSettings(p, bad);
          assertEquals(res.status, 400, JSON.stringify(bad));
        }
        const changed = await patchSettings(p, { aggregates: false, plan: true });
        assertEquals(changed.body.data, {
          schemas: ["public"],
          aggregates: false,
          plan: true,
          server_timing: false,
          pre_request: null,
          role_settings: {},
          app_settings: {},
          ...OPENAPI_AND_HOISTED,
        });
        // null goes back to the platform's default (the test platforms' DATA_AGGREGATES is true).
        const reset = await patchSettings(p, { aggregates: null, plan: null });
        assertEquals(reset.body.data, {
          schemas: ["public"],
          aggregates: true,
          plan: false,
          server_timing: false,
          pre_request: null,
          role_settings: {},
          app_settings: {},
          ...OPENAPI_AND_HOISTED,
        });
      },
    );

    await t.step(
      "pre_request (PostgREST's db-pre-request): runs first in every request's transaction",
      async () => {
        const set = await patchSettings(p, { pre_request: "public.check_request" });
        assertEquals([set.status, set.body.data.pre_request], [200, "public.check_request"]);
        await runWireCase(p, {
          name: "a read: the function saw the request and set a header",
          url: "visits?select=id",
          status: 200,
          json: [{ id: 1 }],
          expect: { "x-pre": "GET /visits" },
        });
        await runWireCase(p, {
          name: "a call on the envelope mount",
          method: "POST",
          url: "rpc/whoami",
          body: "{}",
          status: 200,
          expect: { "x-pre": "POST /rpc/whoami" },
        });
        await runWireCase(p, {
          name: "a write checked before its transaction ends (one object asked for)",
          method: "POST",
          url: "visits",
          headers: { accept: "application/vnd.pgrst.object+json", prefer: "return=representation" },
          body: '{"id":2}',
          status: 201,
          json: { id: 2, method: "POST", path: "/visits" },
          expect: { "x-pre": "POST /visits" },
        });
        await runWireCase(p, {
          name: "the function raises PT403: the request is refused with its status",
          url: "visits",
          headers: { "x-blocked": "yes" },
          status: 403,
          json: err("PT403", "Blocked"),
        });
        for (const bad of ["a.b.c", ".x", "x.", "a\u0001"]) {
          assertEquals((await patchSettings(p, { pre_request: bad })).status, 400, bad);
        }
        const off = await patchSettings(p, { pre_request: null });
        assertEquals(off.body.data.pre_request, null);
        const plain = await p.fetch("/rest/v1/visits", { headers: { apikey: p.secretKey } });
        assertEquals([plain.status, plain.headers.get("x-pre")], [200, null]);
        await plain.body?.cancel();
      },
    );

    await t.step("db-schemas per project: one project exposes api, another keeps public", async () => {
      await p.platform.projects.create({ ref: "other" });
      const other = await p.platform.projects.keys("other");
      const exposed = await patchSettings(p, { schemas: ["api", "public"] });
      assertEquals([exposed.status, exposed.body.data.schemas], [200, ["api", "public"]]);
      await runWireCase(p, {
        name: "default project: api is the default schema now",
        url: "items?select=id,name",
        status: 200,
        json: [{ id: 1, name: "one" }],
        expect: { "content-profile": "api" },
      });
      await runWireCase(p, {
        name: "default project: public by Accept-Profile",
        url: "visits?select=id&id=eq.1",
        headers: { "accept-profile": "public" },
        status: 200,
        json: [{ id: 1 }],
        expect: { "content-profile": "public" },
      });
      const res = await p.fetch("http://other.localhost/rest/v1/items", {
        headers: { apikey: other.secret_key, "accept-profile": "api" },
      });
      assertEquals([res.status, await res.json()], [
        406,
        err("PGRST106", "Invalid schema: api", null, "Only the following schemas are exposed: public"),
      ]);
      const otherSettings = await p.fetch("http://other.localhost/v1/project/data-settings", {
        headers: { apikey: other.secret_key },
      });
      assertEquals((await otherSettings.json()).data.schemas, ["public"]);
      const back = await patchSettings(p, { schemas: null });
      assertEquals(back.body.data.schemas, ["public"]);
      await runWireCase(p, {
        name: "default project: back to public, api refused",
        url: "items",
        headers: { "accept-profile": "api" },
        status: 406,
        json: err("PGRST106", "Invalid schema: api", null, "Only the following schemas are exposed: public"),
      });
    });
  } finally {
    await p.close();
  }
});
