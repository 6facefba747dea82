import { sqlState } from "../../db/driver.ts";
import { RestError } from "../../lib/rest_errors.ts";

/** The HTTP status PostgREST gives a SQLSTATE; `anon` turns 42501 into 401. */
export function statusOfSqlState(state: string, role: string): number {
  if (state === "42501") return role === "anon" ? 401 : 403;
  if (state === "23503" || state === "23505" || state === "23P01") return 409;
  if (state === "42P01") return 404;
  if (state === "25006") return 405;
  if (state === "57014") return 504;
  if (state === "P0001") return 400;
  if (/^(08|53)/.test(state)) return 503;
  if (/^(28|0L|0P)/.test(state)) return 403;
  // 54: a program limit (too many columns, nesting too deep) the caller's query ran into.
  if (/^(22|23|42|2F|44|P0|0A|21|54)/.test(state)) return 400;
  return 500;
}

/**
 * Maps a database error to a RestError carrying its SQLSTATE as PostgREST does (message, details, hint kept:
 * they describe the caller's own query and data). Server-side failures keep a generic message. Anything that
 * is not a database error is returned unchanged.
 */
export function fromDatabaseError(err: unknown, role: string): unknown {
  const state = sqlState(err);
  if (!state || !/^[0-9A-Z]{5}$/.test(state)) return err;
  const e = err as { message?: string; detail?: string; hint?: string };
  const status = statusOfSqlState(state, role);
  if (status >= 500 && state !== "57014") {
    return new RestError(status, state, "The database could not run the request", { cause: err });
  }
  const message = state === "57014" ? "canceling statement due to statement timeout" : e.message ?? "Error";
  return new RestError(status, state, message, {
    details: e.detail ?? null,
    hint: e.hint ?? null,
    cause: err,
  });
}
