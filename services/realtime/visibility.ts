import type { Queryable } from "../../db/driver.ts";
import { quoteIdent } from "../../db/driver.ts";
import { type PolicyRow, realtimeStore } from "./store.ts";
import type { Change, SubscriberRole } from "./types.ts";

/** The role and claims of one group of subscribers. */
export interface Viewer {
  role: SubscriberRole;
  claims?: Record<string, unknown>;
}

/**
 * The SQL expression that is true when the current role may read the row aliased as the table's own name,
 * under the table's RLS policies (permissive ones OR-ed, restrictive ones AND-ed, as PostgreSQL applies them;
 * no policy for the role means no row; a role with BYPASSRLS or a table without RLS sees every row).
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
    // No policy (the left join found none), or a policy without USING (e.g. FOR ALL … WITH CHECK only), which
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
  // The check is planned once (as the owner) and run per group, so the viewer's USAGE of the schema, which a
  // query of the viewer's own would need to name the table, is checked here.
  const check = `select (pg_catalog.has_schema_privilege(${
    quoteLiteral(change.schema)
  }, 'USAGE') and pg_catalog.has_table_privilege(${quoteLiteral(table)}, 'SELECT') and ${
    policyExpression(policies)
  }) from pg_catalog.json_populate_record(null::${table}, $1::json) as ${quoteIdent(change.table)}`;
  const visible = await realtimeStore.visibleTo(
    db,
    viewers.map((v) => v.role),
    viewers.map((v) => JSON.stringify(v.claims ?? { role: v.role })),
    check,
    row,
  );
  return viewers.map((_, i) => visible?.[i] === true);
}
