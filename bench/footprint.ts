/**
 * Footprint benchmark: `deno task start` measured from outside. For each case, a fresh data directory (or a
 * fresh PostgreSQL database) is started and its extra projects are created through the admin API (none with one
 * project: nothing is asked of the platform), and `BENCH_REST_SECS` after `/v1/health` answered the resident
 * memory of the whole process tree (the platform and every child process: function hosts, builds) is read from
 * /proc; then the platform is stopped and started again on the same data and measured twice: at rest with its
 * projects idle (no request since the restart), then after a data API request to each project and
 * `BENCH_REST_SECS` at rest again. The first request to each project after each rest is timed. Prints the
 * seconds to `/v1/health`, the RSS at rest, and any warning the start printed. The one-project case is measured
 * once more on its first start, `BENCH_REST_SECS` after an admin's sign-in: the extra projects of the other
 * cases are created by an admin, whose requests keep the control database open, so their cost per project is
 * told against that measure too (like for like) as well as against the one with nothing asked.
 *
 *   deno run -A --unstable-kv --unstable-worker-options bench/footprint.ts
 *   BENCH_REST_SECS=20 (seconds at rest before measuring) BENCH_PROJECTS=1,5,20 (PGlite cases)
 *   PGLITE_IDLE_SECS=5 (passed on: project databases idle that long are closed, and the first request after
 *   the rest, timed for each project, opens its database again)
 *   DATABASE_URL=postgres://… adds one project on PostgreSQL
 */
import { ADMIN, makeSandbox, rawRequest, startTaskEnv } from "../tests/harness.ts";
import { treeRss } from "./_proc.ts";

const REST_SECS = Number(Deno.env.get("BENCH_REST_SECS") ?? 20);
const PROJECTS = (Deno.env.get("BENCH_PROJECTS") ?? "1,5,20").split(",").map(Number);
const POSTGRES = Deno.env.get("DATABASE_URL");
const MAIN = new URL("../main.ts", import.meta.url).pathname;

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

interface Started {
  process: Deno.ChildProcess;
  port: number;
  healthSecs: number;
  /** When `/v1/health` first answered (performance.now()). */
  healthAt: number;
  output: string[];
}

/** Starts main.ts as `deno task start` does (its environment too) and waits for `/v1/health` to answer 200. */
async function start(env: Record<string, string>): Promise<Started> {
  const port = freePort();
  const t0 = performance.now();
  const process = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      "--unstable-kv",
      "--unstable-worker-options",
      "--unstable-no-legacy-abort",
      MAIN,
    ],
    clearEnv: true,
    env: {
      ...startTaskEnv(),
      ...env,
      PORT: String(port),
      HOSTNAME: "127.0.0.1",
      LOG_LEVEL: "warn",
      QUIET: "true",
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output: string[] = [];
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) output.push(...chunk.split("\n"));
  };
  pump(process.stdout);
  pump(process.stderr);
  for (;;) {
    const res = await fetch(`http://127.0.0.1:${port}/v1/health`).catch(() => null);
    await res?.body?.cancel();
    if (res?.ok) break;
    if (performance.now() - t0 > 120_000) throw new Error(`no health in 120 s:\n${output.join("\n")}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  const healthAt = performance.now();
  return { process, port, healthSecs: (healthAt - t0) / 1000, healthAt, output };
}

async function stop(started: Started): Promise<void> {
  try {
    started.process.kill("SIGTERM");
  } catch { /* it ended already */ }
  const status = await started.process.status;
  if (!status.success) {
    throw new Error(`the platform exited with ${status.code}:\n${started.output.join("\n")}`);
  }
}

async function adminToken(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/v1/admin/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(ADMIN),
  });
  const body = await res.json();
  if (!res.ok) throw new Error(`admin login: ${res.status} ${JSON.stringify(body)}`);
  return body.data.token;
}

/**
 * A data API read to each project with its public key (of a table that does not exist: a 404 once the schema
 * cache is loaded, as cheap a read as there is), so that each project's database is open (as after any use);
 * answers the time of each request, in milliseconds.
 */
async function useProjects(port: number, projects: Project[]): Promise<number[]> {
  const times: number[] = [];
  for (const { ref, publicKey } of projects) {
    const t0 = performance.now();
    const res = await rawRequest(port, {
      method: "GET",
      path: "/rest/v1/footprint_probe?select=id",
      host: `${ref}.localhost`,
      headers: { apikey: publicKey },
    });
    if (res.status !== 404 || !res.body.includes("PGRST205")) {
      throw new Error(`data API on ${ref}: ${res.status} ${res.body.slice(0, 300)}`);
    }
    times.push(performance.now() - t0);
  }
  return times;
}

interface Project {
  ref: string;
  publicKey: string;
}

/**
 * Creates projects 2..count through the admin API, one after the other; answers every project with its public
 * key, and how long each creation took.
 */
async function createProjects(
  port: number,
  count: number,
  defaultKey: string,
): Promise<{ projects: Project[]; createMs: number[] }> {
  const projects = [{ ref: "default", publicKey: defaultKey }];
  const createMs: number[] = [];
  if (count < 2) return { projects, createMs };
  const token = await adminToken(port);
  for (let i = 2; i <= count; i++) {
    const ref = `p${i}`;
    const started = performance.now();
    const res = await fetch(`http://127.0.0.1:${port}/v1/admin/projects`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ ref, name: ref }),
    });
    const body = await res.json();
    if (res.status !== 201) throw new Error(`create ${ref}: ${res.status} ${JSON.stringify(body)}`);
    createMs.push(performance.now() - started);
    projects.push({ ref, publicKey: body.data.public_key });
  }
  return { projects, createMs };
}

