import { json, type TestPlatform } from "./harness.ts";

/** Polls `check` every 50 ms until it is true; throws after `ms`. */
export async function waitUntil(
  what: string,
  check: () => Promise<boolean> | boolean,
  ms = 30_000,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Function sources used by the job tests (each one ES module, `export default { fetch }`). */
export const FUNCTIONS = {
  /** Checks what a job sends (POST /, JSON payload, job headers) and answers 200, or 422 with the reason. */
  check: `export default { async fetch(req) {
    const id = req.headers.get("x-platform-job-id") ?? "";
    const attempt = req.headers.get("x-platform-job-attempt");
    const url = new URL(req.url);
    const body = await req.json();
    const bad = req.method !== "POST" ? "method" : url.pathname !== "/" ? "path"
      : !/^[0-9a-f-]{36}$/.test(id) ? "job id" : attempt !== "1" ? "attempt"
      : body?.hello !== "world" ? "payload" : null;
    return new Response(bad ?? "ok", { status: bad ? 422 : 200 });
  } };`,
  /** Fails its first two attempts, then succeeds. */
  flaky: `export default { fetch(req) {
    const attempt = Number(req.headers.get("x-platform-job-attempt"));
    return new Response("attempt " + attempt, { status: attempt < 3 ? 500 : 200 });
  } };`,
  /** Always fails. */
  broken: `export default { fetch() { return new Response("always broken", { status: 500 }); } };`,
  /** Succeeds when the body is JSON (a job without payload sends `null`). */
  fine: `export default { async fetch(req) { await req.json(); return new Response("fine"); } };`,
};

/** Deploys a deno function (upsert on name) and throws unless it worked. */
export async function deploy(
  p: Pick<TestPlatform, "fetch">,
  key: string,
  name: string,
  code: string,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const res = await json(
    await p.fetch("/v1/functions", {
      method: "POST",
      headers: { apikey: key },
      json: { name, runtime: "deno", code, ...extra },
    }),
  );
  if (res.status !== 200 && res.status !== 201) {
    throw new Error(`deploy ${name}: ${JSON.stringify(res.body)}`);
  }
}
