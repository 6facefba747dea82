import { sqlState } from "../../db/driver.ts";
import { connectionLost, fromServer } from "../../lib/connection_lost.ts";
import { RestError } from "../../lib/rest_errors.ts";

/**
 * The HTTP status PostgREST gives a SQLSTATE (its `pgErrorStatus`), `authenticated` telling 42501 apart (401
 * for anon, 403 otherwise). One difference: class 54 (a program limit the caller's query ran into: nesting too
 * deep, too many columns) is 400 here, 500 in PostgREST, because bad input never answers 5xx on this platform.
 */
export function statusOfSqlState(state: string, role: string, message = ""): number {
  const two = state.slice(0, 2);
  switch (state) {
    case "23503":
    case "23505":
      return 409;
    case "25006":
      return 405;
    case "21000":
      return message.endsWith("requires a WHERE clause") ? 400 : 500;
    case "22023":
      return message.startsWith("role") && message.endsWith("does not exist") ? 401 : 400;
    case "53400":
      return 500;
    case "57P01":
      return 503;
    case "P0001":
      return 400;
    case "42883":
      return message.startsWith("function xmlagg(") ? 406 : 404;
    case "42P01":
      return 404;
    case "42P17":
      return 500;
    case "42501":
      return role === "anon" ? 401 : 403;
  }
  if (two === "08") return 503;
  if (two === "53") return 503;
  if (two === "54") return 400;
  if (two === "0L" || two === "0P" || two === "28") return 403;
  if (two === "PT") {
    const n = Number(state.slice(2));
    // An HTTP response can carry 200–599 here (Deno refuses 1xx answers): PostgREST's PT1xx and PT6xx+ are 500.
    return Number.isInteger(n) && n >= 200 && n <= 599 ? n : 500;
  }
  if (
    ["09", "25", "2D", "38", "39", "3B", "40", "55", "57", "58", "F0", "HV", "P0", "XX"].includes(two)
  ) return 500;
  return 400;
}

/** States whose message describes the server, not the caller's query: the body stays generic. */
const SERVER_SIDE = /^(08|53|57P|58|XX|F0)/;

/**
 * Maps a database error to a RestError carrying its SQLSTATE as PostgREST does (message, details, hint kept:
 * they describe the caller's own query and data), with `WWW-Authenticate: Bearer` on a 401. `RAISE SQLSTATE
 * 'PGRST'` with a JSON message and detail sets the code, message, details, hint, status and headers itself
 * (500 PGRST121 when they are not JSON of that shape). Connection and server failures keep a generic message.
 * Anything that is not a database error is returned unchanged.
 */
export function fromDatabaseError(err: unknown, role: string): unknown {
  // The driver's own codes (EPIPE, CONNECTION_CLOSED…) are not SQLSTATEs, though EPIPE has five letters:
  // PostgREST's answer to a connection lost under the request, without the driver's words (they name the server).
  if (connectionLost(err) && !fromServer(err)) {
    return new RestError(503, "PGRST001", "Database client error. Retrying the connection.", { cause: err });
  }
  const state = sqlState(err);
  if (!state || !/^[0-9A-Z]{5}$/.test(state)) return err;
  const e = err as { message?: string; detail?: string; hint?: string };
  if (state === "PGRST") return raised(e.message ?? "", e.detail, err);
  const message = e.message ?? "Error";
  const status = statusOfSqlState(state, role, message);
  if (SERVER_SIDE.test(state)) {
    return new RestError(status, state, "The database could not run the request", { cause: err });
  }
  return new RestError(status, state, message, {
    details: e.detail ?? null,
    hint: e.hint ?? null,
    cause: err,
    headers: status === 401 ? { "www-authenticate": "Bearer" } : undefined,
  });
}

/** `RAISE SQLSTATE 'PGRST' USING message = '{"code":…}', detail = '{"status":…,"headers":{…}}'`. */
function raised(message: string, detail: string | undefined, cause: unknown): RestError {
  const hint = "DETAIL must be a JSON object with obligatory keys: 'status', 'headers' and optional key: " +
    "'status_text'.";
  const parseFailure = (details: string, h: string) =>
    new RestError(500, "PGRST121", `Could not parse JSON in the "RAISE SQLSTATE 'PGRST'" error`, {
      details,
      hint: h,
      cause,
    });
  const msg = parseObject(message);
  if (!msg || typeof msg.code !== "string" || typeof msg.message !== "string") {
    return parseFailure(
      `Invalid JSON value for MESSAGE: '${message}'`,
      "MESSAGE must be a JSON object with obligatory keys: 'code', 'message' and optional keys: 'details', 'hint'.",
    );
  }
  if (detail === undefined) return parseFailure("DETAIL is missing in the RAISE statement", hint);
  const det = parseObject(detail);
  const headers = det?.headers;
  if (
    !det || typeof det.status !== "number" || !Number.isInteger(det.status) || det.status < 100 ||
    det.status > 599 || headers === null || typeof headers !== "object" || Array.isArray(headers) ||
    Object.values(headers).some((v) => typeof v !== "string")
  ) {
    return parseFailure(`Invalid JSON value for DETAIL: '${detail}'`, hint);
  }
  // Deno sends no 1xx answer: such a status is 500, the error's text kept.
  return new RestError(det.status < 200 ? 500 : det.status, msg.code, msg.message, {
    details: typeof msg.details === "string" ? msg.details : null,
    hint: typeof msg.hint === "string" ? msg.hint : null,
    headers: headers as Record<string, string>,
    cause,
  });
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const v = JSON.parse(text);
    return v !== null && typeof v === "object" && !Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
}
