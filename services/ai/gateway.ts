import type { Databases } from "../../db/databases.ts";
import type { Config } from "../config.ts";
import { type CachedAnswer, ChatService } from "./chat.ts";
import { Corpus } from "./corpus.ts";
import { Embedder } from "./embedder.ts";
import { Nl2Sql } from "./nl2sql.ts";
import { providerConfigs, Providers } from "./providers.ts";
import { RagService } from "./rag.ts";
import { SemanticCache } from "./semantic_cache.ts";
import { AiSessions } from "./sessions.ts";
import { UsageLog } from "./usage_log.ts";
import { UserLimit } from "./user_limit.ts";

/** AiGateway holds the parts of the AI gateway (docs/ai.md), built once from the configuration. */
export class AiGateway {
  readonly providers: Providers;
  readonly embedder: Embedder;
  readonly cache: SemanticCache<CachedAnswer>;
  readonly usage: UsageLog;
  readonly chat: ChatService;
  readonly corpus: Corpus;
  readonly rag: RagService;
  readonly nl2sql: Nl2Sql;
  readonly sessions: AiSessions;
  readonly userLimit: UserLimit;
  /** Session mints with the public key, per project and client address (or user) a minute. */
  readonly mintLimit: UserLimit;

  constructor(readonly config: Config, readonly dbs: Databases) {
    this.providers = new Providers(providerConfigs(config), {
      timeoutMs: config.AI_TIMEOUT_MS,
      maxRetries: config.AI_MAX_RETRIES,
    });
    this.embedder = new Embedder(this.providers);
    this.cache = new SemanticCache({
      threshold: config.AI_CACHE_THRESHOLD,
      ttlMs: config.AI_CACHE_TTL_SECS * 1000,
      maxEntriesPerProject: config.AI_CACHE_MAX_ENTRIES,
    });
    this.usage = new UsageLog(dbs);
    this.chat = new ChatService({
      providers: this.providers,
      embedder: this.embedder,
      cache: this.cache,
      usage: this.usage,
    });
    this.corpus = new Corpus(config.AI_VECTOR_STORE);
    this.rag = new RagService({
      dbs,
      corpus: this.corpus,
      embedder: this.embedder,
      providers: this.providers,
      usage: this.usage,
    });
    this.nl2sql = new Nl2Sql({
      dbs,
      providers: this.providers,
      usage: this.usage,
      timeoutMs: config.AI_SQL_TIMEOUT_MS,
      maxCost: config.AI_SQL_MAX_COST,
    });
    this.userLimit = new UserLimit(dbs.control, {
      perMinute: config.AI_USER_RATE_PER_MIN,
      scope: "ai_user",
      what: "AI calls",
    });
    this.mintLimit = new UserLimit(dbs.control, {
      perMinute: config.AI_SESSION_MINT_PER_MIN,
      scope: "ai_mint",
      what: "AI session mints",
    });
    this.sessions = new AiSessions(dbs.control, {
      ttlSecs: config.AI_SESSION_TTL_SECS,
      budget: config.AI_SESSION_BUDGET,
    });
  }

  /** Waits for background writes (usage counters, rate limit counts). */
  async close(): Promise<void> {
    await this.usage.flush();
    await this.userLimit.close();
    await this.mintLimit.close();
  }
}
