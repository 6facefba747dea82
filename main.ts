import { createHandler } from "./routes/mod.ts";
import { loadConfig } from "./services/config.ts";
import { describeError, log } from "./lib/log.ts";
import { closePlatform, openPlatform, type Platform } from "./services/platform.ts";
import { startWorkers } from "./workers/mod.ts";
import { serve } from "./lib/serve.ts";

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

/** How long a stop waits for in-flight requests before it closes the databases anyway. */
const SHUTDOWN_GRACE_MS = 10_000;

if (import.meta.main) {
  const config = loadConfig();
  const platform = await openPlatform(config);
  const handler = createHandler(platform);
  const workers = config.WORKERS ? startWorkers(platform) : null;
  const server = serve({
    port: config.PORT,
    hostname: config.HOSTNAME,
    idleTimeoutMs: config.IDLE_TIMEOUT_MS,
    onListen: async ({ port, hostname }) => {
      const host = hostname === "0.0.0.0" || hostname === "::" ? config.BASE_DOMAIN : hostname;
      const url = config.PUBLIC_URL ?? `http://${host}:${port}`;
      platform.functions.listeningOn(port);
      if (!config.QUIET) await printBanner(platform, url);
      log.info("listening", { port, database: platform.dbs.kind });
    },
  }, handler);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info("shutting down", { signal });
    try {
      // Stops accepting and waits for in-flight requests, but not forever: a client may never finish its own.
      const drained = await Promise.race([
        server.shutdown().then(() => true),
        new Promise<false>((resolve) => setTimeout(() => resolve(false), SHUTDOWN_GRACE_MS)),
      ]);
      if (!drained) log.warn("shutting down with requests in flight", { after_ms: SHUTDOWN_GRACE_MS });
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
