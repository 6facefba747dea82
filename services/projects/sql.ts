import type { OwnerSession } from "../../db/databases.ts";
import { sqlState } from "../../db/driver.ts";
import { errors } from "../../lib/errors.ts";
import { projectStore } from "./store.ts";

/** Seconds a statement of `POST /v1/sql` may run. */
export const OWNER_SQL_TIMEOUT_SECONDS = 60;

/**
 * Runs SQL in a project database as its owner (never a superuser: see Databases.ownerSession), in one
 * transaction with a statement timeout, and returns the
 * rows of the last statement. A database error becomes 400 with its SQLSTATE and message (the caller wrote
 * the SQL, so the message reveals nothing new); nothing is committed then, except what a `commit` in the SQL
 * itself committed before the error.
 */
export async function runOwnerSql(
  owner: OwnerSession,
  query: string,
  params?: unknown[],
): Promise<Record<string, unknown>[]> {
  try {
    return await owner.db.transaction(async (tx) => {
      await projectStore.setLocalRole(tx, owner.role);
      return params && params.length > 0 ? await tx.query(query, params) : await tx.execRows(query);
    }, { timeoutMs: OWNER_SQL_TIMEOUT_SECONDS * 1000, after: owner.reset });
  } catch (err) {
    const state = sqlState(err);
    if (state && /^[0-9A-Z]{5}$/.test(state)) {
      throw errors.sqlState(state, (err as Error).message);
    }
    throw err;
  }
}
