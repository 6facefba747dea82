/** What one wrk run measured. */
export interface WrkResult {
  requests: number;
  rps: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  errors: number;
}

/** Options of {@linkcode runWrk}. */
export interface WrkOptions {
  connections: number;
  threads?: number;
  seconds: number;
  headers?: Record<string, string>;
  /** A POST body (JSON): sent through a small wrk Lua script (with a JSON content-type unless `headers` has one). */
  postJson?: string;
}

/** True when wrk is on the PATH. */
export async function hasWrk(): Promise<boolean> {
  try {
    await new Deno.Command("wrk", { args: ["--version"], stdout: "null", stderr: "null" }).output();
    return true;
  } catch {
    return false;
  }
}

/** Explains how to get wrk and exits, when it is missing. */
export async function requireWrk(): Promise<void> {
  if (await hasWrk()) return;
  console.error("The benchmarks drive servers with wrk: install it with `apt-get install -y wrk` (Debian).");
  Deno.exit(2);
}

function toMs(value: string, unit: string): number {
  const n = Number(value);
  return unit === "us" ? n / 1000 : unit === "s" ? n * 1000 : n;
}

/** Drives `url` with wrk and parses requests/s and the latency distribution. */
export async function runWrk(url: string, options: WrkOptions): Promise<WrkResult> {
  const args = [
    `-t${options.threads ?? Math.min(2, options.connections)}`,
    `-c${options.connections}`,
    `-d${options.seconds}s`,
    "--latency",
  ];
  for (const [k, v] of Object.entries(options.headers ?? {})) args.push("-H", `${k}: ${v}`);
  let script: string | undefined;
  if (options.postJson !== undefined) {
    script = await Deno.makeTempFile({ suffix: ".lua" });
    await Deno.writeTextFile(
      script,
      `wrk.method = "POST"\nwrk.body = ${JSON.stringify(options.postJson)}\n` +
        (Object.keys(options.headers ?? {}).some((k) => k.toLowerCase() === "content-type")
          ? ""
          : `wrk.headers["Content-Type"] = "application/json"\n`),
    );
    args.push("-s", script);
  }
  args.push(url);
  const out = await new Deno.Command("wrk", { args, stdout: "piped", stderr: "piped" }).output()
    .finally(() => script ? Deno.remove(script).catch(() => {}) : undefined);
  const text = new TextDecoder().decode(out.stdout);
  const rps = Number(text.match(/Requests\/sec:\s+([\d.]+)/)?.[1] ?? NaN);
  const p = (q: string) => {
    const m = text.match(new RegExp(`\\s${q}%\\s+([\\d.]+)(us|ms|s)`));
    return m ? toMs(m[1]!, m[2]!) : NaN;
  };
  const non2xx = Number(text.match(/Non-2xx or 3xx responses:\s+(\d+)/)?.[1] ?? 0);
  const socketErrors = text.match(/Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/);
  const errors = non2xx + (socketErrors ? socketErrors.slice(1).reduce((a, b) => a + Number(b), 0) : 0);
  if (!Number.isFinite(rps)) {
    throw new Error(`wrk printed no result:\n${text}\n${new TextDecoder().decode(out.stderr)}`);
  }
  const requests = Number(text.match(/(\d+) requests in/)?.[1] ?? 0);
  return { requests, rps, p50Ms: p("50"), p90Ms: p("90"), p99Ms: p("99"), errors };
}

/** Runs `measure` `times` times and keeps the best requests/s and the best p50 (the least disturbed run). */
export async function best(times: number, measure: () => Promise<WrkResult>): Promise<WrkResult> {
  const runs: WrkResult[] = [];
  for (let i = 0; i < times; i++) runs.push(await measure());
  return {
    requests: runs.reduce((n, r) => n + r.requests, 0),
    rps: Math.max(...runs.map((r) => r.rps)),
    p50Ms: Math.min(...runs.map((r) => r.p50Ms)),
    p90Ms: Math.min(...runs.map((r) => r.p90Ms)),
    p99Ms: Math.min(...runs.map((r) => r.p99Ms)),
    errors: runs.reduce((a, r) => a + r.errors, 0),
  };
}
