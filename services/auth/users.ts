import type { Databases } from "../../db/databases.ts";
import { type Queryable, sqlState } from "../../db/driver.ts";
import { randomToken, sha256Hex, timingSafeEqual } from "../../lib/crypto.ts";
import { errors } from "../../lib/errors.ts";
import { DUMMY_HASH, hashPassword, verifyPassword } from "./passwords.ts";
import { passwordWeakness } from "./password_policy.ts";
import type { Project } from "../projects/projects.ts";
import { AUTH_CODE_TTL_SECS, authCodeHash, pkceErrors, s256 } from "./pkce.ts";
import {
  type AuthMailer,
  newRecoverySecrets,
  PKCE_TOKEN_PREFIX,
  RECOVERY_MAX_ATTEMPTS,
  RECOVERY_TTL_SECS,
  recoveryCodeHash,
  recoveryLink,
  recoveryLinkHash,
  recoveryMail,
} from "./recovery.ts";
import { redirectTarget } from "./redirects.ts";
import { authSettings } from "./settings.ts";
import { authStore, type UserDetailsRow, type UserRow } from "./store.ts";
import type { TokenService, UserClaims } from "./tokens.ts";

/** A user as the API shows it: never with a password or a hash. */
export interface User {
  id: string;
  email: string;
  created_at: string;
  user_metadata: Record<string, unknown>;
}

/** A user with the dates of its last update and sign-in (GoTrue's user object shows them). */
export interface UserDetails extends User {
  updated_at: string;
  last_sign_in_at: string | null;
}

/** What a user may change of itself: each absent field is kept. */
export interface UserUpdate {
  email?: string;
  /** A new password: the policy of sign-up applies; the user's other sessions are revoked. */
  password?: string;
  /** Merged into `user_metadata`; a key set to null is removed. */
  data?: Record<string, unknown>;
}

/** A session as the API returns it (Supabase's shape). */
export interface Session {
  access_token: string;
  token_type: "bearer";
  expires_in: number;
  expires_at: number;
  refresh_token: string;
}

/** What sign-up and both token grants answer. */
export interface UserSession {
  user: User;
  session: Session;
}

function toUser(row: UserRow): User {
  return {
    id: row.id,
    email: row.email,
    created_at: new Date(row.created_at).toISOString(),
    user_metadata: row.user_metadata ?? {},
  };
}

function toDetails(row: UserDetailsRow): UserDetails {
  return {
    id: row.id,
    email: row.email,
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
    last_sign_in_at: row.last_sign_in_at === null ? null : new Date(row.last_sign_in_at).toISOString(),
    user_metadata: row.user_metadata ?? {},
  };
}

/** Refuses a new password the policy refuses (400, reason `weak_password` with the rule broken). */
function refuseWeak(password: string): void {
  const weakness = passwordWeakness(password);
  if (weakness) throw errors.weakPassword(weakness.message, [weakness.rule]);
}

/** How a recovery is verified: the code of the mail with its email, or the mail's token hash. */
export type RecoveryProof = { email: string; code: string } | { tokenHash: string };

/** Where a recovery mail's link leads: the API address it is served on, the wished landing, PKCE's challenge. */
export interface RecoveryOptions {
  /** The project's API address (the link is `<apiUrl>/auth/v1/verify?…`). */
  apiUrl?: string;
  /** Where the client wants the link to land; used only when the project allows it. */
  redirectTo?: string;
  /** The PKCE challenge to keep, as S256 (services/auth/pkce.ts). */
  challenge?: string;
}

/** What a recovery link gives: a session (implicit flow) or an auth code to exchange (PKCE). */
export type LinkOutcome = { session: UserSession } | { authCode: string };

/** A refresh's failure (with the session it revoked, on reuse) or its new session. */
type RefreshOutcome = { error: string; reason: string; revoked?: string } | {
  error?: undefined;
  value: UserSession;
};

/**
 * AuthService signs users up and in, rotates refresh tokens (a reused one revokes its whole session, as
 * GoTrue does) and signs them out. Users live in the project's own `auth.users`.
 */
export class AuthService {
  /** The per-project URL settings recovery links land on. */
  readonly settings: ReturnType<typeof authSettings>;

