import { setPlan } from "../services/functions/quota.ts";
import { assert, assertEquals } from "./assert.ts";
import {
  awayFromMinuteEnd,
  type ChildPlatform,
  inOneMinute,
  type Json,
  json,
  makeSandbox,
  ownDataDir,
  serverUrl,
  spawnPlatform,
  startPlatform,
  type TestPlatform,
} from "./harness.ts";
import { WsClient } from "./realtime_client.ts";

// Two instances share nothing but PostgreSQL: each has its own DATA_DIR, so its own local KV (KV_PATH under
// DATA_DIR) and package cache. PGlite lives in one process: there, one instance runs the same steps, and what
// is asserted is what one instance guarantees.

const LIMIT = 6;
const QUOTA = 3;
const AUTH_LIMIT = 5;
const AI_USER_LIMIT = 3;

/** How many of `statuses` are `ok`, checked against a shared limit: at least `limit`, and at most one more per
 * other instance (each call is followed by its instance's flush); the last call on each instance is refused. */
function assertSharedLimit(
  statuses: number[],
  ok: number,
  refused: number,
  limit: number,
  instances: number,
) {
  const accepted = statuses.filter((s) => s === ok).length;
  assert(accepted >= limit && accepted <= limit + instances - 1, `${accepted} calls accepted: ${statuses}`);
  assertEquals(statuses.slice(0, limit), Array(limit).fill(ok), `${statuses}`);
  assertEquals(statuses.slice(-instances), Array(instances).fill(refused), `${statuses}`);
}

