import type { Databases } from "../../db/databases.ts";
import { Runtime } from "../../runtime/supervisor.ts";
import type { Config } from "../config.ts";
import type { Cipher } from "../../lib/crypto.ts";
import { join } from "node:path";
import { FunctionBundles } from "./bundles.ts";
import { FunctionService } from "./functions.ts";
import { InvocationRecorder } from "./invocations.ts";
import { Invoker } from "./invoke.ts";
import { FunctionLogs } from "./logs.ts";
import { InvocationQuota } from "./quota.ts";
import { SharedRateLimit } from "../limits/rate_limit.ts";

/** The edge functions area: storage, runtime, invoke, logs, records. */
export interface FunctionsArea {
  service: FunctionService;
  invoker: Invoker;
  runtime: Runtime;
  logs: FunctionLogs;
  recorder: InvocationRecorder;
  quota: InvocationQuota;
  rateLimit: SharedRateLimit;
  /**
   * Records the port the platform really listens on (PORT=0 picks one at start), so that hosts started from
   * now on deny it too wherever the operator opened a private address.
   */
  listeningOn(port: number): void;
  /** Stops the hosts and writes pending records and counts. */
  close(): Promise<void>;
}

/** Builds the functions area from the configuration (FUNCTIONS_*, INVOKE_*, PLAN_* variables). */
export async function openFunctions(
  config: Config,
  deps: { dbs: Databases; kv: Deno.Kv; cipher: Cipher },
): Promise<FunctionsArea> {
  const logs = new FunctionLogs(deps.dbs, config.FUNCTIONS_LOG_LINES);
  // Read by the runtime whenever it starts a host: listeningOn() adds the port chosen at start.
  const platformPorts = config.PORT > 0 ? [config.PORT] : [];
  const runtime = await Runtime.create({
    maxHosts: config.FUNCTIONS_MAX_HOSTS,
    maxMemoryMb: config.FUNCTIONS_MAX_MEMORY_MB,
    maxHostsPerTenant: config.FUNCTIONS_MAX_HOSTS_PER_PROJECT ??
      Math.max(1, Math.floor(config.FUNCTIONS_MAX_HOSTS / 2)),
    maxMemoryMbPerTenant: config.FUNCTIONS_MAX_MEMORY_MB_PER_PROJECT ??
      Math.max(16, Math.floor(config.FUNCTIONS_MAX_MEMORY_MB / 2)),
    idleMs: config.FUNCTIONS_IDLE_SECS * 1000,
    allowPrivateNet: config.FUNCTIONS_ALLOW_PRIVATE_NET.split(",").map((s) => s.trim()).filter(Boolean),
    platformPorts,
    marginMs: config.FUNCTIONS_TIMEOUT_MARGIN_MS,
  }, (id, level, text) => logs.add(id, level, text));
  const bundles = new FunctionBundles({
    cacheDir: config.FUNCTIONS_PACKAGE_CACHE_DIR ?? join(config.DATA_DIR, "packages"),
    cacheMaxBytes: config.FUNCTIONS_PACKAGE_CACHE_MB * 1048576,
    npmRegistry: config.FUNCTIONS_NPM_REGISTRY,
    importHosts: config.FUNCTIONS_IMPORT_HOSTS.split(",").map((s) => s.trim()).filter(Boolean),
    maxBytes: Math.floor(config.FUNCTIONS_MAX_BUNDLE_MB * 1048576),
    timeoutMs: config.FUNCTIONS_BUILD_TIMEOUT_SECS * 1000,
  });
  const service = new FunctionService(
    deps.dbs,
    deps.cipher,
    {
      deployed: (spec) => {
        logs.own(spec.functionId, spec.tenant);
        return runtime.prewarm(spec);
      },
      removed: (id) => {
        logs.drop(id);
        return runtime.retire(id);
      },
    },
    bundles,
    Math.floor(config.FUNCTIONS_CODE_CACHE_MB * 1048576),
  );
  const recorder = new InvocationRecorder(deps.dbs);
  // Kept in the control database, so that instances sharing only PostgreSQL share them.
  const quota = new InvocationQuota(deps.dbs.control, config.PLAN_INVOCATIONS_PER_MONTH);
  const rateLimit = new SharedRateLimit(deps.dbs.control, {
    perMinute: config.INVOKE_RATE_PER_MIN,
    name: "invoke",
  });
  const invoker = new Invoker({
    functions: service,
    runtime,
    logs,
    recorder,
    quota,
    rateLimit,
  });
  return {
    service,
    invoker,
    runtime,
    logs,
    recorder,
    quota,
    rateLimit,
    listeningOn(port) {
      if (!platformPorts.includes(port)) platformPorts.push(port);
    },
    async close() {
      await runtime.close();
      await recorder.close();
      await quota.close();
      await rateLimit.close();
      await logs.close();
    },
  };
}