  constructor(
    private readonly dbs: Databases,
    private readonly tokens: TokenService,
    private readonly mailer?: AuthMailer,
    defaults: { siteUrl: string | null } = { siteUrl: null },
  ) {
    this.settings = authSettings(dbs, defaults);
  }

  /** True when the project can send auth mail (its notification settings have an SMTP host and a sender). */
  async emailConfigured(project: Project): Promise<boolean> {
    return this.mailer !== undefined && await this.mailer.emailConfigured(project.ref);
  }

  /**
   * Starts a password recovery: mails the user of `email` a one-time code and token hash (replacing any earlier
   * ones), and a link when the project has an address for it to land on. An unknown email does nothing and
   * answers the same (no account enumeration); 422 `email_provider_disabled` when the project cannot send email.
   */
  async recover(project: Project, email: string, options: RecoveryOptions = {}): Promise<void> {
    if (!this.mailer || !await this.mailer.emailConfigured(project.ref)) throw emailDisabled();
    const db = await this.dbs.project(project.ref);
    const row = await authStore.userByEmail(db, email);
    const secrets = newRecoverySecrets();
    const [codeHash, linkHash] = await Promise.all([
      recoveryCodeHash(row?.id ?? "", secrets.code),
      recoveryLinkHash(secrets.tokenHash),
    ]);
    if (!row) return;
    const wait = await authStore.putRecovery(
      db,
      row.id,
      { code: codeHash, link: linkHash, challenge: options.challenge },
      RECOVERY_TTL_SECS,
      this.mailer.intervalSecs,
    );
    // As GoTrue: one recovery mail per user per interval, so the endpoint cannot flood a mailbox.
    if (wait > 0) throw errors.emailRateLimited(wait);
    const landing = redirectTarget(await this.settings.resolve(project.ref), options.redirectTo);
    const link = landing && options.apiUrl
      ? recoveryLink(options.apiUrl, secrets.tokenHash, landing, options.challenge !== undefined)
      : undefined;
    await this.mailer.send(project.ref, recoveryMail(row.email, secrets, link));
  }

  /**
   * Spends a recovery by its link's token: a session of its user, or for a PKCE recovery an auth code (stored
   * hashed, valid for {@linkcode AUTH_CODE_TTL_SECS}). A spent, expired or unknown token is 403 `otp_expired`.
   */
  async verifyRecoveryLink(project: Project, token: string): Promise<LinkOutcome> {
    const tokenHash = token.startsWith(PKCE_TOKEN_PREFIX) ? token.slice(PKCE_TOKEN_PREFIX.length) : token;
    const db = await this.dbs.project(project.ref);
    const outcome = await db.transaction(async (tx): Promise<LinkOutcome | null> => {
      const spent = await authStore.takeRecoveryOfLink(tx, await recoveryLinkHash(tokenHash));
      if (!spent) return null;
      if (spent.challenge === null) return { session: await this.startSession(tx, project, spent.user) };
      const authCode = crypto.randomUUID();
      await authStore.insertFlowState(
        tx,
        { authCodeHash: await authCodeHash(authCode), userId: spent.user.id, challenge: spent.challenge },
        AUTH_CODE_TTL_SECS,
      );
      return { authCode };
    });
    if (!outcome) throw errors.forbidden("Email link is invalid or has expired", "otp_expired");
    return outcome;
  }

  /**
   * PKCE's exchange (`grant_type=pkce`): the session of an auth code whose verifier matches its challenge. The
   * code works once; GoTrue's 404 `flow_state_not_found` for an unknown or spent code, 422 `flow_state_expired`,
   * 400 `bad_code_verifier` (the code stays valid: a verifier is not guessable).
   */
  async exchangeAuthCode(project: Project, authCode: string, verifier: string): Promise<UserSession> {
    const db = await this.dbs.project(project.ref);
    const hash = await authCodeHash(authCode);
    const challenge = await s256(verifier);
    const outcome = await db.transaction(async (tx): Promise<UserSession | Error> => {
      const flow = await authStore.lockFlowState(tx, hash);
      if (!flow) return pkceErrors.notFound();
      if (flow.expired) {
        await authStore.deleteFlowState(tx, hash);
        return pkceErrors.expired();
      }
      if (!timingSafeEqual(challenge, flow.code_challenge)) return pkceErrors.badVerifier();
      await authStore.deleteFlowState(tx, hash);
      const user = await authStore.userById(tx, flow.user_id);
      return user ? await this.startSession(tx, project, user) : pkceErrors.notFound();
    });
    if (outcome instanceof Error) throw outcome;
    return outcome;
  }

