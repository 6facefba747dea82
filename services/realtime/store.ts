import type { Queryable } from "../../db/driver.ts";

/** A read policy of a table (all null when the table has none), with whether its RLS is on. */
export interface PolicyRow {
  relrowsecurity: boolean;
  permissive: boolean | null;
  roles: string[] | null;
  qual: string | null;
}

/** How long a stored broadcast is kept at most (3 days), Supabase's. */
export const REPLAY_KEEP_SECONDS = 3 * 24 * 3600;

/** The SQL of realtime in a project database: captured tables, the bus, overflow payloads, visibility. */
export const realtimeStore = {
  /** Deletes overflow payloads older than `seconds`. */
  async pruneOverflow(db: Queryable, seconds: number): Promise<void> {
    await db.query(
      `delete from realtime.overflow where created_at < now() - interval '${Math.trunc(seconds)} seconds'`,
    );
  },

  /** The payload of a notification too large for NOTIFY, or null when it is gone. */
  async overflow(db: Queryable, id: number): Promise<string | null> {
    const [row] = await db.query<{ payload: string }>(
      "select payload from realtime.overflow where id = $1",
      [id],
    );
    return row?.payload ?? null;
  },

  /** Sends a message to the other instances (`realtime_bus`). */
  async publishBus(db: Queryable, text: string): Promise<void> {
    await db.query("select realtime.publish('realtime_bus', $1)", [text]);
  },

  /** Whether the table is enabled for realtime. */
  async isCaptured(db: Queryable, schema: string, table: string): Promise<boolean> {
    const [row] = await db.query(
      "select 1 from realtime.tables where schema_name = $1 and table_name = $2",
      [schema, table],
    );
    return row !== undefined;
  },

  /** The columns of a table enabled for realtime, their type names, and whether `role` may select it; null when not enabled. */
  async capturedTable(
    db: Queryable,
    schema: string,
    table: string,
    role: string,
  ): Promise<{ columns: string[]; types: string[]; readable: boolean } | null> {
    const [row] = await db.query<{ columns: string[]; types: string[]; readable: boolean }>(
      `select array(select a.attname::text from pg_catalog.pg_attribute a
                     where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
                     order by a.attnum) as columns,
              array(select t.typname::text from pg_catalog.pg_attribute a
                      join pg_catalog.pg_type t on t.oid = a.atttypid
                     where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
                     order by a.attnum) as types,
              pg_catalog.has_table_privilege($3, c.oid, 'SELECT') as readable
         from realtime.tables t
         join pg_catalog.pg_namespace n on n.nspname = t.schema_name
         join pg_catalog.pg_class c on c.relnamespace = n.oid and c.relname = t.table_name
        where t.schema_name = $1 and t.table_name = $2`,
      [schema, table, role],
    );
    return row ?? null;
  },

  /**
   * The policies of a table (`table` quoted and qualified) for a command: `select` reads each policy's USING
   * expression, `insert` its WITH CHECK (a FOR ALL policy without one checks new rows with its USING).
   */
  async readPolicies(
    db: Queryable,
    table: string,
    command: "select" | "insert" = "select",
  ): Promise<PolicyRow[]> {
    return await db.query<PolicyRow>(
      `select c.relrowsecurity, p.polpermissive as permissive,
              (select array_agg(case when o = 0 then 'public' else pg_catalog.pg_get_userbyid(o)::text end)
                 from unnest(p.polroles) o) as roles,
              pg_catalog.pg_get_expr(case when $2 = 'insert' then coalesce(p.polwithcheck, p.polqual)
                                          else p.polqual end, p.polrelid) as qual
         from pg_catalog.pg_class c
         left join pg_catalog.pg_policy p on p.polrelid = c.oid
               and p.polcmd = any(case when $2 = 'insert' then array['a', '*'] else array['r', '*'] end::"char"[])
        where c.oid = $1::regclass`,
      [table, command],
    );
  },

  /** Stores a broadcast for replay (a private topic's, JSON payload) until `keepSeconds` from now; its id. */
  async storeBroadcast(
    db: Queryable,
    m: { topic: string; event: string; payload: unknown; keepSeconds: number },
  ): Promise<string> {
    const [row] = await db.query<{ id: string }>(
      `insert into realtime.messages (topic, extension, event, payload, private, inserted_at, updated_at, expires_at)
       values ($1, 'broadcast', $2, $3::jsonb, true, now() at time zone 'utc', now() at time zone 'utc',
               now() + make_interval(secs => $4::int))
       returning id::text`,
      [m.topic, m.event, JSON.stringify(m.payload ?? null), m.keepSeconds],
    );
    return row!.id;
  },

  /** The stored broadcasts of a private topic sent at or after `sinceMs` (epoch ms), oldest first. */
  async storedBroadcasts(
    db: Queryable,
    topic: string,
    sinceMs: number,
    limit: number,
  ): Promise<{ id: string; event: string; payload: unknown }[]> {
    return await db.query<{ id: string; event: string; payload: unknown }>(
      `select id::text, event, payload from realtime.messages
        where topic = $1 and extension = 'broadcast' and private and event is not null
          and inserted_at >= (pg_catalog.to_timestamp($2::float8 / 1000) at time zone 'utc')
          and (expires_at is null or expires_at > now())
        order by inserted_at, id limit $3`,
      [topic, sinceMs, limit],
    );
  },

  /**
   * Deletes stored broadcasts past their time: those stored with a time to live, and those sent from SQL
   * (`realtime.send()`, no `expires_at`) after `keepSeconds`.
   */
  async pruneStoredBroadcasts(db: Queryable, keepSeconds = REPLAY_KEEP_SECONDS): Promise<void> {
    await db.query("delete from realtime.messages where expires_at <= now()");
    await db.query(
      `delete from realtime.messages where expires_at is null
          and inserted_at < (now() at time zone 'utc') - make_interval(secs => $1::int)`,
      [Math.trunc(keepSeconds)],
    );
  },

  /** Sets the largest payload `realtime.send()` accepts (it reads realtime.settings). */
  async setPayloadLimit(db: Queryable, bytes: number): Promise<void> {
    await db.query(
      "update realtime.settings set max_payload_bytes = $1::int where max_payload_bytes <> $1::int",
      [Math.trunc(bytes)],
    );
  },

  /** Sets `realtime.topic()` for the rest of the transaction. */
  async setTopic(tx: Queryable, topic: string): Promise<void> {
    await tx.query("select pg_catalog.set_config('realtime.topic', $1, true)", [topic]);
  },

  /** Runs the `check` (on `row`, as JSON in $1) once per role and claims: one answer each, in order. */
  async visibleTo(
    db: Queryable,
    roles: string[],
    claims: string[],
    check: string,
    row: unknown,
  ): Promise<boolean[] | null> {
    const [result] = await db.query<{ visible: boolean[] }>(
      "select realtime.visible_to($1::text[], $2::text[], $3, $4) as visible",
      [roles, claims, check, JSON.stringify(row)],
    );
    return result?.visible ?? null;
  },
};
