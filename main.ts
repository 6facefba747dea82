import { createHandler } from "./routes/mod.ts";
import { whileOpening } from "./routes/starting.ts";
import { loadConfig } from "./services/config.ts";
import { describeError, log } from "./lib/log.ts";
import { closePlatform, openPlatform, type Platform, restAfterStart } from "./services/platform.ts";
import { startWorkers } from "./workers/mod.ts";
import { serve } from "./lib/serve.ts";
import { restCollector } from "./lib/rest_gc.ts";

/** Prints what `supabase start` prints: where the platform listens, the default project's keys, the admin. */
async function printBanner(platform: Platform, url: string): Promise<void> {
  const { config, bootstrap } = platform;
  const keys = await platform.projects.keys(config.DEFAULT_PROJECT_REF);
  const lines = [
    "",
    `Platform started: ${url}`,
    `  project      ${config.DEFAULT_PROJECT_REF}${bootstrap.createdDefaultProject ? " (created)" : ""}`,
    `  public key   ${keys.public_key}`,
    `  secret key   ${keys.secret_key}`,
    `  docs         ${url}/docs`,
    `  console      ${url}/console`,
    `  vectors      ${await vectorLine(platform)}`,
  ];
  if (bootstrap.admin?.generatedPassword) {
    lines.push(
      `  admin        ${bootstrap.admin.email}`,
      `  password     ${bootstrap.admin.generatedPassword}   (shown once: keep it)`,
    );
  } else if (bootstrap.admin) {
    lines.push(`  admin        ${bootstrap.admin.email}`);
  }
  console.log(lines.join("\n") + "\n");
}

/** What serves semantic search, in the banner's words. */
async function vectorLine(platform: Platform): Promise<string> {
  const ref = platform.config.DEFAULT_PROJECT_REF;
  if (platform.dbs.resting(ref)) {
    return "known once the default project's database opens (it rests: /v1/ready)";
  }
  const db = await platform.dbs.project(ref);
  const how = await platform.ai.corpus.vectorSearch(db).catch(() => null);
  if (how === "pgvector") return "pgvector (HNSW in the database)";
  if (how === "platform-hnsw") return "platform HNSW index (the database has no pgvector)";
  if (how === "exact") return "exact scan (AI_VECTOR_STORE=array)";
  return "unavailable (AI_VECTOR_STORE=pgvector but the database has no pgvector)";
}

/** How long after the start is done its garbage is collected (lib/rest_gc.ts). */
const START_SETTLE_MS = 3000;

if (import.meta.main) {
  const config = loadConfig();
  // The server listens first: liveness answers while the platform opens (migrations, the first admin's password
  // hash, a first start's databases); readiness and every other request wait for it (routes/starting.ts).
  const opening = openPlatform(config);
  const handlers = opening.then((platform) => createHandler(platform));
  // Memory that a stretch of requests left behind goes back once they stop (lib/rest_gc.ts).
  const rest = restCollector(config.REST_GC_SECS * 1000);
  const handle = whileOpening(handlers);
  let listening: (port: number) => void;
  const port = new Promise<number>((resolve) => listening = resolve);
  const server = serve({
    port: config.PORT,
    hostname: config.HOSTNAME,
    idleTimeoutMs: config.IDLE_TIMEOUT_MS,
    onListen: ({ port }) => listening(port),
  }, (req, info) => {
    rest.touch();
    return handle(req, info);
  });
  let platform: Platform;
  try {
    platform = await opening;
  } catch (err) {
    log.error("the platform did not open", { cause: describeError(err) });
    Deno.exit(1);
  }
  const workers = config.WORKERS ? startWorkers(platform) : null;
  {
    const bound = await port;
    const hostname = config.HOSTNAME;
    const host = hostname === "0.0.0.0" || hostname === "::" ? config.BASE_DOMAIN : hostname;
    const url = config.PUBLIC_URL ?? `http://${host}:${bound}`;
    platform.functions.listeningOn(bound);
    if (!config.QUIET) await printBanner(platform, url);
    log.info("listening", { port: bound, database: platform.dbs.kind });
  }
  // In the background: the signal handlers below must be in place while it reads. The start's garbage (a
  // first start's databases made and copied, what the preload read) is collected once the databases it opened
  // have closed (they rest within a second or two of this), not only at the next rest.
  restAfterStart(platform).catch((err) =>
    log.warn("the start's databases were not rested", { cause: describeError(err) })
  ).finally(() => rest.collectSoon(START_SETTLE_MS));

  // A stop drains: readiness answers 503 at once (a balancer stops sending), the listener keeps accepting for
  // DRAIN_DELAY_MS (a second signal cuts it short), then it closes, realtime clients are closed with 1001 (SSE
  // streams end) so that they reconnect elsewhere, and the requests in flight get SHUTDOWN_GRACE_MS to finish.
  let stopping = false;
  let endDelay: (() => void) | undefined;
  const stop = async (signal: string) => {
    if (stopping) {
      endDelay?.();
      return;
    }
    stopping = true;
    platform.health.drain();
    log.info("shutting down", { signal, drain_delay_ms: config.DRAIN_DELAY_MS });
    try {
      if (config.DRAIN_DELAY_MS > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, config.DRAIN_DELAY_MS);
          endDelay = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      // Stops accepting and waits for in-flight requests, but not forever: a client may never finish its own.
      const shutdown = server.shutdown();
      await platform.realtime.close();
      log.info("draining", { grace_ms: config.SHUTDOWN_GRACE_MS });
      let timer: ReturnType<typeof setTimeout> | undefined;
      const drained = await Promise.race([
        shutdown.then(() => true),
        new Promise<false>((resolve) => timer = setTimeout(() => resolve(false), config.SHUTDOWN_GRACE_MS)),
      ]);
      clearTimeout(timer);
      if (!drained) log.warn("shutting down with requests in flight", { after_ms: config.SHUTDOWN_GRACE_MS });
      await workers?.stop(); // no new queue messages; those in flight finish
      await closePlatform(platform);
    } catch (err) {
      log.error("shutdown failed", { cause: describeError(err) });
      Deno.exit(1);
    }
    Deno.exit(0);
  };
  for (const signal of ["SIGINT", "SIGTERM"] as const) Deno.addSignalListener(signal, () => stop(signal));
  await server.finished;
}
