import type { Queryable } from "../../db/driver.ts";

/** A row of `auth.users`. */
export interface UserRow {
  id: string;
  email: string;
  password_hash: string;
  user_metadata: Record<string, unknown>;
  created_at: Date | string;
}

/** A user with the dates GoTrue's user object shows. */
export interface UserDetailsRow extends Omit<UserRow, "password_hash"> {
  updated_at: Date | string;
  /** When its latest session started (each sign-in starts one). */
  last_sign_in_at: Date | string | null;
}

/** What an update of a user changes (each absent field is kept). */
export interface UserChanges {
  email?: string;
  passwordHash?: string;
  /** Merged into `user_metadata`; a key set to null is removed. */
  data?: Record<string, unknown>;
}

/** The refresh token being spent and the state of its session. */
export interface RefreshTokenRow {
  session_id: string;
  used_at: Date | null;
  revoked_at: Date | null;
}

/** The latest recovery of a user, locked for the rest of the transaction. */
export interface RecoveryRow {
  user_id: string;
  code_hash: string;
  attempts: number;
  expired: boolean;
}

const USER_COLUMNS = "id, email, password_hash, user_metadata, created_at";

/** The SQL of users, sessions and refresh tokens in a project's `auth` schema. */
export const authStore = {
  /** Inserts a user; a taken email fails with SQLSTATE 23505. */
  async insertUser(db: Queryable, email: string, passwordHash: string, metadata: unknown): Promise<UserRow> {
    const [row] = await db.query<UserRow>(
      `insert into auth.users (email, password_hash, user_metadata) values ($1, $2, $3::text::jsonb) returning ${USER_COLUMNS}`,
      [email, passwordHash, JSON.stringify(metadata)],
    );
    return row!;
  },

  /** The user of an email, whatever its case. */
  async userByEmail(db: Queryable, email: string): Promise<UserRow | null> {
    const [row] = await db.query<UserRow>(
      `select ${USER_COLUMNS} from auth.users where lower(email) = lower($1)`,
      [email],
    );
    return row ?? null;
  },

  /** The user of a session. */
  async userOfSession(db: Queryable, sessionId: string): Promise<UserRow | null> {
    const [row] = await db.query<UserRow>(
      `select ${USER_COLUMNS} from auth.users u where id = (select user_id from auth.sessions where id = $1)`,
      [sessionId],
    );
    return row ?? null;
  },

  /** The user with its update and last sign-in dates. */
  async userDetails(db: Queryable, userId: string): Promise<UserDetailsRow | null> {
    const [row] = await db.query<UserDetailsRow>(
      `select id, email, user_metadata, created_at, updated_at,
              (select max(s.created_at) from auth.sessions s where s.user_id = u.id) as last_sign_in_at
         from auth.users u where id = $1`,
      [userId],
    );
    return row ?? null;
  },

  /** Applies `changes` to a user; a taken email fails with SQLSTATE 23505. */
  async updateUser(tx: Queryable, userId: string, changes: UserChanges): Promise<void> {
    await tx.query(
      `update auth.users set
         email = coalesce($2, email),
         password_hash = coalesce($3, password_hash),
         user_metadata = case when $4::text is null then user_metadata
           else (user_metadata || $4::text::jsonb)
             - array(select key from jsonb_each($4::text::jsonb) where value = 'null'::jsonb) end,
         updated_at = now()
       where id = $1`,
      [
        userId,
        changes.email ?? null,
        changes.passwordHash ?? null,
        changes.data ? JSON.stringify(changes.data) : null,
      ],
    );
  },

  /** The user, when the session is theirs and not revoked. */
  async userWithLiveSession(db: Queryable, userId: string, sessionId: string): Promise<UserRow | null> {
    const [row] = await db.query<UserRow>(
      `select ${USER_COLUMNS} from auth.users u
       where u.id = $1 and exists (select 1 from auth.sessions s where s.id = $2 and s.user_id = u.id and s.revoked_at is null)`,
      [userId, sessionId],
    );
    return row ?? null;
  },

  /** The refresh token of a hash with its session, locked for the rest of the transaction. */
  async lockRefreshToken(tx: Queryable, tokenHash: string): Promise<RefreshTokenRow | null> {
    const [row] = await tx.query<RefreshTokenRow>(
      `select t.session_id, t.used_at, s.revoked_at from auth.refresh_tokens t
         join auth.sessions s on s.id = t.session_id where t.token_hash = $1 for update of t`,
      [tokenHash],
    );
    return row ?? null;
  },

  async spendRefreshToken(tx: Queryable, tokenHash: string): Promise<void> {
    await tx.query("update auth.refresh_tokens set used_at = now() where token_hash = $1", [tokenHash]);
  },

  async insertRefreshToken(tx: Queryable, tokenHash: string, sessionId: string): Promise<void> {
    await tx.query("insert into auth.refresh_tokens (token_hash, session_id) values ($1, $2)", [
      tokenHash,
      sessionId,
    ]);
  },

  /** Starts a session; returns its id. */
  async insertSession(tx: Queryable, userId: string): Promise<string> {
    const [session] = await tx.query<{ id: string }>(
      "insert into auth.sessions (user_id) values ($1) returning id",
      [userId],
    );
    return session!.id;
  },

  async revokeSession(tx: Queryable, sessionId: string): Promise<void> {
    await tx.query("update auth.sessions set revoked_at = now() where id = $1", [sessionId]);
  },

  /**
   * Revokes the live session `sessionId` (`local`), every live session of the user (`global`), or every one but
   * `sessionId` (`others`); their ids.
   */
  async revokeSessions(
    db: Queryable,
    scope: "local" | "global" | "others",
    userId: string,
    sessionId: string,
  ): Promise<string[]> {
    const where = scope === "local"
      ? "id = $2 and user_id = $1"
      : scope === "global"
      ? "user_id = $1 and $2::text is not null"
      : "user_id = $1 and id <> $2";
    const ended = await db.query<{ id: string }>(
      `update auth.sessions set revoked_at = now() where ${where} and revoked_at is null returning id::text as id`,
      [userId, sessionId],
    );
    return ended.map((s) => s.id);
  },

  /** Sessions revoked after `sinceMs` (epoch ms) and the database's clock, in epoch ms. */
  async revokedSince(db: Queryable, sinceMs: number): Promise<{ now: number; ids: string[] }> {
    const [row] = await db.query<{ now: number; ids: string[] | null }>(
      `select extract(epoch from now())::float8 * 1000 as now, array_agg(id::text) as ids
         from auth.sessions where revoked_at > to_timestamp($1::float8 / 1000)`,
      [sinceMs],
    );
    return { now: Number(row!.now), ids: row!.ids ?? [] };
  },

  /**
   * Makes a user's recovery the only one: an earlier one is replaced, unless it is younger than `intervalSecs`.
   * Returns 0 when stored, else the whole seconds left before another may be asked for.
   */
  async putRecovery(
    db: Queryable,
    userId: string,
    hashes: { code: string; link: string; challenge?: string },
    ttlSecs: number,
    intervalSecs: number,
  ): Promise<number> {
    const [stored] = await db.query<{ user_id: string }>(
      `insert into auth.recovery_tokens (user_id, code_hash, link_hash, expires_at, code_challenge)
         values ($1, $2, $3, now() + make_interval(secs => $4::float8), $6)
       on conflict (user_id) do update set code_hash = excluded.code_hash, link_hash = excluded.link_hash,
         attempts = 0, created_at = now(), expires_at = excluded.expires_at,
         code_challenge = excluded.code_challenge
         where auth.recovery_tokens.created_at <= now() - make_interval(secs => $5::float8)
       returning user_id`,
      [userId, hashes.code, hashes.link, ttlSecs, intervalSecs, hashes.challenge ?? null],
    );
    if (stored) return 0;
    const [left] = await db.query<{ secs: string }>(
      `select greatest(1, ceil(extract(epoch from
           created_at + make_interval(secs => $2::float8) - now())))::int8 as secs
         from auth.recovery_tokens where user_id = $1`,
      [userId, intervalSecs],
    );
    return Number(left?.secs ?? 1);
  },

  /** The recovery of an email's user, locked for the rest of the transaction. */
  async lockRecoveryOfEmail(tx: Queryable, email: string): Promise<RecoveryRow | null> {
    const [row] = await tx.query<RecoveryRow>(
      `select r.user_id, r.code_hash, r.attempts, r.expires_at <= now() as expired
         from auth.recovery_tokens r join auth.users u on u.id = r.user_id
        where lower(u.email) = lower($1) for update of r`,
      [email],
    );
    return row ?? null;
  },

  /** Counts a wrong code against a user's recovery. */
  async missRecovery(tx: Queryable, userId: string): Promise<void> {
    await tx.query("update auth.recovery_tokens set attempts = attempts + 1 where user_id = $1", [userId]);
  },

  async deleteRecovery(tx: Queryable, userId: string): Promise<void> {
    await tx.query("delete from auth.recovery_tokens where user_id = $1", [userId]);
  },

  /** Spends the unexpired recovery of a link hash: its user and PKCE challenge, or null when there is none. */
  async takeRecoveryOfLink(
    tx: Queryable,
    linkHash: string,
  ): Promise<{ user: UserRow; challenge: string | null } | null> {
    const [spent] = await tx.query<{ user_id: string; live: boolean; code_challenge: string | null }>(
      `delete from auth.recovery_tokens where link_hash = $1
       returning user_id, expires_at > now() as live, code_challenge`,
      [linkHash],
    );
    if (!spent?.live) return null;
    const [row] = await tx.query<UserRow>(`select ${USER_COLUMNS} from auth.users where id = $1`, [
      spent.user_id,
    ]);
    return row ? { user: row, challenge: spent.code_challenge } : null;
  },

  /** Stores a PKCE flow state: the hash of its auth code, its user and challenge (the user's expired ones go). */
  async insertFlowState(
    tx: Queryable,
    flow: { authCodeHash: string; userId: string; challenge: string },
    ttlSecs: number,
  ): Promise<void> {
    await tx.query("delete from auth.flow_states where user_id = $1 and expires_at <= now()", [flow.userId]);
    await tx.query(
      `insert into auth.flow_states (auth_code_hash, user_id, code_challenge, expires_at)
         values ($1, $2, $3, now() + make_interval(secs => $4::float8))`,
      [flow.authCodeHash, flow.userId, flow.challenge, ttlSecs],
    );
  },

  /** The flow state of an auth code hash, locked for the rest of the transaction. */
  async lockFlowState(
    tx: Queryable,
    authCodeHash: string,
  ): Promise<{ user_id: string; code_challenge: string; expired: boolean } | null> {
    const [row] = await tx.query<{ user_id: string; code_challenge: string; expired: boolean }>(
      `select user_id, code_challenge, expires_at <= now() as expired from auth.flow_states
        where auth_code_hash = $1 for update`,
      [authCodeHash],
    );
    return row ?? null;
  },

  async deleteFlowState(tx: Queryable, authCodeHash: string): Promise<void> {
    await tx.query("delete from auth.flow_states where auth_code_hash = $1", [authCodeHash]);
  },

  /** The user of an id. */
  async userById(db: Queryable, userId: string): Promise<UserRow | null> {
    const [row] = await db.query<UserRow>(`select ${USER_COLUMNS} from auth.users where id = $1`, [userId]);
    return row ?? null;
  },
};

