import { assert, assertEquals } from "./assert.ts";
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

/**
 * The side-effect table. The function cannot write to the platform's own database over HTTP here: the data
 * API is served by the child platform, whose port changes at the restart (PORT=0), and the runtime hides the
 * platform's own ports from functions. So the function writes to this table through a local test server that
 * it is allowed to reach (FUNCTIONS_ALLOW_PRIVATE_NET=127.0.0.1 + allow_net): one row per call, with the job
 * id and attempt from the job headers. Each call is held `holdMs`, so that the kill finds attempts in flight.
 */
export function effectServer(holdMs: number) {
  const rows: { job: string; attempt: number }[] = [];
  let gate: PromiseWithResolvers<void> | null = null;
  let held = 0;
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (req) => {
    const row = await req.json() as { job: string; attempt: number };
    if (gate) {
      held++;
      await gate.promise;
      held--;
    }
    rows.push(row);
    await new Promise((r) => setTimeout(r, holdMs));
    return new Response("written");
  });
  const port = server.addr.port;
  /** The function that writes one row per call (deploy it with `allow_net: ["127.0.0.1:<port>"]`). */
  const code = `export default { async fetch(req) {
    const res = await fetch("http://127.0.0.1:${port}/effects", {
      method: "POST",
      body: JSON.stringify({
        job: req.headers.get("x-platform-job-id"),
        attempt: Number(req.headers.get("x-platform-job-attempt")),
      }),
    });
    return new Response(await res.text(), { status: res.ok ? 200 : 500 });
  } };`;
  return {
    rows,
    port,
    code,
    /** Calls waiting at the gate now. */
    get held() {
      return held;
    },
    /** Holds every call before its row is written, until `resume` (no side effect happens meanwhile). */
    pause: () => void (gate ??= Promise.withResolvers<void>()),
    resume: () => {
      gate?.resolve();
      gate = null;
    },
    close: () => server.shutdown(),
  };
}

/**
 * Every job (`jobs`: id and attempts as stored, each completed) ran effectively once: it wrote its side effect,
 * no attempt of a job ran twice, the attempt recorded is the last one that ran, and a job ran again only because
 * a kill interrupted its attempt after the side effect and before the completion was recorded (at most
 * `inFlight`, the attempts in flight in the process killed).
 */
export function assertEffectivelyOnce(
  rows: { job: string; attempt: number }[],
  jobs: { id: string; attempts: number }[],
  inFlight: number,
): void {
  const attempts = rows.map((r) => `${r.job}#${r.attempt}`);
  assertEquals(new Set(attempts).size, attempts.length, "no (job, attempt) ran twice");
  const perJob = new Map<string, number[]>();
  for (const r of rows) perJob.set(r.job, [...perJob.get(r.job) ?? [], r.attempt]);
  assertEquals([...perJob.keys()].sort(), jobs.map((j) => j.id).sort(), "every job wrote its side effect");
  const reruns = [...perJob.values()].filter((ran) => ran.length > 1).length;
  assert(reruns <= inFlight, `${reruns} jobs ran again: at most ${inFlight} attempts were in flight`);
  for (const j of jobs) assertEquals(j.attempts, Math.max(...perJob.get(j.id)!), `job ${j.id}`);
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

/**
 * A platform's settings for the fault tests: functions and webhooks may reach the local servers the test starts,
 * leases of 2 s swept every second (a lost attempt is retried soon), `concurrency` attempts of each kind at once.
 */
export function faultEnv(concurrency: number): Record<string, string> {
  return {
    FUNCTIONS_ALLOW_PRIVATE_NET: "127.0.0.1",
    NOTIFY_ALLOW_PRIVATE_NET: "127.0.0.1",
    JOBS_LEASE_SECS: "2",
    JOBS_SWEEP_SECS: "1",
    JOBS_CONCURRENCY: String(concurrency),
    NOTIFY_LEASE_SECS: "2",
    NOTIFY_SWEEP_SECS: "1",
    NOTIFY_CONCURRENCY: String(concurrency),
  };
}
