import { randomToken, sha256Hex } from "../../lib/crypto.ts";
import { errors } from "../../lib/errors.ts";

/** Options of {@linkcode AiSessions}. */
export interface AiSessionsOptions {
  /** Seconds a ticket lives by default (`AI_SESSION_TTL_SECS`, 900). */
  ttlSecs: number;
  /** Tokens a ticket may spend by default (`AI_SESSION_BUDGET`). */
  budget: number;
}

/** A session as stored in KV, under the SHA-256 of its ticket. */
export interface AiSession {
  project: string;
  /** Tokens not yet spent nor reserved by a call in flight. */
  budget_remaining: number;
  /** Tokens reserved by calls in flight (absent: none). */
  held?: number;
  /** Epoch milliseconds. */
  expires_at: number;
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
 * AiSessions mints short-lived tickets with a token budget and debits them atomically in
 * Deno KV: every change is a compare-and-set on the session's versionstamp, retried on conflict, so two
 * instances or two concurrent calls never spend the same tokens twice. A call reserves tokens before it
 * runs (and is bounded to it) and settles after with what it used; a spent budget is 403 QUOTA_EXCEEDED.
 */
export class AiSessions {
  constructor(private readonly kv: Deno.Kv, private readonly options: AiSessionsOptions) {}

  private key(hash: string): Deno.KvKey {
    return ["ai_session", hash];
  }

  /** Mints a ticket for `project`. */
  async create(
    project: string,
    overrides: { budget?: number; ttlSecs?: number } = {},
  ): Promise<MintedSession> {
    const ticket = `${TICKET_PREFIX}${randomToken(32)}`;
    const ttlMs = (overrides.ttlSecs ?? this.options.ttlSecs) * 1000;
    const session: AiSession = {
      project,
      budget_remaining: overrides.budget ?? this.options.budget,
      expires_at: Date.now() + ttlMs,
    };
    await this.kv.set(this.key(await sha256Hex(ticket)), session, { expireIn: ttlMs });
    return {
      ticket,
      expires_at: new Date(session.expires_at).toISOString(),
      budget_remaining: session.budget_remaining,
    };
  }

  /** The live session of a ticket; 401 INVALID_TOKEN when unknown or expired. */
  async get(ticket: string): Promise<{ hash: string; session: AiSession }> {
    if (!ticket.startsWith(TICKET_PREFIX) || ticket.length > 200) throw invalid();
    const hash = await sha256Hex(ticket);
    const entry = await this.kv.get<AiSession>(this.key(hash));
    if (!entry.value || entry.value.expires_at <= Date.now()) throw invalid();
    return { hash, session: entry.value };
  }

  /** Applies `change` to the remaining budget atomically; `change` returns the new budget and a result. */
  private async update<T>(
    hash: string,
    change: (s: AiSession) => { budget: number; held: number; result: T },
  ): Promise<T> {
    for (let attempt = 0; attempt < 50; attempt++) {
      const entry = await this.kv.get<AiSession>(this.key(hash));
      const s = entry.value;
      if (!s || s.expires_at <= Date.now()) throw invalid();
      const { budget, held, result } = change(s);
      const next: AiSession = { ...s, budget_remaining: budget, held };
      const ok = await this.kv.atomic()
        .check(entry)
        .set(this.key(hash), next, { expireIn: Math.max(1, s.expires_at - Date.now()) })
        .commit();
      if (ok.ok) return result;
    }
    throw errors.unavailable("AI session is too busy: retry");
  }

  /**
   * Reserves what a call may spend: `want` at most, or all that is left when that is less, but never less
   * than `need`. Refused with 403 QUOTA_EXCEEDED when the budget cannot cover `need`, or 429 (retry) when it
   * could once the calls in flight holding part of it settle.
   */
  async reserve(hash: string, ask: ReservationRequest): Promise<Reservation> {
    const need = Math.max(1, Math.ceil(ask.need));
    const reserved = await this.update(hash, (s) => {
      const left = s.budget_remaining;
      const held = s.held ?? 0;
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
      return { budget: left - take, held: held + take, result: take };
    });
    return { ticketHash: hash, reserved };
  }

  /**
   * Settles a reservation with the tokens used: refunds the rest. A call is bounded to its reservation; should
   * a provider spend more anyway, the excess is debited down to zero, never below.
   */
  async settle(r: Reservation, used: number): Promise<number> {
    return await this.update(r.ticketHash, (s) => {
      const budget = Math.max(0, s.budget_remaining + r.reserved - Math.max(0, Math.ceil(used)));
      return { budget, held: Math.max(0, (s.held ?? 0) - r.reserved), result: budget };
    });
  }
}
