import { decodeJwt } from "jose";
import { assertEquals } from "./assert.ts";
import { type Json, json, startPlatform, type TestPlatform } from "./harness.ts";
import { WsClient } from "./realtime_client.ts";

// How long a revoked session may keep working; the platform's bound is a few seconds (REVOCATION_CHECK_MS).
const DEADLINE_MS = 15_000;

const SETUP = `
create table notes (id serial primary key, owner uuid not null default auth.uid(), body text);
alter table notes enable row level security;
create policy notes_own on notes for all to authenticated using (owner = auth.uid()) with check (owner = auth.uid());
grant select, insert on notes to authenticated;
grant usage on sequence notes_id_seq to authenticated;
select realtime.enable('public.notes');
`;

const WHOAMI =
  `export default { fetch: (req) => Response.json({ auth: req.headers.get("authorization") !== null }) }`;

interface Session {
  access_token: string;
  refresh_token: string;
}

async function post(p: TestPlatform, path: string, body: unknown, headers: Record<string, string> = {}) {
  return await json(
    await p.fetch(path, { method: "POST", headers: { apikey: p.publicKey, ...headers }, json: body }),
  );
}

async function signIn(p: TestPlatform, email: string): Promise<Session> {
  const res = await post(p, "/v1/auth/token", { grant_type: "password", email, password: "plum-orchard-42" });
  assertEquals(res.status, 200, JSON.stringify(res.body));
  return res.body.data.session;
}

/** The status and error code of every route a user token opens: data API (both dialects, read and write), invoke. */
async function routeAnswers(p: TestPlatform, token: string): Promise<Json[]> {
  const headers = { apikey: p.publicKey, authorization: `Bearer ${token}` };
  const calls = [
    p.fetch("/v1/db/notes", { headers }),
    p.fetch("/rest/v1/notes", { method: "POST", headers, json: { body: "hi" } }),
    p.fetch("/rest/v1/notes", { headers }),
    p.fetch("/v1/functions/whoami/invoke", { method: "POST", headers, json: {} }),
  ];
  return await Promise.all(calls.map(async (call) => {
    const res = await call;
    const text = await res.text();
    // /rest/v1 answers in PostgREST's format ({code, message}), the others in the envelope.
    const body = res.status === 401 ? JSON.parse(text) : null;
    return [res.status, body ? body.error?.code ?? body.code : null];
  }));
}

// /rest/v1 names a refused token as PostgREST does (PGRST303: the JWT is no longer valid).
const REFUSED = [[401, "INVALID_TOKEN"], [401, "PGRST303"], [401, "PGRST303"], [401, "INVALID_TOKEN"]];