Deno.test("instances sharing only PostgreSQL share rate limits, quotas, AI tickets, logs and records", async (t) => {
  const a = await startPlatform({
    INVOKE_RATE_PER_MIN: String(LIMIT),
    FUNCTIONS_LOG_LINES: "10",
    AUTH_RATE_PER_MIN: String(AUTH_LIMIT),
    AI_USER_RATE_PER_MIN: String(AI_USER_LIMIT),
  });
  const bSandbox = serverUrl ? await ownDataDir(a.sandbox) : null;
  const b: TestPlatform = bSandbox ? await startPlatform({}, { sandbox: bSandbox }) : a;
  const cSandbox = serverUrl ? await ownDataDir(a.sandbox) : null;
  const c: TestPlatform = cSandbox ? await startPlatform({}, { sandbox: cSandbox }) : a;
  const instances = serverUrl ? [a, b] : [a];
  /** The per-client rate limit is counted across three. */
  const three = serverUrl ? [a, b, c] : [a];
  /** Calls the rate limit accepted (the later steps find each counted once). */
  let limitedCalls = 0;
  const call = (p: TestPlatform, method: string, path: string, body?: unknown) =>
    p.fetch(path, { method, headers: { apikey: p.secretKey }, json: body });
  const invoke = async (p: TestPlatform, name: string) => {
    const res = await call(p, "POST", `/v1/functions/${name}/invoke`, {});
    const out = await json(res);
    return out;
  };
  try {
    if (serverUrl) {
      const dirs = new Set(three.map((p) => p.config.DATA_DIR));
      assertEquals(dirs.size, 3, "each instance has its own DATA_DIR and KV");
    }
    for (const name of ["limited", "quota", "logged"]) {
      const deployed = await call(a, "POST", "/v1/functions", {
        name,
        runtime: "deno",
        code:
          `export default () => { console.log("called ${name}"); console.log("twice"); return new Response("ok"); }`,
      });
      assertEquals(deployed.status, 201);
      await deployed.body?.cancel();
    }

    await t.step("the per-client rate limit counts calls made on every instance", async () => {
      await awayFromMinuteEnd();
      const statuses: number[] = [];
      for (let i = 0; i < LIMIT + 2 * three.length; i++) {
        const p = three[i % three.length]!;
        const res = await invoke(p, "limited");
        statuses.push(res.status);
        if (res.status === 429) assertEquals(res.body.error.code, "rate_limit_exceeded");
        // Each call is followed by its instance's flush (every 250 ms in service): the precision stated in
        // the docs is then exactly one call per other instance.
        await p.platform.functions.rateLimit.flush();
      }
      assertSharedLimit(statuses, 200, 429, LIMIT, three.length);
      limitedCalls = statuses.filter((s) => s === 200).length;
    });

    await t.step("the monthly quota is one count for every instance", async () => {
      for (const p of three) await p.platform.functions.quota.flush();
      const [row] = await a.platform.dbs.control.query<{ count: string | number }>(
        "select count from platform.invocation_usage where project_ref = 'default' and month = $1",
        [new Date().toISOString().slice(0, 7)],
      );
      const used = Number(row?.count ?? 0);
      assertEquals(used, limitedCalls, "every accepted call is counted once");
      await setPlan(a.platform.dbs.control, "default", used + QUOTA);
      for (const p of three) p.platform.functions.quota.forget();
      const statuses: number[] = [];
      // Within the rate limit: the quota, one more call per other instance, one refusal per instance.
      for (let i = 0; i < QUOTA + 2 * instances.length - 1; i++) {
        const p = instances[i % instances.length]!;
        const res = await invoke(p, "quota");
        statuses.push(res.status);
        if (res.status === 403) assertEquals(res.body.error.code, "QUOTA_EXCEEDED");
        await p.platform.functions.quota.flush();
      }
      await setPlan(a.platform.dbs.control, "default", null); // back to the default for the next steps
      for (const p of instances) p.platform.functions.quota.forget();
      const accepted = statuses.filter((s) => s === 200).length;
      assert(
        accepted >= QUOTA && accepted <= QUOTA + instances.length - 1,
        `${accepted} calls accepted: ${statuses}`,
      );
      assertEquals(statuses.slice(-instances.length), Array(instances.length).fill(403), `${statuses}`);
    });

    await t.step("logs written through one instance are read through the other", async () => {
      // Two lines a call: 12 lines, of which the newest 10 are kept.
      for (let i = 0; i < LIMIT; i++) assertEquals((await invoke(a, "logged")).status, 200);
      const read = async (p: TestPlatform) =>
        (await json(await call(p, "GET", "/v1/functions/logged/logs"))).body;
      // B reads the database: A's lines are there once A has flushed (every second in service).
      await a.platform.functions.logs.flushAll();
      const lines = await read(b);
      assertEquals(lines.data.length, 10, "the newest FUNCTIONS_LOG_LINES lines are kept");
      assertEquals(lines.data[0].message, "twice");
      assertEquals(lines.data[1].message, "called logged");
      assert(lines.data.every((l: Json) => l.level === "info"));
      assertEquals(await read(a), lines);
    });

    await t.step("invocation records written through either instance are read through both", async () => {
      for (const p of three) await p.platform.functions.recorder.flushAll();
      const expected = limitedCalls;
      for (const p of instances) {
        const stats = await json(await call(p, "GET", "/v1/functions/limited/stats?window=1h"));
        assertEquals(stats.status, 200);
        assertEquals(stats.body.data.count, expected);
      }
    });

    await t.step(
      "an AI ticket minted through one instance is spent and revoked on every instance",
      async () => {
        const minted = await json(await call(a, "POST", "/v1/ai/default/session", { budget: 1000 }));
        assertEquals(minted.status, 200);
        const ticket = minted.body.data.ticket;
        const embed = async (p: TestPlatform) =>
          await json(
            await p.fetch("/v1/ai/session/embed", {
              method: "POST",
              headers: { authorization: `Bearer ${ticket}` },
              json: { input: "hello" },
            }),
          );
        const left: number[] = [];
        for (const p of [b, a, b]) {
          const res = await embed(p);
          assertEquals(res.status, 200);
          left.push(res.body.data.budget_remaining);
        }
        // One budget, debited by whichever instance takes the call: it only goes down.
        assert(left[0]! < 1000 && left[1]! < left[0]! && left[2]! < left[1]!, `${left}`);
        const revoked = await json(
          await b.fetch("/v1/ai/session", {
            method: "DELETE",
            headers: { authorization: `Bearer ${ticket}` },
          }),
        );
        assertEquals(revoked.status, 200);
        for (const p of instances) {
          const res = await embed(p);
          assertEquals([res.status, res.body.error.code], [401, "INVALID_TOKEN"]);
        }
      },
    );

    await t.step("the AI per-user rate counts a user's calls made on every instance", async () => {
      const signup = await json(
        await a.fetch("/v1/auth/signup", {
          method: "POST",
          headers: { apikey: a.publicKey },
          json: { email: "limited@example.com", password: "password-1234" },
        }),
      );
      assertEquals(signup.status, 200);
      const headers = {
        apikey: a.publicKey,
        authorization: `Bearer ${signup.body.data.session.access_token}`,
      };
      const statuses = await inOneMinute(async () => {
        const statuses: number[] = [];
        for (let i = 0; i < AI_USER_LIMIT + 2 * instances.length - 1; i++) {
          const p = instances[i % instances.length]!;
          const res = await json(
            await p.fetch("/v1/ai/embeddings", { method: "POST", headers, json: { input: "hi" } }),
          );
          statuses.push(res.status);
          if (res.status === 429) assertEquals(res.body.error.code, "rate_limit_exceeded");
          await p.platform.ai.userLimit.flush();
        }
        return statuses;
      });
      assertSharedLimit(statuses, 200, 429, AI_USER_LIMIT, instances.length);
    });

    await t.step("the password attempt limit counts attempts made on every instance", async () => {
      const { statuses, left } = await inOneMinute(async () => {
        // In-process calls have one client address: the sign-up above counts too when it fell in this minute.
        for (const p of instances) await p.platform.authLimit.flush();
        const [row] = await a.platform.dbs.control.query<{ count: string | number }>(
          `select count from platform.invoke_rate_windows
           where key = 'password:unknown' and window_start = date_trunc('minute', now())`,
        );
        const left = AUTH_LIMIT - Number(row?.count ?? 0);
        const statuses: number[] = [];
        for (let i = 0; i < left + 2 * instances.length - 1; i++) {
          const p = instances[i % instances.length]!;
          const res = await json(
            await p.fetch("/v1/admin/login", {
              method: "POST",
              json: { email: "admin@example.com", password: "not-the-password" },
            }),
          );
          statuses.push(res.status);
          if (res.status === 429) assertEquals(res.body.error.code, "rate_limit_exceeded");
          await p.platform.authLimit.flush();
        }
        return { statuses, left };
      });
      assert(left > 0, `${left}`);
      assertSharedLimit(statuses, 401, 429, left, instances.length);
    });
  } finally {
    if (c !== a) await c.close();
    if (b !== a) await b.close();
    await a.close();
  }
});

