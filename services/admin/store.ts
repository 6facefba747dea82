import type { Queryable } from "../../db/driver.ts";
import type { AdminIdentity } from "./admins.ts";

/** The SQL of platform admins and their console sessions (`platform.admins`, `platform.admin_sessions`). */
export const adminStore = {
  async passwordHash(db: Queryable, email: string): Promise<{ id: string; password_hash: string } | null> {
    const [row] = await db.query<{ id: string; password_hash: string }>(
      "select id, password_hash from platform.admins where email = $1",
      [email],
    );
    return row ?? null;
  },

  /** Creates the admin, or sets the password of the existing one. */
  async upsert(db: Queryable, email: string, passwordHash: string): Promise<void> {
    await db.query(
      `insert into platform.admins (email, password_hash) values ($1, $2)
       on conflict (email) do update set password_hash = excluded.password_hash`,
      [email, passwordHash],
    );
  },

  /** Creates the admin unless one has this email. */
  async insertIfAbsent(db: Queryable, email: string, passwordHash: string): Promise<void> {
    await db.query(
      "insert into platform.admins (email, password_hash) values ($1, $2) on conflict (email) do nothing",
      [email, passwordHash],
    );
  },

  async count(db: Queryable): Promise<number> {
    const [{ count } = { count: 0 }] = await db.query<{ count: number }>(
      "select count(*)::int as count from platform.admins",
    );
    return count;
  },

  async insertSession(db: Queryable, tokenHash: string, adminId: string, expiresAt: string): Promise<void> {
    await db.query(
      "insert into platform.admin_sessions (token_hash, admin_id, expires_at) values ($1, $2, $3)",
      [tokenHash, adminId, expiresAt],
    );
  },

  /** The admin of a live session, with when the session expires. */
  async session(
    db: Queryable,
    tokenHash: string,
  ): Promise<(AdminIdentity & { expires_at: Date | string }) | null> {
    const [row] = await db.query<AdminIdentity & { expires_at: Date | string }>(
      `select a.id, a.email, s.expires_at from platform.admin_sessions s join platform.admins a on a.id = s.admin_id
       where s.token_hash = $1 and s.expires_at > now()`,
      [tokenHash],
    );
    return row ?? null;
  },

  async deleteSession(db: Queryable, tokenHash: string): Promise<void> {
    await db.query("delete from platform.admin_sessions where token_hash = $1", [tokenHash]);
  },
};
