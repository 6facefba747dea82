import type { Db, Queryable } from "../../db/driver.ts";
import { quoteIdent } from "../../db/driver.ts";
import { type PolicyRow, realtimeStore } from "./store.ts";
import type { Change, ChannelAccess, SubscriberRole } from "./types.ts";

/** The role and claims of one group of subscribers. */
export interface Viewer {
  role: SubscriberRole;
  claims?: Record<string, unknown>;
}

/**
 * The SQL expression that is true when the row aliased as the table's own name passes the table's RLS policies
 * of one command for the current role (permissive ones OR-ed, restrictive ones AND-ed, as PostgreSQL applies
 * them; no policy for the role means no row; a role with BYPASSRLS or a table without RLS passes every row).
 */
function policyExpression(rows: PolicyRow[]): string {
  const first = rows[0];
  if (!first?.relrowsecurity) return "true";
  const applies = (roles: string[] | null) => {
    if (!roles || roles.length === 0 || roles.includes("public")) return "true";
    return "(" + roles.map((r) => `pg_catalog.pg_has_role(${quoteLiteral(r)}, 'USAGE')`).join(" or ") + ")";
  };
  const permissive: string[] = [];
  const restrictive: string[] = [];
  for (const row of rows) {
    // No policy (the left join found none), or a read policy without USING (FOR ALL … WITH CHECK only), which
    // PostgreSQL ignores when it filters reads.
    if (row.permissive === null || row.qual === null) continue;
    const expr = `(${applies(row.roles)} and coalesce((${row.qual}), false))`;
    (row.permissive ? permissive : restrictive).push(expr);
  }
  const allowed = permissive.length ? `(${permissive.join(" or ")})` : "false";
  const bypass =
    "coalesce((select r.rolbypassrls from pg_catalog.pg_roles r where r.rolname = current_user), false)";
  return `(${bypass} or (${[allowed, ...restrictive].join(" and ")}))`;
}

function quoteLiteral(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/**
 * Decides, for one change, which groups of subscribers may see it: the schema's USAGE, the table's SELECT
 * privilege and its read policies, as they are at that moment, evaluated on the changed row (the new row of an
 * INSERT or UPDATE, the old row of a DELETE, which no longer exists to be selected) with each group's role and
 * claims. Evaluating the change's own row, rather than selecting the table again, also keeps an insert visible
 * when the row was deleted before the check ran. Two statements per change whatever the number of groups: the
 * policies, then `realtime.visible_to`, which plans the check once and runs it per group with that group's role
 * and claims. Answers one boolean per viewer, in order.
 */
export async function visibleTo(db: Queryable, change: Change, viewers: Viewer[]): Promise<boolean[]> {
  if (viewers.length === 0) return [];
  const table = `${quoteIdent(change.schema)}.${quoteIdent(change.table)}`;
  const row = change.type === "DELETE" ? change.old_record : change.record;
  if (!row) return viewers.map(() => false);
  const policies = await realtimeStore.readPolicies(db, table);
  const visible = await realtimeStore.visibleTo(
    db,
    viewers.map((v) => v.role),
    viewers.map((v) => JSON.stringify(v.claims ?? { role: v.role })),
    rowCheck(change.schema, change.table, "SELECT", policies),
    row,
  );
  return viewers.map((_, i) => visible?.[i] === true);
}

/**
 * The check of one row (as JSON in $1) against a table's privilege and policies, as the current role. It is
 * planned once (as the owner) and run per group, so the viewer's USAGE of the schema, which a query of the
 * viewer's own would need to name the table, is checked here.
 */
function rowCheck(
  schema: string,
  table: string,
  privilege: "SELECT" | "INSERT",
  policies: PolicyRow[],
): string {
  const qualified = `${quoteIdent(schema)}.${quoteIdent(table)}`;
  return `select (pg_catalog.has_schema_privilege(${quoteLiteral(schema)}, 'USAGE') and ` +
    `pg_catalog.has_table_privilege(${quoteLiteral(qualified)}, '${privilege}') and ${
      policyExpression(policies)
    }) from pg_catalog.json_populate_record(null::${qualified}, $1::json) as ${quoteIdent(table)}`;
}

/**
 * What `viewer` may do on the private topic `topic`, as Supabase's Realtime Authorization decides it: the
 * SELECT (read) and INSERT (write) policies of `realtime.messages`, evaluated by the same check as changes,
 * as the viewer's role with its claims and with `realtime.topic()` answering `topic`, on a row of extension
 * `broadcast` and one of extension `presence`. Nothing is written.
 */
export async function channelAccess(db: Db, viewer: Viewer, topic: string): Promise<ChannelAccess> {
  return await db.transaction(async (tx) => {
    await realtimeStore.setTopic(tx, topic);
    const roles = [viewer.role];
    const claims = [JSON.stringify(viewer.claims ?? { role: viewer.role })];
    const policies = {
      SELECT: await realtimeStore.readPolicies(tx, MESSAGES, "select"),
      INSERT: await realtimeStore.readPolicies(tx, MESSAGES, "insert"),
    };
    const answer = async (privilege: "SELECT" | "INSERT", extension: string) => {
      const row = { topic, extension, private: true, event: null, payload: null };
      const check = rowCheck("realtime", "messages", privilege, policies[privilege]);
      return (await realtimeStore.visibleTo(tx, roles, claims, check, row))?.[0] === true;
    };
    return {
      broadcastRead: await answer("SELECT", "broadcast"),
      broadcastWrite: await answer("INSERT", "broadcast"),
      presenceRead: await answer("SELECT", "presence"),
      presenceWrite: await answer("INSERT", "presence"),
    };
  }, { prepare: false });
}

const MESSAGES = `${quoteIdent("realtime")}.${quoteIdent("messages")}`;
