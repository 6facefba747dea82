import type { Db } from "../../db/driver.ts";
import { randomToken, sha256Hex } from "../../lib/crypto.ts";
import { errors } from "../../lib/errors.ts";
import { DUMMY_HASH, hashPassword, verifyPassword } from "../auth/passwords.ts";
import { TtlCache } from "../../lib/ttl_cache.ts";
import { adminStore } from "./store.ts";

/** Hours a console session lives. */
export const CONSOLE_SESSION_HOURS = 12;

/** A signed-in platform admin. */
export interface AdminIdentity {
  id: string;
  email: string;
}

/** What the first start made: credentials to print once when the password was generated. */
export interface BootstrapResult {
  email: string;
  /** Only set when the platform generated the password (it cannot be shown again). */
  generatedPassword?: string;
}

/** AdminService keeps platform admins and their console sessions (`cs_…`, hashed at rest). */
export class AdminService {
  private readonly sessions = new TtlCache<string, AdminIdentity | null>({
    ttlMs: 10_000,
    maxEntries: 10_000,
  });

  constructor(private readonly control: Db) {}

  /**
   * Makes sure an admin exists: the one of `ADMIN_EMAIL`/`ADMIN_PASSWORD` when given (its password follows the
   * environment), otherwise a generated one on first start.
   */
  async bootstrap(email?: string, password?: string): Promise<BootstrapResult | null> {
    if (email && password) {
      const row = await adminStore.passwordHash(this.control, email.toLowerCase());
      if (row && await verifyPassword(password, row.password_hash)) return null;
      await adminStore.upsert(this.control, email.toLowerCase(), await hashPassword(password));
      return { email: email.toLowerCase() };
    }
    if (await adminStore.count(this.control) > 0) return null;
    const generated = randomToken(18);
    const address = email?.toLowerCase() ?? "admin@localhost";
    await adminStore.insertIfAbsent(this.control, address, await hashPassword(generated));
    return { email: address, generatedPassword: generated };
  }

  /** Signs an admin in; 401 for wrong credentials (the same answer for an unknown email). */
  async login(email: string, password: string): Promise<{ token: string; expires_at: string }> {
    const row = await adminStore.passwordHash(this.control, email.toLowerCase());
    const ok = await verifyPassword(password, row?.password_hash ?? DUMMY_HASH);
    if (!row || !ok) throw errors.unauthorized("Invalid admin credentials");
    const token = `cs_${randomToken(32)}`;
    const expires = new Date(Date.now() + CONSOLE_SESSION_HOURS * 3600_000);
    await adminStore.insertSession(this.control, await sha256Hex(token), row.id, expires.toISOString());
    return { token, expires_at: expires.toISOString() };
  }

  /** The admin of a session token or null when the cache knows the answer; undefined when it does not. */
  cached(token: string): AdminIdentity | null | undefined {
    return this.sessions.get(token);
  }

  /** The admin of a live console session token, or null. */
  async verify(token: string): Promise<AdminIdentity | null> {
    const cached = this.sessions.get(token);
    if (cached !== undefined) return cached;
    const row = await adminStore.session(this.control, await sha256Hex(token));
    const identity = row ? { id: row.id, email: row.email } : null;
    const ttl = row ? new Date(row.expires_at).getTime() - Date.now() : 10_000;
    this.sessions.set(token, identity, ttl);
    return identity;
  }

  /** Ends a console session. */
  async logout(token: string): Promise<void> {
    this.sessions.delete(token);
    await adminStore.deleteSession(this.control, await sha256Hex(token));
  }
}
