import type { Db } from "../../db/driver.ts";
import { randomToken, sha256Hex } from "../../lib/crypto.ts";
import { errors } from "../../lib/errors.ts";
import { DUMMY_HASH, hashPassword, verifyPassword } from "../auth/passwords.ts";
import { TtlCache } from "../../lib/ttl_cache.ts";

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
      const [row] = await this.control.query<{ password_hash: string }>(
        "select password_hash from platform.admins where email = $1",
        [email.toLowerCase()],
      );
      if (row && await verifyPassword(password, row.password_hash)) return null;
      await this.control.query(
        `insert into platform.admins (email, password_hash) values ($1, $2)
         on conflict (email) do update set password_hash = excluded.password_hash`,
        [email.toLowerCase(), await hashPassword(password)],
      );
      return { email: email.toLowerCase() };
    }
    const [{ count } = { count: 0 }] = await this.control.query<{ count: number }>(
      "select count(*)::int as count from platform.admins",
    );
    if (count > 0) return null;
    const generated = randomToken(18);
    const address = email?.toLowerCase() ?? "admin@localhost";
    await this.control.query(
      "insert into platform.admins (email, password_hash) values ($1, $2) on conflict (email) do nothing",
      [address, await hashPassword(generated)],
    );
    return { email: address, generatedPassword: generated };
  }

  /** Signs an admin in; 401 for wrong credentials (the same answer for an unknown email). */
  async login(email: string, password: string): Promise<{ token: string; expires_at: string }> {
    const [row] = await this.control.query<{ id: string; password_hash: string }>(
      "select id, password_hash from platform.admins where email = $1",
      [email.toLowerCase()],
    );
    const ok = await verifyPassword(password, row?.password_hash ?? DUMMY_HASH);
    if (!row || !ok) throw errors.unauthorized("Invalid admin credentials");
    const token = `cs_${randomToken(32)}`;
    const expires = new Date(Date.now() + CONSOLE_SESSION_HOURS * 3600_000);
    await this.control.query(
      "insert into platform.admin_sessions (token_hash, admin_id, expires_at) values ($1, $2, $3)",
      [await sha256Hex(token), row.id, expires.toISOString()],
    );
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
    const [row] = await this.control.query<AdminIdentity & { expires_at: Date | string }>(
      `select a.id, a.email, s.expires_at from platform.admin_sessions s join platform.admins a on a.id = s.admin_id
       where s.token_hash = $1 and s.expires_at > now()`,
      [await sha256Hex(token)],
    );
    const identity = row ? { id: row.id, email: row.email } : null;
    const ttl = row ? new Date(row.expires_at).getTime() - Date.now() : 10_000;
    this.sessions.set(token, identity, ttl);
    return identity;
  }

  /** Ends a console session. */
  async logout(token: string): Promise<void> {
    this.sessions.delete(token);
    await this.control.query("delete from platform.admin_sessions where token_hash = $1", [
      await sha256Hex(token),
    ]);
  }
}