  /**
   * Spends a recovery and starts a session of its user (who may then set a new password). A wrong, spent or
   * expired code or token hash is 403 `otp_expired`; after {@linkcode RECOVERY_MAX_ATTEMPTS} wrong codes the
   * recovery is spent.
   */
  async verifyRecovery(project: Project, proof: RecoveryProof): Promise<UserSession> {
    const db = await this.dbs.project(project.ref);
    // The transaction returns null instead of throwing, so that a counted wrong code stays counted.
    const result = await db.transaction(async (tx): Promise<UserSession | null> => {
      if ("tokenHash" in proof) {
        const hash = proof.tokenHash.startsWith(PKCE_TOKEN_PREFIX)
          ? proof.tokenHash.slice(PKCE_TOKEN_PREFIX.length)
          : proof.tokenHash;
        const spent = await authStore.takeRecoveryOfLink(tx, await recoveryLinkHash(hash));
        return spent ? await this.startSession(tx, project, spent.user) : null;
      }
      const recovery = await authStore.lockRecoveryOfEmail(tx, proof.email);
      if (!recovery) return null;
      const matches = timingSafeEqual(
        await recoveryCodeHash(recovery.user_id, proof.code),
        recovery.code_hash,
      );
      if (recovery.expired || matches || recovery.attempts + 1 >= RECOVERY_MAX_ATTEMPTS) {
        await authStore.deleteRecovery(tx, recovery.user_id);
      } else {
        await authStore.missRecovery(tx, recovery.user_id);
      }
      if (recovery.expired || !matches) return null;
      const user = await authStore.userByEmail(tx, proof.email);
      return user ? await this.startSession(tx, project, user) : null;
    });
    if (!result) throw errors.forbidden("Token has expired or is invalid", "otp_expired");
    return result;
  }

  /** Creates a user and its first session; 409 CONFLICT when the email is taken. */
  async signUp(project: Project, input: { email: string; password: string; data?: Record<string, unknown> }) {
    refuseWeak(input.password);
    const db = await this.dbs.project(project.ref);
    const hash = await hashPassword(input.password);
    try {
      return await db.transaction(async (tx) => {
        const row = await authStore.insertUser(tx, input.email.toLowerCase(), hash, input.data ?? {});
        return await this.startSession(tx, project, row);
      });
    } catch (err) {
      if (sqlState(err) === "23505") {
        throw errors.conflict(
          "A user with this email address has already been registered",
          "user_already_exists",
        );
      }
      throw err;
    }
  }

  /** The password grant; the same 401 for an unknown email and a wrong password. */
  async signInWithPassword(project: Project, email: string, password: string): Promise<UserSession> {
    const db = await this.dbs.project(project.ref);
    const row = await authStore.userByEmail(db, email);
    const ok = await verifyPassword(password, row?.password_hash ?? DUMMY_HASH);
    if (!row || !ok) throw errors.unauthorized("Invalid login credentials", "invalid_credentials");
    return await db.transaction((tx) => this.startSession(tx, project, row));
  }

  /** The refresh grant: the token is spent and replaced; spending it twice revokes the session. */
  async refresh(project: Project, refreshToken: string): Promise<UserSession> {
    const db = await this.dbs.project(project.ref);
    const hash = await sha256Hex(refreshToken);
    // The transaction returns the failure instead of throwing it, so that a detected reuse stays revoked.
    const outcome = await db.transaction(
      async (tx): Promise<RefreshOutcome> => {
        const token = await authStore.lockRefreshToken(tx, hash);
        if (!token || token.revoked_at) {
          return { error: "Refresh token is invalid or revoked", reason: "refresh_token_not_found" };
        }
        if (token.used_at) {
          await authStore.revokeSession(tx, token.session_id);
          return {
            error: "Refresh token was already used; the session is revoked",
            reason: "refresh_token_already_used",
            revoked: token.session_id,
          };
        }
        await authStore.spendRefreshToken(tx, hash);
        const row = await authStore.userOfSession(tx, token.session_id);
        if (!row) return { error: "Refresh token is invalid or revoked", reason: "refresh_token_not_found" };
        return { error: undefined, value: await this.issue(tx, project, row, token.session_id) };
      },
    );
    if (outcome.error !== undefined) {
      if (outcome.revoked) this.tokens.revoked.add(project.ref, [outcome.revoked]);
      throw errors.invalidToken(outcome.error, outcome.reason);
    }
    return outcome.value;
  }

