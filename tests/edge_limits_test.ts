import { serve } from "../lib/serve.ts";
import { assert, assertEquals } from "./assert.ts";
import { json, makeSandbox, spawnPlatform, startPlatform } from "./harness.ts";
import { deploy } from "./jobs_fixtures.ts";

/** A JSON array nested `depth` levels deep around `inner`. */
const nested = (depth: number, inner = "1") => "[".repeat(depth) + inner + "]".repeat(depth);

/** The routes that take JSON, each with a body that carries `value` where the route stores or forwards it. */
const ROUTES: { name: string; path: string; body: (value: string) => string; key: "public" | "secret" }[] = [
  { name: "data insert", path: "/v1/db/docs", body: (v) => `{"doc":${v}}`, key: "public" },
  { name: "PostgREST insert", path: "/rest/v1/docs", body: (v) => `{"doc":${v}}`, key: "public" },
  {
    name: "SQL params",
    path: "/v1/sql",
    body: (v) => `{"query":"select $1::jsonb is not null as ok","params":[{"x":${v}}]}`,
    key: "secret",
  },
  {
    name: "sign-up data",
    path: "/v1/auth/signup",
    body: (v) => `{"email":"deep${v.length}@example.com","password":"correct-horse-9","data":{"x":${v}}}`,
    key: "public",
  },
  {
    name: "job payload",
    path: "/v1/functions/jobs",
    body: (v) => `{"function_name":"echo","payload":${v},"delay_secs":3600}`,
    key: "secret",
  },
  { name: "invoke body", path: "/v1/functions/echo/invoke", body: (v) => `{"body":${v}}`, key: "public" },
  {
    name: "notification send",
    path: "/v1/notifications/send",
    body: (v) =>
      `{"channel":"webhook","recipient":"https://hooks.example.com/in","event":"deep","payload":{"x":${v}}}`,
    key: "secret",
  },
];

Deno.test("JSON nested deeper than 512 levels is a 400 on every route, and changes nothing", async (t) => {
  const p = await startPlatform();
  try {
    const sql = async (query: string) =>
      await json(
        await p.fetch("/v1/sql", { method: "POST", headers: { apikey: p.secretKey }, json: { query } }),
      );
    assertEquals(
      (await sql(`create table docs (id serial primary key, doc jsonb);
        alter table docs enable row level security;
        create policy anyone on docs for all to anon using (true) with check (true);
        grant select, insert on docs to anon; grant usage on sequence docs_id_seq to anon`)).status,
      200,
    );
    await deploy(p, p.secretKey, "echo", "export default { fetch: () => new Response('ok') };");
    const post = (path: string, body: string, key: string) =>
      p.fetch(path, { method: "POST", headers: { apikey: key, "content-type": "application/json" }, body });
    const keyOf = (k: "public" | "secret") => k === "public" ? p.publicKey : p.secretKey;

    for (const depth of [100_000, 600]) {
      for (const route of ROUTES) {
        await t.step(`${route.name}: depth ${depth} is 400`, async () => {
          const res = await post(route.path, route.body(nested(depth)), keyOf(route.key));
          const body = await res.json();
          assertEquals(res.status, 400, JSON.stringify(body).slice(0, 300));
          if (route.path.startsWith("/rest/v1/")) {
            // PostgREST's own error format on its mount.
            assertEquals(body.code, "PGRST102");
            assert(/512 levels/.test(body.details), body.details);
          } else {
            assertEquals(body.error.code, "VALIDATION_ERROR");
            assert(/512 levels/.test(body.error.message), body.error.message);
            assert(body.error.request_id);
          }
        });
      }
    }

    await t.step("a query string nested too deeply is 400 too", async () => {
      const deep = encodeURIComponent(nested(600));
      const rest = await p.fetch(`/rest/v1/docs?doc=cs.${deep}`, { headers: { apikey: p.publicKey } });
      assertEquals(rest.status, 400);
      assertEquals((await rest.json()).code, "PGRST100");
      const env = await p.fetch(`/v1/db/docs?doc=cs.${nested(600)}`, { headers: { apikey: p.publicKey } });
      assertEquals(env.status, 400);
      assertEquals((await env.json()).error.code, "VALIDATION_ERROR");
    });

    await t.step("nothing was stored by the refused requests", async () => {
      const rows = await sql("select count(*)::int as n from docs");
      assertEquals(rows.body.data, [{ n: 0 }]);
      const jobs = await json(await p.fetch("/v1/functions/jobs", { headers: { apikey: p.secretKey } }));
      assertEquals(jobs.body.data, []);
    });

    await t.step("depth 500 still works where the value is valid", async () => {
      for (const route of ROUTES) {
        const res = await post(route.path, route.body(nested(500)), keyOf(route.key));
        const text = await res.text();
        assert(res.status >= 200 && res.status < 300, `${route.name}: ${res.status} ${text.slice(0, 300)}`);
      }
      const filtered = await json(
        await p.fetch(`/v1/db/docs?select=id&doc=cs.${encodeURIComponent(nested(500))}`, {
          headers: { apikey: p.publicKey },
        }),
      );
      assertEquals(filtered.status, 200);
      assertEquals(filtered.body.data.length, 2);
    });

    await t.step(
      "a value nested 100,000 deep inside SQL text is a 400, and the project keeps answering",
      async () => {
        // The edge cannot see it (it is a string): the database refuses it (54001), and on PGlite the engine that
        // overflowed its stack is replaced rather than left to spin.
        const res = await sql(`select '${nested(100_000)}'::jsonb is not null as ok`);
        assertEquals(res.status, 400);
        assertEquals(res.body.error.code, "54001");
      },
    );

    await t.step("the project still answers reads", async () => {
      const rows = await json(await p.fetch("/v1/db/docs?select=id", { headers: { apikey: p.publicKey } }));
      assertEquals(rows.status, 200);
      assertEquals(rows.body.data.length, 2);
    });
  } finally {
    await p.close();
  }
});