/** Signs in as the admin (a control database read and write, as the other cases' creations begin with). */
async function adminSignIn(port: number): Promise<void> {
  await adminToken(port);
}

interface Measure {
  healthSecs: number;
  rssMb: number;
  processes: number;
  warnings: string[];
  /** The first request to each project after the rest (its database reopens when it was closed while idle). */
  afterRestMs: number[];
}

/**
 * Uses the projects (when `use`), then measures once the platform has rested `BENCH_REST_SECS` since the last
 * request (`since`, from performance.now(), when it is later).
 */
async function measure(
  started: Started,
  projects: Project[],
  use: boolean,
  since = 0,
  timeRequests = true,
): Promise<Measure> {
  if (use) await useProjects(started.port, projects);
  const from = Math.max(use ? performance.now() : started.healthAt, since);
  await new Promise((r) => setTimeout(r, Math.max(0, from + REST_SECS * 1000 - performance.now())));
  const { bytes, processes } = await treeRss(started.process.pid);
  const warnings = started.output.filter((line) => /warn/i.test(line));
  const afterRestMs = timeRequests ? await useProjects(started.port, projects) : [];
  return { healthSecs: started.healthSecs, rssMb: bytes / 1048576, processes, warnings, afterRestMs };
}

async function runCase(label: string, projects: number, postgres: boolean) {
  const sandbox = await makeSandbox();
  const env: Record<string, string> = { ...Deno.env.toObject(), ...sandbox.env };
  if (!postgres) delete env.DATABASE_URL;
  // A first start as a user's: its own templates, made by it, not the test suite's shared ones.
  delete env.PGLITE_TEMPLATE_DIR;
  try {
    const first = await start(env);
    let all: Project[];
    let fresh: Measure;
    let freshAdmin: Measure | undefined;
    try {
      const created = await createProjects(first.port, projects, sandbox.env.DEFAULT_PUBLIC_KEY!);
      all = created.projects;
      if (created.createMs.length > 0) {
        const ms = created.createMs.toSorted((a, b) => a - b);
        console.log(
          `${label.padEnd(22)} ${ms.length} projects created through the admin API: first ${
            created.createMs[0]!.toFixed(0)
          } ms, median ${ms[Math.floor(ms.length / 2)]!.toFixed(0)} ms, max ${ms.at(-1)!.toFixed(0)} ms`,
        );
      }
      // With one project, its first request is timed after the second measure: it opens the project.
      fresh = await measure(first, all, false, projects > 1 ? performance.now() : 0, projects > 1);
      if (projects === 1) {
        await adminSignIn(first.port);
        freshAdmin = await measure(first, all, false, performance.now());
        fresh.afterRestMs = freshAdmin.afterRestMs;
      }
    } finally {
      await stop(first);
    }
    const second = await start(env);
    let idle: Measure;
    let restart: Measure;
    try {
      // Measured before any use (the first request after it is timed by the idle measure itself).
      idle = await measure(second, all, false);
      restart = await measure(second, all, true);
    } finally {
      await stop(second);
    }
    const cases = [
      ["first start", fresh],
      ...(freshAdmin ? [["admin signed in", freshAdmin] as const] : []),
      ["restart, idle", idle],
      ["restart, used", restart],
    ] as const;
    for (const [when, m] of cases) {
      console.log(
        `${label.padEnd(22)} ${when.padEnd(14)} health ${m.healthSecs.toFixed(2)} s   RSS ${
          m.rssMb.toFixed(1)
        } MB (${m.processes} process${m.processes === 1 ? "" : "es"})   first request after rest ${
          Math.min(...m.afterRestMs).toFixed(0)
        }–${Math.max(...m.afterRestMs).toFixed(0)} ms`,
      );
      for (const w of m.warnings) console.log(`    warning: ${w.slice(0, 200)}`);
    }
    return { fresh, freshAdmin, idle, restart };
  } finally {
    await sandbox.destroy();
  }
}

console.log(
  `RSS of the process tree ${REST_SECS} s after /v1/health (first start: extra projects created by the admin; ` +
    `restart: idle, then ${REST_SECS} s after a data API request to each project)`,
);
const results: Record<number, { fresh: Measure; freshAdmin?: Measure; idle: Measure; restart: Measure }> = {};
for (const n of PROJECTS) results[n] = await runCase(`PGlite, ${n} project${n === 1 ? "" : "s"}`, n, false);
const one = results[1];
for (const n of PROJECTS) {
  if (n === 1 || !one || !results[n]) continue;
  const per = (m: "fresh" | "idle" | "restart", base: Measure = one[m]) => {
    const mb = (results[n]![m].rssMb - base.rssMb) / (n - 1);
    return `${mb < 0 ? "" : "+"}${mb.toFixed(1)} MB`;
  };
  const likeForLike = one.freshAdmin
    ? ` (${per("fresh", one.freshAdmin)} against one after an admin's sign-in)`
    : "";
  console.log(
    `per extra project (${n}): first start ${per("fresh")}${likeForLike}, restart idle ${
      per("idle")
    }, restart used ${per("restart")}`,
  );
}
if (POSTGRES) await runCase("PostgreSQL, 1 project", 1, true);
