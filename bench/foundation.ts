// Issue 2 benchmark: an authenticated GET through the whole middleware chain (request id, CORS, body limit,
// project from host, API key and ES256 user JWT) against a bare Deno.serve returning the same JSON.
// Targets: >= 60% of the bare server's requests/s at 50 connections; <= 0.5 ms added to p50 at 1 connection.
import { makeSandbox, spawnPlatform } from "../tests/harness.ts";
import { type Bare, type BareMode, startBare } from "./bare.ts";
import { best, requireWrk, runWrk } from "./wrk.ts";

await requireWrk();
const SECONDS = Number(Deno.env.get("BENCH_SECONDS") ?? 8);

const sandbox = await makeSandbox();
const platform = await spawnPlatform({ ...sandbox.env, LOG_LEVEL: "warn" });
const bares: Bare[] = [];
const launchBare = async (body: string, mode?: BareMode) => {
  const server = await startBare(body, mode);
  bares.push(server);
  return `${server.origin}/v1/project`;
};

try {
  const signup = await fetch(`${platform.url}/v1/auth/signup`, {
    method: "POST",
    headers: { apikey: sandbox.publicKey, "content-type": "application/json" },
    body: JSON.stringify({ email: "bench@example.com", password: "bench-password" }),
  }).then((r) => r.json());
  const headers = { apikey: sandbox.publicKey, authorization: `Bearer ${signup.data.session.access_token}` };
  const url = `${platform.url}/v1/project`;
  const answer = await (await fetch(url, { headers })).text();
  if (!answer.includes('"role":"authenticated"')) throw new Error(`Unexpected answer: ${answer}`);

  const bareUrl = await launchBare(answer, "sync");
  const asyncUrl = await launchBare(answer, "async");
  const floorUrl = await launchBare(answer, "floor");

  const load = (target: string, connections: number) => () =>
    runWrk(target, { connections, seconds: SECONDS, headers });
  // Warm both, then alternate so that noise from the shared machine falls on both sides alike.
  await runWrk(url, { connections: 50, seconds: 2, headers });
  await runWrk(bareUrl, { connections: 50, seconds: 2, headers });
  const bareThroughput = await best(2, load(bareUrl, 50));
  const asyncThroughput = await best(2, load(asyncUrl, 50));
  const floorThroughput = await best(2, load(floorUrl, 50));
  const platThroughput = await best(2, load(url, 50));
  const bareLatency = await best(2, load(bareUrl, 1));
  const platLatency = await best(2, load(url, 1));

  const ratio = platThroughput.rps / bareThroughput.rps;
  const addedP50 = platLatency.p50Ms - bareLatency.p50Ms;
  const asyncRatio = platThroughput.rps / asyncThroughput.rps;
  console.log(
    "\nfoundation: authenticated GET /v1/project (apikey + ES256 JWT) vs bare Deno.serve, same JSON",
  );
  console.table({
    "bare, 50 conn": {
      "req/s": Math.round(bareThroughput.rps),
      "p50 ms": bareThroughput.p50Ms,
      "p99 ms": bareThroughput.p99Ms,
    },
    "bare async, 50 conn": {
      "req/s": Math.round(asyncThroughput.rps),
      "p50 ms": asyncThroughput.p50Ms,
      "p99 ms": asyncThroughput.p99Ms,
    },
    "bare floor, 50 conn": {
      "req/s": Math.round(floorThroughput.rps),
      "p50 ms": floorThroughput.p50Ms,
      "p99 ms": floorThroughput.p99Ms,
    },
    "platform, 50 conn": {
      "req/s": Math.round(platThroughput.rps),
      "p50 ms": platThroughput.p50Ms,
      "p99 ms": platThroughput.p99Ms,
    },
    "bare, 1 conn": {
      "req/s": Math.round(bareLatency.rps),
      "p50 ms": bareLatency.p50Ms,
      "p99 ms": bareLatency.p99Ms,
    },
    "platform, 1 conn": {
      "req/s": Math.round(platLatency.rps),
      "p50 ms": platLatency.p50Ms,
      "p99 ms": platLatency.p99Ms,
    },
  });
  console.log(
    `throughput ratio platform/bare: ${(ratio * 100).toFixed(1)}% (target >= 60%) ${
      ratio >= 0.6 ? "MET" : "MISSED"
    }`,
  );
  console.log(`throughput ratio platform/bare async handler: ${(asyncRatio * 100).toFixed(1)}% (reference)`);
  console.log(
    `throughput ratio bare floor/bare: ${(floorThroughput.rps / bareThroughput.rps * 100).toFixed(1)}% ` +
      "(reference: reading the URL and three headers and adding x-request-id, nothing else)",
  );
  console.log(
    `added p50 latency: ${addedP50.toFixed(3)} ms (target <= 0.5 ms) ${addedP50 <= 0.5 ? "MET" : "MISSED"}`,
  );
  const errors = platThroughput.errors + platLatency.errors;
  if (errors > 0) console.log(`platform errors (non-2xx or socket): ${errors}`);
} finally {
  for (const server of bares) await server.stop();
  await platform.stop("SIGTERM");
  await sandbox.destroy();
}