Deno.test("select= with 2,000 columns is a 400 on both mounts", async () => {
  const p = await startPlatform();
  try {
    const columns = Array.from({ length: 2000 }, (_, i) => `id${i}:id`).join(",");
    await p.fetch("/v1/sql", {
      method: "POST",
      headers: { apikey: p.secretKey },
      json: { query: "create table wide (id int primary key); grant select on wide to anon" },
    });
    const rest = await p.fetch(`/rest/v1/wide?select=${columns}`, { headers: { apikey: p.publicKey } });
    const restBody = await rest.json();
    assertEquals(rest.status, 400);
    assertEquals(restBody.code, "PGRST100");
    assert(/more than 1000 columns/.test(restBody.details), restBody.details);
    const env = await json(
      await p.fetch(`/v1/db/wide?select=${columns}`, { headers: { apikey: p.publicKey } }),
    );
    assertEquals(env.status, 400);
    assertEquals(env.body.error.code, "PGRST100");
  } finally {
    await p.close();
  }
});

/**
 * Sends `head` at once, then dribbles `piece` every 100 ms, and returns the status line of the answer
 * that comes while the client is still sending.
 */
async function dribble(port: number, head: string, piece = " "): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const encoder = new TextEncoder();
  await conn.write(encoder.encode(head));
  let answered = "";
  const reading = (async () => {
    const buf = new Uint8Array(4096);
    while (!answered.includes("\r\n")) {
      const n = await conn.read(buf).catch(() => null);
      if (n === null) break;
      answered += new TextDecoder().decode(buf.subarray(0, n));
    }
  })();
  // The bound only stops a broken test from hanging: the answer must come long before.
  for (let i = 0; i < 600 && !answered.includes("\r\n"); i++) {
    await new Promise((r) => setTimeout(r, 100));
    await conn.write(encoder.encode(piece)).catch(() => {});
  }
  conn.close();
  await reading;
  return answered.split("\r\n")[0]!;
}

Deno.test("a client that dribbles its body is answered 408 while still sending (real socket)", async () => {
  const p = await startPlatform({ BODY_TIMEOUT_MS: "300" });
  const server = serve({ hostname: "127.0.0.1", port: 0, idleTimeoutMs: 30_000 }, p.handler);
  try {
    await deploy(p, p.secretKey, "echo", "export default { fetch: () => new Response('ok') };");
    for (const path of ["/v1/db/docs", "/rest/v1/docs", "/v1/sql", "/v1/functions/echo/invoke"]) {
      const head = `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\napikey: ${p.secretKey}\r\n` +
        "content-type: application/json\r\ncontent-length: 100000\r\n\r\n{";
      assertEquals(await dribble(server.addr.port, head), "HTTP/1.1 408 Request Timeout", path);
    }
    const chunked = `POST /v1/sql HTTP/1.1\r\nHost: 127.0.0.1\r\napikey: ${p.secretKey}\r\n` +
      "content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n1\r\n{\r\n";
    assertEquals(await dribble(server.addr.port, chunked, "1\r\n \r\n"), "HTTP/1.1 408 Request Timeout");
    // A broken chunked encoding is the client's fault: a 400, not a 500.
    assertEquals(await dribble(server.addr.port, chunked, "zz\r\n"), "HTTP/1.1 400 Bad Request");
    // The platform still serves ordinary requests, bodiless or empty ones included.
    const base = `http://127.0.0.1:${server.addr.port}`;
    const ok = await fetch(`${base}/v1/health`);
    assertEquals(ok.status, 200);
    await ok.body?.cancel();
    const bodiless = await fetch(`${base}/v1/functions/echo`, {
      method: "DELETE",
      headers: { apikey: p.secretKey },
    });
    assert(bodiless.status < 500, `DELETE without a body: ${bodiless.status}`);
    await bodiless.body?.cancel();
    const empty = await fetch(`${base}/v1/sql`, {
      method: "POST",
      headers: { apikey: p.secretKey },
      body: "",
    });
    assert(empty.status >= 400 && empty.status < 500, `POST with an empty body: ${empty.status}`);
    await empty.body?.cancel();
  } finally {
    await server.shutdown();
    await p.close();
  }
});

Deno.test("the platform disconnects a client that never finishes its headers (IDLE_TIMEOUT_MS)", async () => {
  const sandbox = await makeSandbox();
  const platform = await spawnPlatform({ ...sandbox.env, IDLE_TIMEOUT_MS: "300" });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: platform.port });
  try {
    await conn.write(new TextEncoder().encode("GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nx-slow: "));
    // The bound only stops a broken test from hanging: the server closes the socket long before.
    const read = await Promise.race([
      conn.read(new Uint8Array(1024)).catch(() => null),
      new Promise<"open">((r) => setTimeout(() => r("open"), 20_000)),
    ]);
    assertEquals(read, null);
    const ok = await fetch(`${platform.url}/v1/health`);
    assertEquals(ok.status, 200);
    await ok.body?.cancel();
  } finally {
    conn.close();
    await platform.stop();
    await sandbox.destroy();
  }
});
