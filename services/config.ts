import { resolve } from "node:path";
import { z } from "zod";
import { MIN_PASSWORD_LENGTH, refuseWeakPassword } from "./auth/password_policy.ts";
import { parseTrustedProxies } from "../lib/client_address.ts";
import { DEFAULT_HOISTED, HOISTED_LIMITS, hoistedSettingProblem } from "./data/request_settings.ts";
import { OPENAPI_MODES, type OpenApiMode } from "./data/store.ts";

/**
 * A directory or file path, made absolute at start: nothing the platform opens later may depend on the process's
 * working directory, which any thread of the process can change (Deno.chdir is process-wide).
 */
const absolutePath = z.string().min(1).transform((p) => resolve(p));

const bool = z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1");
const ref = z.string().regex(/^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$/, "must be a project ref");

/** The environment variables of the platform (listed in README.md), validated once at start-up. */
export const Env = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8000),
  HOSTNAME: z.string().default("0.0.0.0"),
  DATA_DIR: absolutePath.prefault("./data"),
  DATABASE_URL: z.string().url().optional(),
  KV_PATH: absolutePath.optional(),
  KV_URL: z.string().url().optional(),
  BASE_DOMAIN: z.string().min(1).default("localhost"),
  PUBLIC_URL: z.string().url().optional(),
  PLATFORM_SECRET: z.string().min(32, "must be at least 32 bytes").optional(),
  // Any address with a domain, single-label ones included: the generated admin is admin@localhost.
  ADMIN_EMAIL: z.email({ pattern: z.regexes.html5Email }).optional(),
  ADMIN_PASSWORD: z.string().min(MIN_PASSWORD_LENGTH, `must be at least ${MIN_PASSWORD_LENGTH} characters`)
    .superRefine(refuseWeakPassword).optional(),
  DEFAULT_PROJECT_REF: ref.default("default"),
  DEFAULT_PUBLIC_KEY: z.string().regex(/^pk_[A-Za-z0-9_-]{16,}$/, "must look like pk_<16+ characters>")
    .optional(),
  DEFAULT_SECRET_KEY: z.string().regex(/^sk_[A-Za-z0-9_-]{16,}$/, "must look like sk_<16+ characters>")
    .optional(),
  LOG_LEVEL: z.enum(["debug", "info", "warn", "error"]).default("info"),
  MAX_BODY_BYTES: z.coerce.number().int().min(1024).default(1024 * 1024),
  BODY_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
  IDLE_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
  REST_GC_SECS: z.coerce.number().int().min(1).max(3600).default(10),
  // On SIGTERM/SIGINT: how long readiness answers 503 while the listener still accepts, then how long the
  // requests in flight may take to finish before the databases are closed anyway.
  DRAIN_DELAY_MS: z.coerce.number().int().min(0).max(600_000).default(0),
  SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).max(600_000).default(10_000),
  PG_POOL_SIZE: z.coerce.number().int().min(1).max(100).default(10),
  PGLITE_MAX_MEMORY_MB: z.coerce.number().int().min(256).max(2048).default(1024),
  PGLITE_RECYCLE_MEMORY_MB: z.coerce.number().int().min(192).max(2048).default(512),
  PGLITE_STALL_MS: z.coerce.number().int().min(500).default(120_000),
  PGLITE_SHARED_BUFFERS_MB: z.coerce.number().int().min(1).max(1024).default(8),
  // Seconds, fractions allowed (tests close databases within a second); 0 keeps every database open.
  PGLITE_IDLE_SECS: z.coerce.number().min(0).max(86_400).default(300),
  // The templates new embedded databases are copied from; unset: <DATA_DIR>/pglite/templates (projects only).
  PGLITE_TEMPLATE_DIR: absolutePath.optional(),
  CORS_ORIGINS: z.string().default("*"),
  AUTH_RATE_PER_MIN: z.coerce.number().int().min(1).default(30),
  AUTH_EMAIL_INTERVAL_SECS: z.coerce.number().int().min(0).max(86_400).default(60),
  TRUSTED_PROXIES: z.string().default("").refine(
    (v) => parseTrustedProxies(v) !== null,
    "must be addresses or CIDR ranges, comma-separated",
  ),
  /** The exposed schemas, comma-separated, the first the default (PostgREST's db-schemas). */
  DATA_SCHEMAS: z.string().default("public").transform((v) =>
    v.split(",").map((s) => s.trim()).filter(Boolean)
  )
    .refine((v) => v.length > 0, "must name at least one schema"),
  /** Platform-wide defaults of the per-project data settings (PostgREST's db-aggregates-enabled, db-plan-enabled, server-timing-enabled). */
  DATA_AGGREGATES: bool.default(false),
  DATA_PLAN: bool.default(false),
  DATA_SERVER_TIMING: bool.default(false),
  /** Defaults of the projects' openapi_mode and openapi_security_active (PostgREST's settings of those names). */
  DATA_OPENAPI_MODE: z.enum(OPENAPI_MODES as [OpenApiMode, ...OpenApiMode[]]).default("follow-privileges"),
  DATA_OPENAPI_SECURITY_ACTIVE: bool.default(false),
  /** Default of the projects' hoisted_tx_settings, comma-separated (PostgREST's db-hoisted-tx-settings). */
  DATA_HOISTED_TX_SETTINGS: z.string().default(DEFAULT_HOISTED.join(","))
    .transform((v) => v.split(",").map((s) => s.trim()).filter(Boolean))
    .refine((v) => v.length <= HOISTED_LIMITS.count && v.every((n) => hoistedSettingProblem(n) === null), {
      message: `must be at most ${HOISTED_LIMITS.count} setting names, comma-separated`,
    }),
  DATA_MAX_ROWS: z.coerce.number().int().min(1).max(1_000_000).default(1000),
  DATA_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(8000),
  QUIET: bool.default(false),
  REALTIME_TOKEN_CHECK_MS: z.coerce.number().int().min(100).max(300_000).default(60_000),
  REALTIME_MAX_BUFFER_BYTES: z.coerce.number().int().min(1024).default(1024 * 1024),
  REALTIME_MAX_CHANNELS: z.coerce.number().int().min(1).max(10_000).default(100),
  REALTIME_MAX_MESSAGE_BYTES: z.coerce.number().int().min(256).max(16 * 1024 * 1024).default(256 * 1024),
  REALTIME_SSE_HEARTBEAT_MS: z.coerce.number().int().min(100).default(15_000),
  NOTIFY_ALLOW_PRIVATE_NET: z.string().default(""),
  NOTIFY_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(32),
  NOTIFY_LEASE_SECS: z.coerce.number().int().min(1).max(3600).default(30),
  NOTIFY_SWEEP_SECS: z.coerce.number().int().min(0).max(3600).default(15),
  WORKERS: bool.default(true),
  // Edge functions (docs/functions.md)
  FUNCTIONS_ALLOW_PRIVATE_NET: z.string().default(""),
  FUNCTIONS_MAX_HOSTS: z.coerce.number().int().min(1).max(1000).default(16),
  FUNCTIONS_MAX_MEMORY_MB: z.coerce.number().int().min(16).default(4096),
  FUNCTIONS_MAX_HOSTS_PER_PROJECT: z.coerce.number().int().min(1).optional(),
  FUNCTIONS_MAX_MEMORY_MB_PER_PROJECT: z.coerce.number().int().min(16).optional(),
  FUNCTIONS_IDLE_SECS: z.coerce.number().int().min(1).default(300),
  FUNCTIONS_CODE_CACHE_MB: z.coerce.number().min(0.01).default(64),
  FUNCTIONS_TIMEOUT_MARGIN_MS: z.coerce.number().int().min(100).max(60_000).default(1000),
  FUNCTIONS_LOG_LINES: z.coerce.number().int().min(10).max(100_000).default(1000),
  // Package imports, resolved and bundled at deploy (docs/functions.md "Imports")
  FUNCTIONS_MAX_BUNDLE_MB: z.coerce.number().min(0.01).max(1024).default(20),
  FUNCTIONS_BUILD_TIMEOUT_SECS: z.coerce.number().int().min(1).max(600).default(60),
  FUNCTIONS_PACKAGE_CACHE_DIR: absolutePath.optional(),
  FUNCTIONS_PACKAGE_CACHE_MB: z.coerce.number().int().min(64).default(2048),
  FUNCTIONS_NPM_REGISTRY: z.string().url().default("https://registry.npmjs.org/"),
  FUNCTIONS_IMPORT_HOSTS: z.string().default(
    "jsr.io,deno.land,esm.sh,cdn.jsdelivr.net,raw.githubusercontent.com,gist.githubusercontent.com",
  ),
  INVOKE_RATE_PER_MIN: z.coerce.number().int().min(1).default(600),
  INVOKE_MAX_BODY_BYTES: z.coerce.number().int().min(1024).default(256 * 1024),
  PLAN_INVOCATIONS_PER_MONTH: z.coerce.number().int().min(0).default(1_000_000),
  // AI gateway (docs/ai.md). No AI_BASE_URL and no AI_PROVIDERS: no chat provider (503), and
  // embeddings come from the built-in lexical embedder.
  AI_BASE_URL: z.string().url().optional(),
  AI_API_KEY: z.string().optional(),
  AI_CHAT_MODEL: z.string().min(1).default("gpt-4o-mini"),
  AI_EMBEDDING_MODEL: z.string().min(1).optional(),
  AI_PROVIDERS: z.string().optional(),
  AI_CACHE_THRESHOLD: z.coerce.number().min(0).max(1).default(0.95),
  AI_CACHE_TTL_SECS: z.coerce.number().int().min(1).default(3600),
  AI_CACHE_MAX_ENTRIES: z.coerce.number().int().min(1).default(10_000),
  AI_TIMEOUT_MS: z.coerce.number().int().min(100).default(60_000),
  AI_MAX_RETRIES: z.coerce.number().int().min(0).max(10).default(2),
  AI_SESSION_BUDGET: z.coerce.number().int().min(1).default(20_000),
  AI_SESSION_TTL_SECS: z.coerce.number().int().min(10).max(86_400).default(900),
  AI_VECTOR_STORE: z.enum(["auto", "pgvector", "hnsw", "array"]).default("auto"),
  AI_SQL_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5_000),
  AI_SQL_MAX_COST: z.coerce.number().min(1).default(1_000_000),
  AI_USER_RATE_PER_MIN: z.coerce.number().int().min(0).default(60),
  AI_SESSION_MINT_PER_MIN: z.coerce.number().int().min(0).default(10),
  // Jobs and cron (docs/jobs.md)
  JOBS_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(32),
  JOBS_LEASE_SECS: z.coerce.number().int().min(1).max(3600).default(30),
  JOBS_SWEEP_SECS: z.coerce.number().int().min(0).max(3600).default(15),
  JOBS_RETENTION_DAYS: z.coerce.number().int().min(0).max(3650).default(7),
  // Instances sharing one PostgreSQL pull due jobs and notifications from the tables (docs/jobs.md)
  WORK_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(200),
  // Alerts (docs/alerts.md)
  ALERTS_EVAL_SECS: z.coerce.number().int().min(1).max(86_400).default(30),
});

/** The validated configuration, read once by main.ts and passed down. */
export type Config = z.infer<typeof Env>;

/** Parses and validates the environment; throws one readable error naming every bad variable. */
export function loadConfig(env: Record<string, string | undefined> = Deno.env.toObject()): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ""));
  const parsed = Env.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
    throw new Error(`Invalid configuration: ${lines.join("; ")}`);
  }
  return parsed.data;
}
