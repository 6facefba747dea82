import { join } from "node:path";
import { Databases } from "../db/databases.ts";
import { configurePglite } from "../db/pglite_health.ts";
import { openKv } from "../db/kv.ts";
import { AdminService, type BootstrapResult } from "./admin/admins.ts";
import { AiGateway } from "./ai/gateway.ts";
import { MetricsReader } from "./alerts/metrics.ts";
import { AlertService } from "./alerts/service.ts";
import { RevokedSessions } from "./auth/revoked_sessions.ts";
import { TokenService } from "./auth/tokens.ts";
import { AuthService } from "./auth/users.ts";
import { DataService } from "./data/data.ts";
import type { Config } from "./config.ts";
import { Cipher, randomToken } from "../lib/crypto.ts";
import { setLogLevel } from "../lib/log.ts";
import { NetGuard } from "./notifications/net_guard.ts";
import { missingSettings } from "./notifications/recipients.ts";
import { NotificationService } from "./notifications/service.ts";
import { SettingsStore } from "./notifications/settings.ts";
import { type FunctionsArea, openFunctions } from "./functions/mod.ts";
import { CronService } from "./jobs/cron.ts";
import { JobService } from "./jobs/service.ts";
import { type WorkBus, WorkQueue } from "../lib/work_queue.ts";
import { workBus } from "../db/work_bus.ts";
import { ProjectService } from "./projects/projects.ts";
import { SharedRateLimit } from "./limits/rate_limit.ts";
import { RealtimeService } from "./realtime/service.ts";
import { HealthService } from "./system/health.ts";

/** Everything a route or a worker needs, built once by {@linkcode openPlatform}. */
export interface Platform {
  config: Config;
  dbs: Databases;
  kv: Deno.Kv;
  cipher: Cipher;
  projects: ProjectService;
  tokens: TokenService;
  auth: AuthService;
  admins: AdminService;
  /**
   * Per-client and per-account limit of password work (sign-up, sign-in, admin login), across every instance:
   * each attempt costs ~250 ms of CPU.
   */
  authLimit: SharedRateLimit;
  /** The data API engine (PostgREST dialect). */
  data: DataService;
  realtime: RealtimeService;
  /** The durable work queue jobs and notifications enqueue on (run by the engine in workers/). */
  queue: WorkQueue;
  /** On PostgreSQL, how instances tell each other where work waits (null on PGlite: one process). */
  workBus: WorkBus | null;
  notifications: NotificationService;
  /** Edge functions: storage, runtime hosts, invoke, logs and records. */
  functions: FunctionsArea;
  /** The AI gateway (docs/ai.md). */
  ai: AiGateway;
  /** Background jobs and their dead-letter queue. */
  jobs: JobService;
  /** Cron entries that queue jobs. */
  cron: CronService;
  /** Alerts on function and job metrics, and the metrics themselves. */
  alerts: AlertService;
  /** Readiness of the databases and KV. */
  health: HealthService;
  /** What the first start created, for the banner. */
  bootstrap: { createdDefaultProject: boolean; admin: BootstrapResult | null };
}

