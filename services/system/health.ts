import type { Databases } from "../../db/databases.ts";
import { pgliteHealth } from "../../db/pglite_health.ts";
import { errors } from "../../lib/errors.ts";
import { describeError, log } from "../../lib/log.ts";
import { valueWithin } from "../../lib/deadline.ts";
import type { VectorSearch } from "../ai/corpus.ts";

/** How long readiness waits for the control database. */
const READY_TIMEOUT_MS = 5000;

/** What `/v1/ready` reports when every part answers. */
export interface Readiness {
  /** The embedded databases open in this process (PGlite only). */
  pglite?: { instances: number; restarts: number; stuck_threads: number };
  /** What serves semantic search in the default project's database. */
  vector?: VectorSearch;
}

/** Readiness of the platform's parts: the control database, every embedded database and Deno KV. */
export class HealthService {
  private draining = false;

  constructor(
    private readonly dbs: Databases,
    private readonly kv: Deno.Kv,
    /** What serves semantic search, when it can be told without opening a resting database. */
    private readonly vectorSearch?: () => Promise<VectorSearch | undefined>,
  ) {}

  /** From now on readiness answers 503: the process is stopping, and a load balancer should stop sending. */
  drain(): void {
    this.draining = true;
  }

  /** Resolves when every part answers; throws 503 naming the first that does not, or when draining. */
  async ready(): Promise<Readiness> {
    if (this.draining) throw errors.unavailable("The platform is shutting down");
    try {
      // A resting embedded database is ready (the next call opens it), and a probe is no use: it neither opens
      // a resting one nor keeps an open one from resting.
      if (!this.dbs.controlResting()) {
        const probe = this.dbs.inBackground(() => this.dbs.control.query("select 1")).then(() => true);
        if (!await valueWithin(probe, READY_TIMEOUT_MS, false)) {
          throw new Error(`no answer within ${READY_TIMEOUT_MS} ms`);
        }
      }
    } catch (err) {
      log.warn("readiness: database unreachable", { cause: describeError(err) });
      throw errors.unavailable("Database is unreachable");
    }
    const embedded = this.dbs.kind === "pglite" ? pgliteHealth() : null;
    const down = embedded?.instances.find((i) => i.state !== "ok");
    if (down) {
      throw errors.unavailable(
        `Embedded database "${down.name}" is restarting (${down.last_restart?.reason ?? "unknown"})`,
      );
    }
    try {
      await this.kv.get(["platform", "ready"]);
    } catch (err) {
      log.warn("readiness: kv unreachable", { cause: describeError(err) });
      throw errors.unavailable("Deno KV is unreachable");
    }
    const vector = await this.vectorSearch?.().catch(() => undefined);
    if (!embedded) return vector ? { vector } : {};
    return {
      ...(vector ? { vector } : {}),
      pglite: {
        instances: embedded.instances.length,
        restarts: embedded.instances.reduce((n, i) => n + i.restarts, 0),
        stuck_threads: embedded.stuck_threads,
      },
    };
  }
}
