import type { Db } from "../../db/driver.ts";
import { randomToken, sha256Hex } from "../../lib/crypto.ts";
import { errors } from "../../lib/errors.ts";
import { describeError, log } from "../../lib/log.ts";
import { type AiSessionRow, sessionStore } from "./store.ts";

/** Options of {@linkcode AiSessions}. */
export interface AiSessionsOptions {
  /** Seconds a ticket lives by default (`AI_SESSION_TTL_SECS`, 900). */
  ttlSecs: number;
  /** Tokens a ticket may spend by default (`AI_SESSION_BUDGET`). */
  budget: number;
}

/** What minting a session answers. */
export interface MintedSession {
  ticket: string;
  expires_at: string;
  budget_remaining: number;
}

/** A reservation taken before a call, settled after it with the tokens really used. */
export interface Reservation {
  ticketHash: string;
  /** The project of the ticket. */
  project: string;
  /** Tokens the call may spend at most: it must be bounded to them. */
  reserved: number;
}

/** What a call asks to reserve: `want` at most (may be Infinity), and at least `need` or it cannot run. */
export interface ReservationRequest {
  want: number;
  need: number;
}

/** The prefix of AI session tickets. */
export const TICKET_PREFIX = "ait_";

/** 403 QUOTA_EXCEEDED (type `quota`): the session's budget cannot pay for the call. */
export const quotaExceeded = (message = "AI session budget is spent: mint a new session") =>
  errors.quotaExceeded(message);
const invalid = () => errors.invalidToken("AI session ticket is invalid or expired");

/**
 * AiSessions mints short-lived tickets with a token budget and debits them in the control database
 * (`platform.ai_sessions`), the state of record of every instance: each change locks the session's row for one
 * transaction, so two instances or two concurrent calls never spend the same tokens twice, and a ticket that is
 * revoked or expired stops working on every instance at once. A call reserves tokens before it runs (and is
 * bounded to it) and settles after with what it used; a spent budget is 403 QUOTA_EXCEEDED.
 */
export class AiSessions {
  private prunedAt = 0;

  constructor(private readonly control: Db, private readonly options: AiSessionsOptions) {}

  /** Mints a ticket for `project`. */
  async create(
    project: string,
    overrides: { budget?: number; ttlSecs?: number } = {},
  ): Promise<MintedSession> {
    const ticket = `${TICKET_PREFIX}${randomToken(32)}`;
    const expiresAt = new Date(Date.now() + (overrides.ttlSecs ?? this.options.ttlSecs) * 1000);
    const budget = overrides.budget ?? this.options.budget;
    await sessionStore.insert(this.control, await sha256Hex(ticket), project, budget, expiresAt);
    await this.prune();
    return { ticket, expires_at: expiresAt.toISOString(), budget_remaining: budget };
  }

  /** The hash a ticket is stored under; 401 INVALID_TOKEN when it cannot be a ticket. */
  private async hashOf(ticket: string): Promise<string> {
    if (!ticket.startsWith(TICKET_PREFIX) || ticket.length > 200) throw invalid();
    return await sha256Hex(ticket);
  }

  /** Applies `change` to a live session in one transaction; 401 INVALID_TOKEN when it is gone or expired. */
  private async update<T>(
    hash: string,
    change: (s: AiSessionRow) => { budget: number; held: number; result: T },
  ): Promise<T> {
    return await this.control.transaction(async (tx) => {
      const s = await sessionStore.lockLive(tx, hash);
      if (!s) throw invalid();
      const { budget, held, result } = change(s);
      await sessionStore.setBudget(tx, hash, budget, held);
      return result;
    });
  }

  /**
   * Reserves what a call with `ticket` may spend: `want` at most, or all that is left when that is less, but
   * never less than `need`. 401 INVALID_TOKEN for a ticket unknown, revoked or expired; 403 QUOTA_EXCEEDED when
   * the budget cannot cover `need`, or 429 (retry) when it could once the calls in flight holding part of it
   * settle.
   */
  async reserve(ticket: string, ask: ReservationRequest): Promise<Reservation> {
    const hash = await this.hashOf(ticket);
    const need = Math.max(1, Math.ceil(ask.need));
    return await this.update(hash, (s) => {
      const left = s.budget_remaining;
      const held = s.held;
      if (left < need) {
        if (left <= 0 && held <= 0) throw quotaExceeded();
        if (held > 0 && left + held >= need) {
          throw errors.rateLimited(
            "The rest of this AI session's budget is reserved by a call in flight: retry when it ends, " +
              "or send a smaller max_tokens",
            1,
          );
        }
        throw quotaExceeded(
          `AI session budget is too low for this call: it may need up to ${need} tokens and ` +
            `${left} are left: send a shorter prompt or mint a new session`,
        );
      }
      const take = Math.min(left, Math.max(need, Math.ceil(ask.want)));
      return {
        budget: left - take,
        held: held + take,
        result: { ticketHash: hash, project: s.project_ref, reserved: take },
      };
    });
  }

  /**
   * Settles a reservation with the tokens used: refunds the rest. A call is bounded to its reservation; should
   * a provider spend more anyway, the excess is debited down to zero, never below.
   */
  async settle(r: Reservation, used: number): Promise<number> {
    return await this.update(r.ticketHash, (s) => {
      const budget = Math.max(0, s.budget_remaining + r.reserved - Math.max(0, Math.ceil(used)));
      return { budget, held: Math.max(0, s.held - r.reserved), result: budget };
    });
  }

  /** Revokes `ticket` on every instance; 401 INVALID_TOKEN when it is unknown or already gone. */
  async revoke(ticket: string): Promise<void> {
    if (!await sessionStore.delete(this.control, await this.hashOf(ticket))) throw invalid();
  }

  /** Deletes the sessions that have expired, at most once a minute. */
  private async prune(): Promise<void> {
    const now = Date.now();
    if (now - this.prunedAt < 60_000) return;
    this.prunedAt = now;
    await sessionStore.prune(this.control, new Date(now)).catch((err) =>
      log.warn("cannot delete expired AI sessions", { cause: describeError(err) })
    );
  }
}