async function sql(child: ChildPlatform, secretKey: string, query: string): Promise<void> {
  const res = await fetch(`${child.url}/v1/sql`, {
    method: "POST",
    headers: { apikey: secretKey, "content-type": "application/json" },
    body: JSON.stringify({ query }),
  });
  if (res.status !== 200) throw new Error(`SQL failed: ${await res.text()}`);
  await res.body?.cancel();
}

Deno.test("realtime delivers each change, broadcast and presence once on every instance sharing only PostgreSQL", async (t) => {
  const sandbox = await makeSandbox();
  const second = serverUrl ? await ownDataDir(sandbox) : null;
  const third = serverUrl ? await ownDataDir(sandbox) : null;
  const one = await spawnPlatform(sandbox.env);
  let two: ChildPlatform | undefined;
  let three: ChildPlatform | undefined;
  const clients: WsClient[] = [];
  try {
    two = second ? await spawnPlatform(second.env) : one;
    three = third ? await spawnPlatform(third.env) : one;
    const connect = async (child: ChildPlatform, key: string) => {
      const c = await WsClient.connect(
        `${child.url.replace("http", "ws")}/v1/realtime/ws?apikey=${sandbox.publicKey}`,
      );
      clients.push(c);
      await c.subscribe({
        channel: "room",
        postgres_changes: [{ table: "items" }],
        presence: { key },
        broadcast: { self: false },
      });
      return c;
    };
    await sql(
      one,
      sandbox.secretKey,
      "create table public.items (id int primary key); select realtime.enable('public.items');",
    );
    const x = await connect(one, "x");
    const y = await connect(two, "y");
    const changes = (c: WsClient, id: number) =>
      c.messages.filter((m) => m.event === "postgres_changes" && m.payload.record.id === id).length;

    await t.step(
      "a change made through any instance, one without subscribers too, reaches each subscriber once",
      async () => {
        await sql(one, sandbox.secretKey, "insert into public.items values (1)");
        await sql(two!, sandbox.secretKey, "insert into public.items values (2)");
        await sql(three!, sandbox.secretKey, "insert into public.items values (3)");
        // Changes arrive in commit order: once the last is there, a copy of the others would have come.
        for (const c of [x, y]) {
          await c.next((m) => m.event === "postgres_changes" && m.payload.record.id === 3, 15_000);
          assertEquals([changes(c, 1), changes(c, 2), changes(c, 3)], [1, 1, 1]);
        }
      },
    );

    await t.step("a broadcast through one instance reaches the other once", async () => {
      const broadcast = (event: string) => x.send({ type: "broadcast", channel: "room", event, payload: {} });
      const arrived = (event: string) =>
        y.next((m) => m.event === "broadcast" && m.payload.event === event, 15_000);
      broadcast("first");
      broadcast("second");
      // Two broadcasts in a row may cross between instances in either order: both arrive.
      await arrived("first");
      await arrived("second");
      // A later one, sent once both were there: a copy of the first two would have come before it.
      broadcast("marker");
      await arrived("marker");
      const seen = y.messages.filter((m) => m.event === "broadcast").map((m) => m.payload.event);
      assertEquals(seen.toSorted(), ["first", "marker", "second"]);
      assertEquals(x.messages.filter((m) => m.event === "broadcast").length, 0, "self: false");
      // And the other way.
      y.send({ type: "broadcast", channel: "room", event: "back", payload: {} });
      await x.next((m) => m.event === "broadcast" && m.payload.event === "back", 15_000);
      y.send({ type: "broadcast", channel: "room", event: "back-marker", payload: {} });
      await x.next((m) => m.event === "broadcast" && m.payload.event === "back-marker", 15_000);
      assertEquals(x.messages.filter((m) => m.event === "broadcast").length, 2, "each once");
    });

    await t.step("presence of a member on one instance shows once on the other", async () => {
      x.send({ type: "presence_update", channel: "room", state: { at: "one" } });
      const state = await y.next((m) => m.type === "presence_state" && m.state.x?.[0]?.at === "one", 15_000);
      assertEquals(state.state.x, [{ at: "one" }]);
      y.send({ type: "presence_update", channel: "room", state: { at: "two" } });
      const both = await x.next((m) => m.type === "presence_state" && m.state.y?.[0]?.at === "two", 15_000);
      assertEquals(both.state.y, [{ at: "two" }]);
      assertEquals(both.state.x, [{ at: "one" }]);
    });
  } finally {
    for (const c of clients) await c.close().catch(() => {});
    if (three && three !== one) await three.stop();
    if (two && two !== one) await two.stop();
    await one.stop();
    await third?.destroy();
    await second?.destroy();
    await sandbox.destroy();
  }
});
