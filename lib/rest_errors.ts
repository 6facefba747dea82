import type { ContentfulStatusCode } from "hono/utils/http-status";
import { AppError, typeOfStatus } from "./errors.ts";

/**
 * RestError is a data API failure with PostgREST's code (`PGRST100`, `42703`, `23505`…), its HTTP status and
 * its `details` and `hint`. It is an AppError, so the envelope mount needs nothing special; the PostgREST mount
 * writes `{code, message, details, hint}` from the same fields. `details` is text, except PGRST201's list of
 * candidate relationships.
 */
export class RestError extends AppError {
  readonly details: unknown;
  readonly hint: string | null;

  constructor(
    status: number,
    code: string,
    message: string,
    extra: {
      details?: unknown;
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

/** One candidate of an ambiguous embed, as PGRST201 lists it. */
export interface RelationshipCandidate {
  cardinality: "many-to-one" | "one-to-many" | "one-to-one" | "many-to-many";
  /** `books with authors` */
  embedding: string;
  /** `books_author_id_fkey using books(author_id) and authors(id)` */
  relationship: string;
  /** What disambiguates it after the `!`: the constraint, or the junction table. */
  hint: string;
}

/** The data API's own errors, with PostgREST's codes, statuses and wording (PostgREST v12–v14). */
export const restErrors = {
  /** PGRST100: the query string does not parse. */
  parse: (message: string, details?: string) => new RestError(400, "PGRST100", message, { details }),
  /** PGRST102: the body is not valid JSON of the right shape. */
  body: (message: string, details?: string) => new RestError(400, "PGRST102", message, { details }),
  /** PGRST101: a method other than GET, HEAD, POST (or OPTIONS) on `/rpc/{fn}`. */
  rpcMethod: (method: string) => new RestError(405, "PGRST101", `Cannot use the ${method} method on RPC`),
  /** PGRST125: a path below the mount that names no resource (`/a/b/c`). */
  invalidPath: () => new RestError(404, "PGRST125", "Invalid path specified in request URL"),
  /** PGRST103: the requested range is not satisfiable. */
  range: (details: string, total?: number) =>
    new RestError(416, "PGRST103", "Requested range not satisfiable", {
      details,
      headers: { "content-range": `*/${total ?? "*"}` },
    }),
  /** PGRST103: a negative `limit` (PostgREST answers it without a Content-Range). */
  negativeLimit: () =>
    new RestError(416, "PGRST103", "Requested range not satisfiable", {
      details: "Limit should be greater than or equal to zero.",
    }),
  /** PGRST103: an offset past the last row. */
  outOfBounds: (offset: number, total: number) =>
    restErrors.range(`An offset of ${offset} was requested, but there are only ${total} rows.`, total),
  /** PGRST103: a Range header whose end is before its start. */
  lowerGtUpper: () =>
    restErrors.range(
      "The lower boundary must be lower than or equal to the upper boundary in the Range header.",
    ),
  /** PGRST105: the filters of a PUT are not `eq` on exactly the primary key columns. */
  putFilters: () =>
    new RestError(
      405,
      "PGRST105",
      "Filters must include all and only primary key columns with 'eq' operators",
    ),
  /** PGRST114: `limit`/`offset` on a PUT. */
  putRange: () =>
    new RestError(400, "PGRST114", "limit/offset querystring parameters are not allowed for PUT"),
  /** PGRST115: the body of a PUT is not one row whose primary key is the one the filters give. */
  putMismatch: () =>
    new RestError(400, "PGRST115", "Payload values do not match URL in primary key column(s)"),
  /** PGRST106: `Accept-Profile` / `Content-Profile` names a schema that is not exposed. */
  unacceptableSchema: (schema: string, exposed: string[]) =>
    new RestError(406, "PGRST106", `Invalid schema: ${schema}`, {
      hint: `Only the following schemas are exposed: ${exposed.join(", ")}`,
    }),
  /** PGRST126: the OpenAPI root with `openapi_mode` disabled (PostgREST v13+). */
  openApiDisabled: () => new RestError(404, "PGRST126", "Root endpoint metadata is disabled"),
  /** PGRST107: nothing the resource produces is acceptable (`Accept`). */
  mediaType: (accepted: string[]) =>
    new RestError(406, "PGRST107", `None of these media types are available: ${accepted.join(", ")}`),
  /** PGRST102: a body of a type the resource does not take. */
  contentType: (mime: string) => new RestError(400, "PGRST102", `Content-Type not acceptable: ${mime}`),
  /** PGRST108: a filter, order or limit on a resource the select does not embed. */
  notEmbedded: (resource: string) =>
    new RestError(400, "PGRST108", `'${resource}' is not an embedded resource in this request`, {
      hint: `Verify that '${resource}' is included in the 'select' query parameter.`,
    }),
  /** PGRST116: a single object was asked for and the result has another number of rows. */
  singular: (rows: number) =>
    new RestError(406, "PGRST116", "Cannot coerce the result to a single JSON object", {
      details: `The result contains ${rows} rows`,
    }),
  /** PGRST117: a method the resource does not answer. */
  unsupportedMethod: (method: string) => new RestError(405, "PGRST117", `Unsupported HTTP method: ${method}`),
  /** PGRST122: `handling=strict` with preferences PostgREST does not know. */
  invalidPreferences: (prefs: string[]) =>
    new RestError(400, "PGRST122", "Invalid preferences given with handling=strict", {
      details: `Invalid preferences: ${prefs.join(", ")}`,
    }),
  /** PGRST200: no foreign key links the two tables; `suggestion` is a close name ("Perhaps you meant"). */
  noRelationship: (from: string, to: string, hint: string | undefined, schema: string, suggestion?: string) =>
    new RestError(
      400,
      "PGRST200",
      `Could not find a relationship between '${from}' and '${to}' in the schema cache`,
      {
        details: `Searched for a foreign key relationship between '${from}' and '${to}${
          hint === undefined ? "" : `' using the hint '${hint}`
        }' in the schema '${schema}', but no matches were found.`,
        hint: suggestion ?? null,
      },
    ),
  /** PGRST201: several foreign keys link the two tables. */
  ambiguous: (to: string, candidates: RelationshipCandidate[]) =>
    new RestError(
      300,
      "PGRST201",
      `Could not embed because more than one relationship was found for '${
        candidates[0]?.embedding.split(" with ")[0]
      }' and '${to}'`,
      {
        details: candidates.map(({ cardinality, embedding, relationship }) => ({
          cardinality,
          embedding,
          relationship,
        })),
        hint: `Try changing '${to}' to one of the following: ${
          candidates.map((c) => `'${c.embedding.split(" with ")[1]}!${c.hint}'`).join(", ")
        }. Find the desired relationship in the 'details' key.`,
      },
    ),
  /** PGRST204: a body key names no column. */
  unknownBodyColumn: (column: string, table: string) =>
    new RestError(400, "PGRST204", `Could not find the '${column}' column of '${table}' in the schema cache`),
  /** PGRST205: the table is not in the schema cache; `suggestion` is a close table name. */
  unknownTable: (table: string, schema = "public", suggestion?: string) =>
    new RestError(404, "PGRST205", `Could not find the table '${schema}.${table}' in the schema cache`, {
      hint: suggestion === undefined ? null : `Perhaps you meant the table '${schema}.${suggestion}'`,
    }),
  /** 42703: a column of the query does not exist. */
  unknownColumn: (table: string, column: string) =>
    new RestError(400, "42703", `column ${table}.${column} does not exist`),
  /** PGRST124: more rows would change than `max-affected` allows. */
  maxAffected: (rows: number) =>
    new RestError(400, "PGRST124", "Query result exceeds max-affected preference constraint", {
      details: `The query affects ${rows} rows`,
    }),
  /** PGRST128: `max-affected` under `handling=strict` on a function that returns one value (or none). */
  maxAffectedRpc: () =>
    new RestError(
      400,
      "PGRST128",
      "Function must return SETOF or TABLE when max-affected preference is used with handling=strict",
    ),
  /** 21000: PATCH or DELETE without any filter (pg-safeupdate's error, as Supabase answers it). */
  unfiltered: (method: "UPDATE" | "DELETE") =>
    new RestError(400, "21000", `${method} requires a WHERE clause`),
};
