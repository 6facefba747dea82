import { assert, assertEquals } from "./assert.ts";
import { ADMIN, type Json, makeSandbox, within } from "./harness.ts";

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** Ends `child`: SIGTERM, then SIGKILL if it has not exited in 60 s (a liveness bound, not a timing claim). */
async function stop(child: Deno.ChildProcess): Promise<void> {
  child.kill("SIGTERM");
  try {
    await within(child.status, 60_000, "the platform's exit on SIGTERM");
  } catch {
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
    await within(child.status, 60_000, "the platform's exit on SIGKILL");
  }
}

async function get(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Json }> {
  const res = await fetch(url, { headers }).catch(() => null);
  if (!res) return { status: 0, body: null };
  return { status: res.status, body: await res.json() };
}

Deno.test("first start: liveness answers while the platform opens; readiness only once the admin and the default project exist", async () => {
  const sandbox = await makeSandbox();
  const port = freePort();
  const main = new URL("../main.ts", import.meta.url).pathname;
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      "--unstable-kv",
      "--unstable-worker-options",
      "--unstable-no-legacy-abort",
      main,
    ],
    env: { ...sandbox.env, PORT: String(port), HOSTNAME: "127.0.0.1", QUIET: "true" },
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  try {
    const base = `http://127.0.0.1:${port}`;
    let healthy = false;
    const notReady: Json[] = [];
    for (let i = 0; i < 12_000; i++) {
      if (!healthy) healthy = (await get(`${base}/v1/health`)).status === 200;
      if (healthy) {
        const ready = await get(`${base}/v1/ready`);
        if (ready.status === 200) break;
        notReady.push(ready);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    assert(healthy, "liveness never answered");
    // Every answer before readiness said why, as a 503 in the usual envelope.
    for (const answer of notReady) {
      assertEquals(answer.status, 503, JSON.stringify(answer.body));
      assertEquals(answer.body.error.code, "SERVICE_UNAVAILABLE");
    }
    // Readiness is 200: the first admin and the default project are there, without waiting any longer.
    const login = await fetch(`${base}/v1/admin/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(ADMIN),
    });
    const session = await login.json();
    assertEquals(login.status, 200, JSON.stringify(session));
    assert(String(session.data.token).startsWith("cs_"));
    const project = await get(`${base}/v1/project`, { apikey: sandbox.publicKey });
    assertEquals(project.status, 200, JSON.stringify(project.body));
    assertEquals(project.body.data.ref, "default");
  } finally {
    await stop(child);
    const text = await within(stderr, 30_000, "the end of the platform's stderr");
    await sandbox.destroy();
    // A clean start prints no warning: none of the platform's, none of Deno's (npm build scripts).
    assert(!/warn/i.test(text), text);
  }
});

Deno.test("first start: a request made while the platform opens waits for it and is served", async () => {
  const sandbox = await makeSandbox();
  const port = freePort();
  const main = new URL("../main.ts", import.meta.url).pathname;
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      "--unstable-kv",
      "--unstable-worker-options",
      "--unstable-no-legacy-abort",
      main,
    ],
    env: { ...sandbox.env, PORT: String(port), HOSTNAME: "127.0.0.1", QUIET: "true", LOG_LEVEL: "error" },
    stdout: "null",
    stderr: "null",
  }).spawn();
  try {
    const base = `http://127.0.0.1:${port}`;
    for (let i = 0; i < 12_000 && (await get(`${base}/v1/health`)).status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const project = await get(`${base}/v1/project`, { apikey: sandbox.publicKey });
    assertEquals(project.status, 200, JSON.stringify(project.body));
    assertEquals(project.body.data.ref, "default");
  } finally {
    await stop(child);
    await sandbox.destroy();
  }
});