/** A project's stored auth settings: null takes the platform's default. */
export interface StoredAuthSettings {
  site_url: string | null;
  redirect_urls: string[] | null;
}

/** The SQL of `platform.project_auth_settings` in the control database. */
export const authSettingsStore = {
  /** The settings `ref` stored; every field null when it stored none. */
  async find(db: Queryable, ref: string): Promise<StoredAuthSettings> {
    const [row] = await db.query<{ site_url: string | null; redirect_urls: unknown }>(
      "select site_url, redirect_urls from platform.project_auth_settings where project_ref = $1",
      [ref],
    );
    if (!row) return { site_url: null, redirect_urls: null };
    // jsonb arrives parsed on PostgreSQL and as text on some drivers.
    const urls = typeof row.redirect_urls === "string" ? JSON.parse(row.redirect_urls) : row.redirect_urls;
    return { site_url: row.site_url, redirect_urls: Array.isArray(urls) ? urls : null };
  },

  /** Writes every field of `s` (null resets one to the default). */
  async save(db: Queryable, ref: string, s: StoredAuthSettings): Promise<void> {
    await db.query(
      `insert into platform.project_auth_settings (project_ref, site_url, redirect_urls)
       values ($1, $2, $3::text::jsonb)
       on conflict (project_ref) do update set site_url = excluded.site_url,
         redirect_urls = excluded.redirect_urls, updated_at = now()`,
      [ref, s.site_url, s.redirect_urls === null ? null : JSON.stringify(s.redirect_urls)],
    );
  },
};
