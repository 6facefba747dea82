import type { PipelineStatement } from "../../db/driver.ts";
import type { DataIdentity } from "./data.ts";

// The data API's only hand-written SQL; its other statements come from the PostgREST compiler (db/rest/).

/** The first statement of every data transaction: the caller's role, its JWT claims and the timeout, local. */
const SETUP_SQL = "select set_config('role', $1, true), set_config('request.jwt.claims', $2, true), " +
  "set_config('statement_timeout', $3, true)";

/** The statement that starts a data transaction as `identity` (see SETUP_SQL). */
export function transactionSetup(identity: DataIdentity, statementTimeoutMs: number): PipelineStatement {
  return {
    sql: SETUP_SQL,
    params: [identity.role, JSON.stringify(identity.claims), String(statementTimeoutMs)],
  };
}
