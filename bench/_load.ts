/**
 * A small HTTP load generator, used by the benchmarks when `wrk` is not installed: `connections` loops send
 * the same request for `seconds` and the latencies are reported as JSON on stdout.
 * Usage: deno run -A bench/_load.ts '<json {url, method, headers, body, connections, seconds}>'
 */
interface LoadSpec {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
  connections: number;
  seconds: number;
}

/** Results of one load run. */
export interface LoadResult {
  requests: number;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  errors: number;
}

/** Runs the load described by `spec` and measures it. */
export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const latencies: number[] = [];
  let errors = 0;
  const end = performance.now() + spec.seconds * 1000;
  const loop = async () => {
    while (performance.now() < end) {
      const t = performance.now();
      try {
        const res = await fetch(spec.url, { method: spec.method, headers: spec.headers, body: spec.body });
        await res.arrayBuffer();
        if (res.status >= 400) errors++;
      } catch {
        errors++;
      }
      latencies.push(performance.now() - t);
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: spec.connections }, loop));
  const elapsed = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return {
    requests: latencies.length,
    rps: latencies.length / elapsed,
    p50: at(0.5),
    p90: at(0.9),
    p99: at(0.99),
    errors,
  };
}

if (import.meta.main) {
  console.log(JSON.stringify(await runLoad(JSON.parse(Deno.args[0]!))));
}