/** Reads `PLATFORM_SECRET`, or the one generated into `<DATA_DIR>/.secret` (mode 0600) on first start. */
export async function platformSecret(config: Config): Promise<string> {
  if (config.PLATFORM_SECRET) return config.PLATFORM_SECRET;
  const path = join(config.DATA_DIR, ".secret");
  try {
    return (await Deno.readTextFile(path)).trim();
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  await Deno.mkdir(config.DATA_DIR, { recursive: true });
  const secret = randomToken(48);
  await Deno.writeTextFile(path, secret + "\n", { mode: 0o600, createNew: true });
  return secret;
}

/** Opens the databases and KV, applies migrations and creates the default project and the first admin. */
export async function openPlatform(config: Config): Promise<Platform> {
  setLogLevel(config.LOG_LEVEL);
  configurePglite({
    maxMemoryMb: config.PGLITE_MAX_MEMORY_MB,
    recycleMemoryMb: config.PGLITE_RECYCLE_MEMORY_MB,
    stallMs: config.PGLITE_STALL_MS,
    sharedBuffersMb: config.PGLITE_SHARED_BUFFERS_MB,
    idleSecs: config.PGLITE_IDLE_SECS,
  });
  const secret = await platformSecret(config);
  const cipher = await Cipher.fromSecret(secret);
  const dbs = await Databases.open({
    databaseUrl: config.DATABASE_URL,
    dataDir: config.DATA_DIR,
    poolSize: config.PG_POOL_SIZE,
    ownerSecret: secret,
    firstProject: config.DEFAULT_PROJECT_REF,
    templates: config.PGLITE_TEMPLATE_DIR,
  });
  const data = new DataService(dbs, {
    maxRows: config.DATA_MAX_ROWS,
    schemas: config.DATA_SCHEMAS,
    aggregates: config.DATA_AGGREGATES,
    plan: config.DATA_PLAN,
    serverTiming: config.DATA_SERVER_TIMING,
    openapiMode: config.DATA_OPENAPI_MODE,
    openapiSecurityActive: config.DATA_OPENAPI_SECURITY_ACTIVE,
    hoistedTxSettings: config.DATA_HOISTED_TX_SETTINGS,
    statementTimeoutMs: config.DATA_STATEMENT_TIMEOUT_MS,
  });
  // What a project's rest file keeps for the next start: its schema caches.
  dbs.keepMemos(data.schemas);
  let kv: Deno.Kv | undefined;
  try {
    kv = await openKv({ url: config.KV_URL, path: config.KV_PATH, dataDir: config.DATA_DIR });
    const projects = new ProjectService(dbs, cipher);
    const tokens = new TokenService(projects, new RevokedSessions(dbs));
    const admins = new AdminService(dbs.control);
    const createdDefaultProject = await ensureDefaultProject(config, projects, dbs);
    const admin = await admins.bootstrap(config.ADMIN_EMAIL, config.ADMIN_PASSWORD);
    const realtime = new RealtimeService({ dbs, projects, tokens }, {
      tokenCheckMs: config.REALTIME_TOKEN_CHECK_MS,
      maxBufferBytes: config.REALTIME_MAX_BUFFER_BYTES,
      maxChannels: config.REALTIME_MAX_CHANNELS,
      maxMessageBytes: config.REALTIME_MAX_MESSAGE_BYTES,
      sseHeartbeatMs: config.REALTIME_SSE_HEARTBEAT_MS,
    });
    const functions = await openFunctions(config, { dbs, kv, cipher });
    const queue = new WorkQueue(kv);
    const jobs = new JobService({
      dbs,
      queue,
      invoker: functions.invoker,
      concurrency: config.JOBS_CONCURRENCY,
      leaseSecs: config.JOBS_LEASE_SECS,
      maxPayloadBytes: config.INVOKE_MAX_BODY_BYTES,
      retentionDays: config.JOBS_RETENTION_DAYS,
    });
    const notifications = new NotificationService({
      dbs,
      queue,
      settings: new SettingsStore(cipher),
      guard: new NetGuard(config.NOTIFY_ALLOW_PRIVATE_NET),
      concurrency: config.NOTIFY_CONCURRENCY,
      leaseSecs: config.NOTIFY_LEASE_SECS,
    });
    const alerts = new AlertService({
      dbs,
      metrics: new MetricsReader(dbs, functions.recorder),
      notifications,
      functions: functions.service,
      evalSecs: config.ALERTS_EVAL_SECS,
    });
    const ai = new AiGateway(config, dbs);
    return {
      config,
      dbs,
      kv,
      cipher,
      projects,
      tokens,
      auth: new AuthService(dbs, tokens, {
        // Auth mail goes through the project's notifications: its SMTP settings, retries, quota and logs.
        emailConfigured: async (ref) =>
          missingSettings(await notifications.settings(ref), "email", "") === null,
        send: async (ref, mail) => {
          await notifications.send(ref, {
            channel: "email",
            recipient: mail.to,
            subject: mail.subject,
            body: mail.body,
            metadata: { source: "auth" },
          });
        },
        intervalSecs: config.AUTH_EMAIL_INTERVAL_SECS,
      }, { siteUrl: config.PUBLIC_URL ?? null }),
      admins,
      authLimit: new SharedRateLimit(dbs.control, { perMinute: config.AUTH_RATE_PER_MIN, name: "password" }),
      data,
      realtime,
      queue,
      workBus: dbs.kind === "postgres" ? workBus(dbs.control) : null,
      notifications,
      functions,
      ai,
      jobs,
      cron: new CronService(dbs, jobs),
      alerts,
      health: new HealthService(
        dbs,
        kv,
        // Asked of the default project only while its database is open: a probe must not open a resting one.
        async () =>
          dbs.resting(config.DEFAULT_PROJECT_REF)
            ? undefined
            : ai.corpus.vectorSearch(await dbs.project(config.DEFAULT_PROJECT_REF)),
      ),
      bootstrap: { createdDefaultProject, admin },
    };
  } catch (err) {
    kv?.close();
    await dbs.close();
    throw err;
  }
}

async function ensureDefaultProject(
  config: Config,
  projects: ProjectService,
  dbs: Databases,
): Promise<boolean> {
  const ref = config.DEFAULT_PROJECT_REF;
  if (await projects.find(ref)) {
    await projects.keys(ref).catch(() => {
      throw new Error(
        "Cannot decrypt the project keys: PLATFORM_SECRET differs from the one that wrote this data",
      );
    });
    // Migrate and warm the default project before the first request, unless its database rests: closed cleanly
    // by the previous process with nothing due, it opens (and migrates) on its first call.
    if (!dbs.resting(ref)) await dbs.project(ref);
    return false;
  }
  try {
    await projects.create({
      ref,
      name: "Default project",
      keys: { public_key: config.DEFAULT_PUBLIC_KEY, secret_key: config.DEFAULT_SECRET_KEY },
    });
    return true;
  } catch (err) {
    if ((err as { code?: string }).code === "CONFLICT") return false; // another instance created it
    throw err;
  }
}

/**
 * Called once the platform has started. On PGlite (unless PGLITE_IDLE_SECS is 0), what a request reads from the
 * control database (every project, its keys' owners, its data settings) is read into memory, then the databases
 * the start opened rest as soon as nothing runs on them: at rest the process holds no engine, and a request
 * opens only its project's database. Elsewhere nothing changes.
 */
export async function restAfterStart(platform: Platform): Promise<void> {
  const { dbs, config } = platform;
  if (dbs.kind !== "pglite" || config.PGLITE_IDLE_SECS <= 0) return;
  for (const project of await platform.projects.preload()) await platform.data.settingsOf(project.ref);
  dbs.restSoon();
}

/** Closes realtime connections, KV and every database. */
export async function closePlatform(platform: Platform): Promise<void> {
  await platform.realtime.close();
  await platform.notifications.close();
  await platform.queue.drain();
  await platform.functions.close();
  await platform.ai.close();
  await platform.authLimit.close();
  platform.kv.close();
  await platform.data.close();
  await platform.dbs.close();
}