  /** The user of a verified token, if its session is still live; 401 otherwise. */
  async getUser(project: Project, claims: UserClaims): Promise<User> {
    const db = await this.dbs.project(project.ref);
    const row = await authStore.userWithLiveSession(db, claims.sub, claims.session_id);
    if (!row) throw sessionEnded();
    return toUser(row);
  }

  /**
   * A user with its update and last sign-in dates; with `sessionId`, only while that session of theirs is live
   * (401 once it has ended).
   */
  async details(project: Project, userId: string, sessionId?: string): Promise<UserDetails> {
    const db = await this.dbs.project(project.ref);
    if (sessionId !== undefined && !await authStore.userWithLiveSession(db, userId, sessionId)) {
      throw sessionEnded();
    }
    const row = await authStore.userDetails(db, userId);
    if (!row) throw sessionEnded();
    return toDetails(row);
  }

  /**
   * Changes the signed-in user's email, password or metadata: the password policy of sign-up applies, a new
   * password revokes the user's other sessions (as GoTrue does), a taken email is 409 CONFLICT.
   */
  async updateUser(project: Project, claims: UserClaims, update: UserUpdate): Promise<UserDetails> {
    if (update.password !== undefined) refuseWeak(update.password);
    const db = await this.dbs.project(project.ref);
    const passwordHash = update.password === undefined ? undefined : await hashPassword(update.password);
    let ended: string[] = [];
    try {
      await db.transaction(async (tx) => {
        if (!await authStore.userWithLiveSession(tx, claims.sub, claims.session_id)) throw sessionEnded();
        await authStore.updateUser(tx, claims.sub, {
          email: update.email?.toLowerCase(),
          passwordHash,
          data: update.data,
        });
        if (passwordHash) ended = await authStore.revokeSessions(tx, "others", claims.sub, claims.session_id);
      });
    } catch (err) {
      if (sqlState(err) === "23505") {
        throw errors.conflict("A user with this email address has already been registered", "email_exists");
      }
      throw err;
    }
    this.tokens.revoked.add(project.ref, ended);
    return await this.details(project, claims.sub, claims.session_id);
  }

  /**
   * Ends the token's session (`local`), every session of its user (`global`), or every one but the token's
   * (`others`); their access tokens stop working.
   */
  async signOut(project: Project, claims: UserClaims, scope: "local" | "global" | "others"): Promise<void> {
    const db = await this.dbs.project(project.ref);
    const ended = await authStore.revokeSessions(db, scope, claims.sub, claims.session_id);
    this.tokens.revoked.add(project.ref, ended);
  }

  private async startSession(tx: Queryable, project: Project, user: UserRow): Promise<UserSession> {
    return await this.issue(tx, project, user, await authStore.insertSession(tx, user.id));
  }

  private async issue(
    tx: Queryable,
    project: Project,
    user: UserRow,
    sessionId: string,
  ): Promise<UserSession> {
    const refreshToken = `rt_${randomToken(32)}`;
    await authStore.insertRefreshToken(tx, await sha256Hex(refreshToken), sessionId);
    const access = await this.tokens.sign(project, user, sessionId);
    return {
      user: toUser(user),
      session: { ...access, token_type: "bearer", refresh_token: refreshToken },
    };
  }
}

function emailDisabled() {
  return errors.validation(
    "Email sending is not configured: set email.host and email.from with PATCH /v1/notifications/settings",
    "email_provider_disabled",
  );
}

function sessionEnded() {
  return errors.invalidToken("Session has ended: sign in again", "session_not_found");
}