/** Polls until every route refuses the token, or the deadline passes; returns the last answers. */
async function refusedEverywhere(p: TestPlatform, token: string): Promise<Json[]> {
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    const answers = await routeAnswers(p, token);
    if (JSON.stringify(answers) === JSON.stringify(REFUSED) || Date.now() > deadline) return answers;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The INVALID_TOKEN error the server sends before it closes the socket, and the close code. */
async function endedWith(ws: WsClient): Promise<[string, number | undefined]> {
  const error = await ws.next((m) => m.type === "error", DEADLINE_MS);
  const deadline = Date.now() + DEADLINE_MS;
  while (!ws.closeEvent && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  return [error.code, ws.closeEvent?.code];
}

Deno.test("a revoked session's access token stops working on every route and ends its realtime connection", async (t) => {
  // REALTIME_TOKEN_CHECK_MS is the expiry sweep's period: kept long, so that only revocation can end a socket.
  const p = await startPlatform({ REALTIME_TOKEN_CHECK_MS: "300000" });
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, p.handler);
  const sockets: WsClient[] = [];
  const connect = async (token: string) => {
    const query = new URLSearchParams({ apikey: p.publicKey, access_token: token });
    const ws = await WsClient.connect(`ws://127.0.0.1:${server.addr.port}/v1/realtime/ws?${query}`);
    sockets.push(ws);
    await ws.subscribe({ channel: "feed", postgres_changes: [{ event: "INSERT", table: "notes" }] });
    return ws;
  };
  try {
    assertEquals((await post(p, "/v1/sql", { query: SETUP }, { apikey: p.secretKey })).status, 200);
    const deployed = await post(p, "/v1/functions", { name: "whoami", runtime: "deno", code: WHOAMI }, {
      apikey: p.secretKey,
    });
    assertEquals(deployed.status, 201, JSON.stringify(deployed.body));
    for (const email of ["ada@example.com", "bob@example.com", "cy@example.com", "dee@example.com"]) {
      assertEquals((await post(p, "/v1/auth/signup", { email, password: "plum-orchard-42" })).status, 200);
    }

    await t.step("logout (scope=global) ends every session of the user, on every route", async () => {
      const first = await signIn(p, "ada@example.com");
      const second = await signIn(p, "ada@example.com");
      assertEquals(await routeAnswers(p, first.access_token), [[200, null], [201, null], [200, null], [
        200,
        null,
      ]]);
      const ws = await connect(second.access_token);
      const out = await post(p, "/v1/auth/logout?scope=global", null, {
        authorization: `Bearer ${first.access_token}`,
      });
      assertEquals(out.status, 200);
      assertEquals(await refusedEverywhere(p, first.access_token), REFUSED);
      assertEquals(await refusedEverywhere(p, second.access_token), REFUSED);
      assertEquals(await endedWith(ws), ["INVALID_TOKEN", 4001]);
      // A revoked token cannot open a new connection either.
      const query = new URLSearchParams({ apikey: p.publicKey, access_token: second.access_token });
      const refused = await json(
        await p.fetch(`/v1/realtime/ws?${query}`, { headers: { upgrade: "websocket" } }),
      );
      assertEquals([refused.status, refused.body.error.code], [401, "INVALID_TOKEN"]);
    });

    await t.step("logout (scope=local) ends that session only", async () => {
      const ended = await signIn(p, "dee@example.com");
      const kept = await signIn(p, "dee@example.com");
      const ws = await connect(ended.access_token);
      const out = await post(p, "/v1/auth/logout", null, { authorization: `Bearer ${ended.access_token}` });
      assertEquals(out.status, 200);
      assertEquals(await refusedEverywhere(p, ended.access_token), REFUSED);
      assertEquals(await endedWith(ws), ["INVALID_TOKEN", 4001]);
      assertEquals(await routeAnswers(p, kept.access_token), [[200, null], [201, null], [200, null], [
        200,
        null,
      ]]);
    });

    await t.step(
      "refresh token reuse revokes the session: its newest access token stops working",
      async () => {
        const session = await signIn(p, "bob@example.com");
        const rotated = await post(p, "/v1/auth/token", {
          grant_type: "refresh_token",
          refresh_token: session.refresh_token,
        });
        assertEquals(rotated.status, 200);
        const latest: Session = rotated.body.data.session;
        const ws = await connect(latest.access_token);
        assertEquals(await routeAnswers(p, latest.access_token), [[200, null], [201, null], [200, null], [
          200,
          null,
        ]]);
        const reused = await post(p, "/v1/auth/token", {
          grant_type: "refresh_token",
          refresh_token: session.refresh_token,
        });
        assertEquals([reused.status, reused.body.error.code], [401, "INVALID_TOKEN"]);
        assertEquals(await refusedEverywhere(p, latest.access_token), REFUSED);
        assertEquals(await refusedEverywhere(p, session.access_token), REFUSED);
        assertEquals(await endedWith(ws), ["INVALID_TOKEN", 4001]);
      },
    );

    await t.step(
      "a session revoked by another instance (straight in the database) ends within the check period",
      async () => {
        const session = await signIn(p, "cy@example.com");
        const other = await signIn(p, "cy@example.com");
        const ws = await connect(session.access_token);
        assertEquals(await routeAnswers(p, session.access_token), [[200, null], [201, null], [200, null], [
          200,
          null,
        ]]);
        const { session_id } = decodeJwt(session.access_token);
        await p.internalSql("update auth.sessions set revoked_at = now() where id = $1", [session_id]);
        assertEquals(await refusedEverywhere(p, session.access_token), REFUSED);
        assertEquals(await endedWith(ws), ["INVALID_TOKEN", 4001]);
        // The user's other session is untouched.
        assertEquals(await routeAnswers(p, other.access_token), [[200, null], [201, null], [200, null], [
          200,
          null,
        ]]);
      },
    );
  } finally {
    for (const ws of sockets) ws.socket.close();
    await server.shutdown();
    await p.close();
  }
});
