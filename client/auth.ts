import type { Schemas } from "./api_types.ts";
import { PlatformError } from "./errors.ts";
import type { Http } from "./http.ts";
import { localStorageAdapter, memoryStorage, type StorageAdapter } from "./storage.ts";

/** A signed-in user. */
export type User = Schemas["User"];
/** A user session: access token (epoch-seconds `expires_at`) and rotating refresh token. */
export type Session = Schemas["Session"];
/** What sign-up and sign-in resolve to. */
export type UserSession = Schemas["UserSession"];

/** The changes `onAuthStateChange` reports. */
export type AuthEvent = "SIGNED_IN" | "SIGNED_OUT" | "TOKEN_REFRESHED";
/** A listener of `onAuthStateChange`. */
export type AuthListener = (event: AuthEvent, session: Session | null) => void;

/** Options of the auth part of `createClient`. */
export interface AuthOptions {
  /** Where the session is kept: `"memory"` (default), `"localStorage"` (browsers) or an adapter of your own. */
  storage?: "memory" | "localStorage" | StorageAdapter;
  /** The storage key (default `"platform.auth.session"`). */
  storageKey?: string;
  /** Refresh the access token before it expires, on a timer (default true). */
  autoRefreshToken?: boolean;
  /** How many seconds before expiry to refresh (default 60). */
  refreshMarginSeconds?: number;
}

/**
 * AuthClient signs users up and in, keeps their session in a storage adapter, and refreshes the access token
 * before it expires (on a timer, and before any request that would send an expired one). Every other part of
 * the client sends its token.
 */
export class AuthClient {
  #session: Session | null = null;
  #loaded: Promise<void>;
  #storage: StorageAdapter;
  #storageKey: string;
  #listeners = new Set<AuthListener>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #refreshing: Promise<Session> | null = null;
  #auto: boolean;
  #margin: number;
  #closed = false;

  constructor(private readonly http: Http, options: AuthOptions = {}) {
    this.#storage = options.storage === "localStorage"
      ? localStorageAdapter()
      : typeof options.storage === "object"
      ? options.storage
      : memoryStorage();
    this.#storageKey = options.storageKey ?? "platform.auth.session";
    this.#auto = options.autoRefreshToken ?? true;
    this.#margin = options.refreshMarginSeconds ?? 60;
    this.#loaded = this.#load();
  }

  async #load(): Promise<void> {
    const text = await this.#storage.getItem(this.#storageKey);
    if (!text) return;
    try {
      this.#session = JSON.parse(text) as Session;
      this.#schedule();
    } catch {
      await this.#storage.removeItem(this.#storageKey);
    }
  }

  /** Creates an account and signs it in. */
  async signUp(credentials: Schemas["SignUp"]): Promise<UserSession> {
    const result = await this.http.call("POST /v1/auth/signup", { body: credentials }, { token: null });
    await this.#set(result.session, "SIGNED_IN");
    return result;
  }

  /** Signs in with an email and a password. */
  async signInWithPassword(credentials: { email: string; password: string }): Promise<UserSession> {
    const result = await this.http.call("POST /v1/auth/token", {
      body: { grant_type: "password", ...credentials },
    }, { token: null });
    await this.#set(result.session, "SIGNED_IN");
    return result;
  }

  /** Trades the refresh token for a new session (one at a time: the refresh token rotates). */
  async refreshSession(): Promise<Session> {
    await this.#loaded;
    if (this.#refreshing) return await this.#refreshing;
    const current = this.#session;
    if (!current) {
      throw new PlatformError({
        code: "UNAUTHORIZED",
        type: "unauthorized",
        message: "No session to refresh: sign in first",
        status: 401,
      });
    }
    this.#refreshing = (async () => {
      try {
        const result = await this.http.call("POST /v1/auth/token", {
          body: { grant_type: "refresh_token", refresh_token: current.refresh_token },
        }, { token: null });
        await this.#set(result.session, "TOKEN_REFRESHED");
        return result.session;
      } finally {
        this.#refreshing = null;
      }
    })();
    return await this.#refreshing;
  }

  /** The signed-in user, as the platform sees the current token. */
  async getUser(): Promise<User> {
    return await this.http.call("GET /v1/auth/user");
  }

  /** The current session, or null. */
  async getSession(): Promise<Session | null> {
    await this.#loaded;
    return this.#session;
  }

  /** Signs out: `local` (default) ends this session, `global` every session of the user. */
  async signOut(options: { scope?: "local" | "global" } = {}): Promise<void> {
    await this.#loaded;
    try {
      if (this.#session) await this.http.call("POST /v1/auth/logout", { query: { scope: options.scope } });
    } finally {
      await this.#set(null, "SIGNED_OUT");
    }
  }

  /** Calls `listener` on every sign-in, refresh and sign-out; returns the function that stops it. */
  onAuthStateChange(listener: AuthListener): { unsubscribe(): void } {
    this.#listeners.add(listener);
    return { unsubscribe: () => void this.#listeners.delete(listener) };
  }

  /**
   * The access token to send now: refreshed first when it expires within the margin; null without a session.
   * Used by every part of the client.
   */
  async accessToken(): Promise<string | null> {
    await this.#loaded;
    const session = this.#session;
    if (!session) return null;
    if (session.expires_at - this.#margin <= Date.now() / 1000) {
      return (await this.refreshSession()).access_token;
    }
    return session.access_token;
  }

  /** Stops the refresh timer (the session stays). */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
  }

  async #set(session: Session | null, event: AuthEvent): Promise<void> {
    this.#session = session;
    if (session) await this.#storage.setItem(this.#storageKey, JSON.stringify(session));
    else await this.#storage.removeItem(this.#storageKey);
    this.#schedule();
    for (const listener of [...this.#listeners]) {
      try {
        listener(event, session);
      } catch { /* a listener's fault is its own */ }
    }
  }

  #schedule(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (!this.#auto || this.#closed || !this.#session) return;
    const due = (this.#session.expires_at - this.#margin) * 1000 - Date.now();
    this.#timer = setTimeout(() => {
      this.refreshSession().catch(async (err) => {
        // A refresh token that was revoked signs the user out; any other failure is tried again later.
        if (err instanceof PlatformError && err.status === 401) await this.#set(null, "SIGNED_OUT");
        else if (this.#session && !this.#closed) this.#timer = setTimeout(() => this.#schedule(), 5000);
      });
    }, Math.max(0, Math.min(due, 2 ** 31 - 1)));
  }
}
