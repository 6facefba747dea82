import type { ContentfulStatusCode } from "hono/utils/http-status";
import { AppError, typeOfStatus } from "./errors.ts";

/**
 * RestError is a data API failure with PostgREST's code (`PGRST100`, `42703`, `23505`…), its HTTP status and
 * its `details` and `hint`. It is an AppError, so the envelope mount needs nothing special; the PostgREST mount
 * writes `{code, message, details, hint}` from the same fields.
 */
export class RestError extends AppError {
  readonly details: string | null;
  readonly hint: string | null;

  constructor(
    status: number,
    code: string,
    message: string,
    extra: {
      details?: string | null;
      hint?: string | null;
      cause?: unknown;
      headers?: Record<string, string>;
    } = {},
  ) {
    super(status as ContentfulStatusCode, code, message, {
      type: typeOfStatus(status),
      cause: extra.cause,
      headers: extra.headers,
    });
    this.name = "RestError";
    this.details = extra.details ?? null;
    this.hint = extra.hint ?? null;
  }
}

/** The data API's own errors, named after PostgREST's catalogue. */
export const restErrors = {
  /** PGRST100: the query string does not parse. */
  parse: (message: string, details?: string) => new RestError(400, "PGRST100", message, { details }),
  /** PGRST102: the body is not valid JSON of the right shape. */
  body: (message: string, details?: string) => new RestError(400, "PGRST102", message, { details }),
  /** PGRST103: the requested range is not satisfiable. */
  range: (details: string, total?: number) =>
    new RestError(416, "PGRST103", "Requested range not satisfiable", {
      details,
      headers: { "content-range": `*/${total ?? "*"}` },
    }),
  /** PGRST116: a single object was asked for and the result has another number of rows. */
  singular: (rows: number) =>
    new RestError(406, "PGRST116", "Cannot coerce the result to a single JSON object", {
      details: `The result contains ${rows} rows`,
    }),
  /** PGRST200: no foreign key links the two tables. */
  noRelationship: (from: string, to: string) =>
    new RestError(
      400,
      "PGRST200",
      `Could not find a relationship between '${from}' and '${to}' in the schema cache`,
      {
        hint: `Check that a foreign key links '${from}' and '${to}', or name it with '${to}!<foreign key>'`,
      },
    ),
  /** PGRST201: several foreign keys link the two tables. */
  ambiguous: (from: string, to: string, names: string[]) =>
    new RestError(
      300,
      "PGRST201",
      `Could not embed because more than one relationship was found for '${from}' and '${to}'`,
      {
        details: `Candidates: ${names.join(", ")}`,
        hint: `Try changing '${to}' to one of ${names.map((n) => `'${to}!${n}'`).join(", ")}`,
      },
    ),
  /** PGRST204: a body key names no column. */
  unknownBodyColumn: (column: string, table: string) =>
    new RestError(400, "PGRST204", `Could not find the '${column}' column of '${table}' in the schema cache`),
  /** PGRST205 / 42P01: the table is not in the schema cache. */
  unknownTable: (table: string) =>
    new RestError(404, "PGRST205", `Could not find the table 'public.${table}' in the schema cache`),
  /** 42703: a column of the query does not exist. */
  unknownColumn: (table: string, column: string) =>
    new RestError(400, "42703", `column ${table}.${column} does not exist`),
  /** PGRST124: more rows would change than `max-affected` allows. */
  maxAffected: (rows: number, max: number) =>
    new RestError(400, "PGRST124", "Query result exceeds max-affected preference constraint", {
      details: `The query affects ${rows} rows`,
      hint: `At most ${max} rows may be affected`,
    }),
  /** 21000: PATCH or DELETE without any filter (safe update). */
  unfiltered: (method: "UPDATE" | "DELETE") =>
    new RestError(400, "21000", `${method} requires a WHERE clause`, {
      hint: "Add a filter, e.g. id=not.is.null to change every row on purpose",
    }),
};
