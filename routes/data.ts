import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { decodeProtectedHeader } from "jose";
import { decodeBase64 } from "../lib/encoding.ts";
import { AppError } from "../lib/errors.ts";
import { log } from "../lib/log.ts";
import { RestError, restErrors } from "../lib/rest_errors.ts";
import { CsvError, parseCsvBody } from "../services/data/csv.ts";
import type { DataIdentity, DataRequest, DataResult, RpcRequest } from "../services/data/data.ts";
import { dataExchange } from "./data_context.ts";
import type { AppEnv, Caller } from "./env.ts";
import { errorResponse, toAppError } from "./errors.ts";
import { authenticate } from "./middleware/auth.ts";
import { ErrorEnvelope, PROJECT_SECURITY } from "./schemas.ts";
import { TENANT_CONTENT_CSP } from "./tenant_content.ts";

/** The two mounts of the one engine: `/v1/db` (the platform's envelope) and `/rest/v1` (PostgREST's). */
type Mount = "envelope" | "postgrest";

const ENVELOPE_PREFIX = "/v1/db/";
const POSTGREST_PREFIX = "/rest/v1/";

/** The database role and claims of a caller: admin acts as service_role. */
export function dataIdentity(caller: Caller): DataIdentity {
  if (caller.role === "authenticated" && caller.user) {
    return { role: "authenticated", claims: { ...caller.user } };
  }
  const role = caller.role === "anon" ? "anon" : "service_role";
  return { role, claims: { role } };
}

/** Media types PostgREST names by their canonical name when it refuses them as a body. */
const KNOWN_BODY_TYPES = new Set([
  "text/csv",
  "text/plain",
  "text/xml",
  "application/x-www-form-urlencoded",
  "application/octet-stream",
  "application/geo+json",
  "application/openapi+json",
]);

/** A request body as read: a JSON value (CSV rows and table form fields become one), or a call's raw body. */
interface Body {
  value: unknown;
  /** The media type of the body, lowercased (`application/json` when absent). */
  mime: string;
  /** An `application/x-www-form-urlencoded` call's fields: arguments as text, as in a GET's query. */
  form?: Map<string, string[]>;
}

/**
 * Reads a body as PostgREST does. JSON; `text/csv` (a header row, then rows of text, `NULL` as null); form
 * fields (a table: one object of text values); and for a function call only, `text/plain`, `text/xml` and
 * `application/octet-stream` as the raw value of its one unnamed parameter. Anything else is 400 PGRST102.
 */
async function readBody(c: Context<AppEnv>, target: "table" | "call", method: string): Promise<Body> {
  const type = c.req.header("content-type");
  const mime = type === undefined
    ? "application/json"
    : /^\s*([A-Za-z0-9.*]+\/[A-Za-z0-9.*+-]+)/.exec(type)?.[1]?.toLowerCase();
  const call = target === "call";
  // No body takes no arguments, whatever its type says (fetch labels an empty string `text/plain`).
  const none = { value: {}, mime: "application/json" };
  if (call && mime === "application/octet-stream") {
    const bytes = new Uint8Array(await c.req.arrayBuffer());
    if (bytes.length === 0) return none;
    return { value: `\\x${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`, mime };
  }
  const text = await c.req.text();
  if (call && text === "") return none;
  if (call && (mime === "text/plain" || mime === "text/xml")) return { value: text, mime };
  if (mime === "application/x-www-form-urlencoded") {
    const fields = new URLSearchParams(text);
    if (!call) return { value: Object.fromEntries(fields), mime };
    const form = new Map<string, string[]>();
    for (const [k, v] of fields) form.set(k, [...form.get(k) ?? [], v]);
    return { value: {}, mime, form };
  }
  if (mime === "text/csv") {
    let rows;
    try {
      rows = parseCsvBody(text);
    } catch (err) {
      if (err instanceof CsvError) throw restErrors.body(err.message);
      throw err;
    }
    // PATCH takes one object: the one row of its CSV.
    return { value: method === "PATCH" && rows.length === 1 ? rows[0] : rows, mime };
  }
  if (mime !== "application/json") {
    throw restErrors.contentType(mime && KNOWN_BODY_TYPES.has(mime) ? mime : type ?? "");
  }
  // A call with only white space takes no arguments, as `{}` does.
  if (call && text.trim() === "") return { value: {}, mime };
  try {
    return { value: JSON.parse(text), mime };
  } catch {
    throw restErrors.body("Empty or invalid json");
  }
}

async function handle(c: Context<AppEnv>, mount: Mount): Promise<Response> {
  const parsing = performance.now();
  const method = c.req.method.toUpperCase() as DataRequest["method"];
  const url = new URL(c.req.url);
  const prefix = mount === "envelope" ? ENVELOPE_PREFIX : POSTGREST_PREFIX;
  const raw = url.pathname.slice(url.pathname.indexOf(prefix) + prefix.length);
  let table: string;
  try {
    table = decodeURIComponent(raw);
  } catch {
    throw restErrors.unknownTable(raw); // malformed percent-encoding names no table
  }
  const profile = c.req.header(method === "GET" || method === "HEAD" ? "accept-profile" : "content-profile");
  // An unexposed schema is 406 PGRST106 before the body is read.
  await c.env.platform.data.profile(c.var.project.ref, profile);
  const body = method === "POST" || method === "PUT" || method === "PATCH"
    ? (await readBody(c, "table", method)).value
    : undefined;
  const identity = { ...dataIdentity(c.var.caller), request: dataExchange(c, `/${raw}`) };
  const parsed = performance.now() - parsing;
  const result = await c.env.platform.data.execute(c.var.project.ref, identity, {
    method,
    table,
    search: url.searchParams,
    prefer: c.req.header("prefer"),
    range: c.req.header("range"),
    accept: c.req.header("accept"),
    body,
    // The envelope keeps pg-safeupdate's refusal of an unfiltered PATCH/DELETE; /rest/v1 allows it, as PostgREST.
    requireFilter: mount === "envelope",
    defaultReturn: mount === "envelope" ? "representation" : "minimal",
    negotiate: mount === "postgrest",
    rawQuery: mount === "postgrest" ? url.search : undefined,
    profile,
  });
  return serialize(result, mount, method === "HEAD", { jwt: c.get("authMs"), parse: parsed });
}

/** `GET|HEAD|POST {prefix}rpc/{fn}`: a function call; the arguments in the query (GET) or the body (POST). */
async function handleRpc(c: Context<AppEnv>, mount: Mount): Promise<Response> {
  const parsing = performance.now();
  const method = c.req.method.toUpperCase() as RpcRequest["method"];
  const url = new URL(c.req.url);
  const prefix = (mount === "envelope" ? ENVELOPE_PREFIX : POSTGREST_PREFIX) + "rpc/";
  const raw = url.pathname.slice(url.pathname.indexOf(prefix) + prefix.length);
  let fn: string;
  try {
    fn = decodeURIComponent(raw);
  } catch {
    fn = raw; // malformed percent-encoding names no function: PGRST202
  }
  const profile = c.req.header(method === "POST" ? "content-profile" : "accept-profile");
  // An unexposed schema is 406 PGRST106 before the body is read.
  await c.env.platform.data.profile(c.var.project.ref, profile);
  const body = method === "POST" ? await readBody(c, "call", method) : undefined;
  const identity = { ...dataIdentity(c.var.caller), request: dataExchange(c, `/rpc/${raw}`) };
  const parsed = performance.now() - parsing;
  const result = await c.env.platform.data.call(c.var.project.ref, identity, {
    method,
    fn,
    search: url.searchParams,
    prefer: c.req.header("prefer"),
    range: c.req.header("range"),
    accept: c.req.header("accept"),
    body: body?.value,
    contentType: body?.mime,
    form: body?.form,
    negotiate: mount === "postgrest",
    profile,
  });
  return serialize(result, mount, method === "HEAD", { jwt: c.get("authMs"), parse: parsed });
}

/** Statuses whose answer has no body (a function may set one through `response.status`). */
const BODILESS = new Set([204, 205, 304]);

/** Milliseconds spent before the engine: on the caller's credentials, and on reading the request. */
interface RouteTimes {
  jwt?: number;
  parse: number;
}

function serialize(result: DataResult, mount: Mount, head: boolean, times?: RouteTimes): Response {
  const started = performance.now();
  const headers = new Headers(result.headers);
  // PostgREST: a header the SQL set replaces the one of its name (`Content-Type` too); all of them are sent,
  // in order.
  const fromSql = new Set((result.sqlHeaders ?? []).map(([name]) => name.toLowerCase()));
  const setType = (value: string) => {
    if (!fromSql.has("content-type")) headers.set("content-type", value);
  };
  for (const [name] of result.sqlHeaders ?? []) headers.delete(name);
  for (const [name, value] of result.sqlHeaders ?? []) headers.append(name, value);
  // A type the project's SQL chose may be HTML: it runs sandboxed, off the console's origin (tenant_content.ts).
  if (fromSql.has("content-type") || result.media?.kind === "custom") {
    headers.append("content-security-policy", TENANT_CONTENT_CSP);
  }
  if (BODILESS.has(result.status)) {
    return withTiming(new Response(null, { status: result.status, headers }), result, times, started);
  }
  let text: string | Uint8Array<ArrayBuffer> | null;
  if (mount === "envelope") {
    text = `{"data":${result.body ?? "null"},"meta":null}`;
    headers.set("content-type", "application/json; charset=utf-8");
  } else if (result.media?.kind === "csv") {
    text = result.body; // written as CSV by the statement
    setType(result.media.contentType);
  } else if (result.media?.kind === "custom") {
    // A media type handler's value as it is (its bytes for a bytea domain); none is an empty body.
    text = result.body === null
      ? ""
      : result.media.handler!.binary
      ? new Uint8Array(decodeBase64(result.body))
      : result.body;
    setType(result.media.contentType);
  } else {
    text = result.body;
    if (text !== null || head) {
      setType(result.media?.contentType ?? "application/json; charset=utf-8");
    }
  }
  return withTiming(
    new Response(head ? null : text, { status: result.status, headers }),
    result,
    times,
    started,
  );
}

/** One metric of `Server-Timing`, in milliseconds. */
const dur = (name: string, ms: number) => `${name};dur=${ms.toFixed(1)}`;

/** PostgREST's `Server-Timing` (`jwt`, `parse`, `plan`, `transaction`, `response`), when the project enables it. */
function withTiming(
  res: Response,
  result: DataResult,
  times: RouteTimes | undefined,
  started: number,
): Response {
  if (!result.timing || !times) return res;
  res.headers.set(
    "server-timing",
    [
      dur("jwt", times.jwt ?? 0),
      dur("parse", times.parse),
      dur("plan", result.timing.plan),
      dur("transaction", result.timing.transaction),
      dur("response", performance.now() - started),
    ].join(", "),
  );
  return res;
}

/**
 * The PostgREST error body `{code, message, details, hint}`, as `application/json; charset=utf-8` with
 * `Proxy-Status: PostgREST; error=<code>`. Database errors keep their text at 5xx too, as in PostgREST (the
 * service already made connection and server failures generic); any other failure keeps the generic body.
 */
function postgrestError(c: Context<AppEnv>, err: unknown): Response {
  const e = jwtError(c, err) ?? toAppError(err);
  if (e.status >= 500 && !(e instanceof RestError)) return errorResponse(c, err); // logged there
  if (e.status >= 500) log.error("data request failed", { code: e.code, request_id: c.env.requestId });
  const rest = e instanceof RestError ? e : null;
  const body = JSON.stringify({
    code: e.code,
    message: e.message,
    details: rest?.details ?? null,
    hint: rest?.hint ?? null,
  });
  const headers = new Headers(e.headers);
  headers.set("content-type", "application/json; charset=utf-8");
  headers.set("proxy-status", `PostgREST; error=${e.code}`);
  headers.set("x-request-id", c.env.requestId);
  // A raised 204, 205 or 304 (`PT204`, a PGRST status) is sent as such: a status that carries no body.
  return new Response(BODILESS.has(e.status) ? null : body, { status: e.status, headers });
}

/**
 * A refused user token on `/rest/v1` as PostgREST words it: PGRST301 (does not decode or verify), PGRST303
 * (its claims: expired, not valid yet, another audience), with `WWW-Authenticate: Bearer error="invalid_token", …`.
 */
function jwtError(c: Context<AppEnv>, err: unknown): RestError | null {
  if (!(err instanceof AppError) || err.status !== 401 || err instanceof RestError) return null;
  const header = c.req.header("authorization") ?? "";
  let code = "PGRST301", message: string, details: string | null = null;
  if (err.code === "UNAUTHORIZED" && /^bearer\s*$/i.test(header)) {
    message = "Empty JWT is sent in Authorization header";
  } else if (err.code !== "INVALID_TOKEN") {
    return null;
  } else {
    const token = header.replace(/^bearer\s+/i, "").trim();
    const parts = token.split(".").length;
    const alg = parts === 3 ? jwtAlgorithm(token) : undefined;
    if (parts !== 3) message = `Expected 3 parts in JWT; got ${parts}`;
    // PostgREST's JWT library: a header that does not decode is BadCrypto; an unsecured token BadAlgorithm.
    else if (alg === null) message = "JWT cryptographic operation failed";
    else if (alg === "none") {
      [message, details] = [
        "Wrong or unsupported encoding algorithm",
        "JWT is unsecured but expected 'alg' was not 'none'",
      ];
    } else if (/expired/i.test(err.message)) [code, message] = ["PGRST303", "JWT expired"];
    else if (/not valid yet/i.test(err.message)) [code, message] = ["PGRST303", "JWT not yet valid"];
    else if (/audience/i.test(err.message)) [code, message] = ["PGRST303", "JWT not in audience"];
    else if (/session has ended|^The JWT '\w+' claim must be/i.test(err.message)) {
      [code, message] = ["PGRST303", err.message];
    } else {[message, details] = [
        "No suitable key or wrong key type",
        "None of the keys was able to decode the JWT",
      ];}
  }
  return new RestError(401, code, message, {
    details,
    headers: {
      "www-authenticate": `Bearer error="invalid_token", error_description=${JSON.stringify(message)}`,
    },
  });
}

/** The `alg` of a JWT's header; null when the header is not base64url of a JSON object. */
function jwtAlgorithm(token: string): unknown {
  try {
    return decodeProtectedHeader(token).alg;
  } catch {
    return null;
  }
}

/** The envelope error, with PostgREST's details and hint when there are some. */
function envelopeError(c: Context<AppEnv>, err: unknown): Response {
  // The platform's envelope answers a statement timeout 504 `timeout` (PostgREST: 500).
  if (err instanceof RestError && err.code === "57014") {
    err = new RestError(504, err.code, err.message, { cause: err.cause });
  }
  if (!(err instanceof RestError) || err.status >= 500) return errorResponse(c, err);
  const error: Record<string, unknown> = {
    code: err.code,
    message: err.message,
    type: err.type,
    request_id: c.env.requestId,
  };
  if (err.details !== null) error.details = err.details;
  if (err.hint !== null) error.hint = err.hint;
  return c.json({ error }, err.status, err.headers);
}

/** Routes the data API's errors to the serializer of the mount. */
export function dataError(c: Context<AppEnv>, err: unknown): Response {
  const postgrest = c.req.path.startsWith(POSTGREST_PREFIX) || c.req.path === "/rest/v1";
  return postgrest ? postgrestError(c, err) : envelopeError(c, err);
}

const TableParam = z.object({
  table: z.string().min(1).openapi({ param: { name: "table", in: "path" }, example: "todos" }),
});

const QUERY_TEXT = "PostgREST query string: `select` (columns, `alias:col`, `col::type`, `data->a->>b`, " +
  "embeds `table(cols)`, `table!fk(cols)`, `table!inner(cols)`), filters `col=op.value` (eq neq gt gte lt lte " +
  "like ilike match imatch in is isdistinct fts plfts phfts wfts cs cd ov sl sr nxr nxl adj, with `not.` and " +
  "`(any)`/`(all)`), `or=(…)`, `and=(…)`, `order=col.desc.nullslast`, `limit`, `offset`; embedded " +
  "`table.col=…`, `table.order`, `table.limit`. See docs/data.md.";

const Rows = z.array(z.record(z.string(), z.unknown()));
const rowsResponse = (description: string) => ({
  content: { "application/json": { schema: z.object({ data: Rows, meta: z.null() }) } },
  description,
  headers: z.object({ "content-range": z.string().openapi({ example: "0-19/100" }) }),
});
const dataFailures = {
  400: {
    content: { "application/json": { schema: ErrorEnvelope } },
    description: "Bad query (PGRST100, 42703…)",
  },
  401: {
    content: { "application/json": { schema: ErrorEnvelope } },
    description: "Missing key, or anon denied",
  },
  403: { content: { "application/json": { schema: ErrorEnvelope } }, description: "Denied by RLS (42501)" },
  404: {
    content: { "application/json": { schema: ErrorEnvelope } },
    description: "Unknown table (PGRST205)",
  },
  409: { content: { "application/json": { schema: ErrorEnvelope } }, description: "Conflict (23505, 23503)" },
};
const headerDoc =
  "Headers: `Prefer` (return=minimal|headers-only|representation, count=exact|planned|estimated, " +
  "resolution=merge-duplicates|ignore-duplicates, missing=default), `Range: 0-9`, " +
  "`Accept: application/vnd.pgrst.object+json` for one object.";

/** The data API: `/v1/db/{table}` in the envelope and `/rest/v1/{table}` in PostgREST's wire format. */
export const dataRoutes = new OpenAPIHono<AppEnv>();
// authenticate resolves the project too (one middleware layer less on every data request).
for (const path of ["/v1/db/*", "/rest/v1/*"]) dataRoutes.use(path, authenticate);
dataRoutes.onError((err, c) => dataError(c, err));

const common = { tags: ["Data"], security: PROJECT_SECURITY, request: { params: TableParam } };
const bodyDoc = "Body: a JSON object, or an array of objects (bulk insert). ";
// The routes are documented here and served below by one handler per mount: the query string and the body
// follow PostgREST's grammar, which the engine parses itself (errors PGRST100, PGRST102…).
for (
  const route of [
    createRoute({
      ...common,
      method: "get",
      path: "/v1/db/{table}",
      summary: "Read rows (PostgREST filters, RLS applies); HEAD for the count only",
      description: `${QUERY_TEXT} ${headerDoc}`,
      responses: {
        200: rowsResponse("The rows"),
        206: rowsResponse("A partial page (with a count)"),
        ...dataFailures,
      },
    }),
    createRoute({
      ...common,
      method: "post",
      path: "/v1/db/{table}",
      summary: "Insert a row or rows; upsert with Prefer: resolution=…",
      description: `${bodyDoc}Query: \`columns\`, \`on_conflict\`, \`select\`. ${headerDoc}`,
      responses: { 201: rowsResponse("The inserted rows (unless Prefer: return=minimal)"), ...dataFailures },
    }),
    createRoute({
      ...common,
      method: "put",
      path: "/v1/db/{table}",
      summary: "Insert or replace one row by its primary key (filters: `pk=eq.value` on every key column)",
      description: "Body: one object whose primary key values are the filters' (PGRST115 otherwise). " +
        `Filters: \`eq\` on each primary key column and nothing else (PGRST105); no limit/offset. ${headerDoc}`,
      responses: {
        200: rowsResponse("The row, updated"),
        201: rowsResponse("The row, inserted"),
        ...dataFailures,
      },
    }),
    createRoute({
      ...common,
      method: "patch",
      path: "/v1/db/{table}",
      summary: "Update the rows the filters match (a filter is required)",
      description: `${bodyDoc}${QUERY_TEXT} ${headerDoc}`,
      responses: { 200: rowsResponse("The updated rows"), ...dataFailures },
    }),
    createRoute({
      ...common,
      method: "delete",
      path: "/v1/db/{table}",
      summary: "Delete the rows the filters match (a filter is required)",
      description: `${QUERY_TEXT} ${headerDoc}`,
      responses: { 200: rowsResponse("The deleted rows"), ...dataFailures },
    }),
  ]
) dataRoutes.openAPIRegistry.registerPath(route);

const FnParam = z.object({
  fn: z.string().min(1).openapi({ param: { name: "fn", in: "path" }, example: "add_them" }),
});
const rpcCommon = { tags: ["Data"], security: PROJECT_SECURITY, request: { params: FnParam } };
const rpcResponse = {
  content: { "application/json": { schema: z.object({ data: z.unknown(), meta: z.null() }) } },
  description:
    "The result: a value, an object (one row), or an array (a set), filtered and shaped by the query",
};
const rpcFailures = {
  ...dataFailures,
  404: {
    content: { "application/json": { schema: ErrorEnvelope } },
    description: "No function of that name takes these arguments (PGRST202)",
  },
};
for (
  const route of [
    createRoute({
      ...rpcCommon,
      method: "post",
      path: "/v1/db/rpc/{fn}",
      summary: "Call a function of the public schema (RPC) with named arguments in the body",
      description: 'Body: the arguments by name, e.g. `{"a": 1, "b": 2}` (empty: none). `Prefer: ' +
        "params=single-object` passes the whole body as the function's one json/jsonb parameter. The query " +
        "filters, orders, pages and shapes a set-returning result (`select`, `order`, `limit`, filters). " +
        "Runs as the caller's role under RLS. A function returning void answers 204.",
      responses: { 200: rpcResponse, 204: { description: "The function returns void" }, ...rpcFailures },
    }),
    createRoute({
      ...rpcCommon,
      method: "get",
      path: "/v1/db/rpc/{fn}",
      summary: "Call a function with the arguments in the query (read only); HEAD for the headers",
      description: "`?a=1&b=2`: a query key that is not reserved and whose value is not a filter is an " +
        "argument; the rest filters and shapes the result. Runs in a read-only transaction (a function that " +
        "writes is 405 `25006`: call it with POST).",
      responses: { 200: rpcResponse, 204: { description: "The function returns void" }, ...rpcFailures },
    }),
  ]
) dataRoutes.openAPIRegistry.registerPath(route);

const RPC_METHODS = ["GET", "POST"];
const rpcMethod = (c: Context<AppEnv>) => {
  throw restErrors.rpcMethod(c.req.method);
};
dataRoutes.on(RPC_METHODS, "/v1/db/rpc/:fn", (c) => handleRpc(c, "envelope"));
dataRoutes.on(RPC_METHODS, "/rest/v1/rpc/:fn", (c) => handleRpc(c, "postgrest"));
dataRoutes.on(["PATCH", "DELETE", "PUT"], ["/v1/db/rpc/:fn", "/rest/v1/rpc/:fn"], rpcMethod);
// OPTIONS (not a CORS preflight, which the edge answers): the methods the resource allows, in `Allow`.
dataRoutes.options("/rest/v1/rpc/:fn", async (c) => {
  const started = performance.now();
  const fn = decodeOr(c.req.param("fn"));
  return await allow(
    c,
    await c.env.platform.data.allowedMethods(
      c.var.project.ref,
      { fn, search: new URL(c.req.url).searchParams },
      profileOf(c),
    ),
    started,
  );
});
dataRoutes.options("/rest/v1/:table", async (c) => {
  const started = performance.now();
  const table = decodeOr(c.req.param("table"));
  const methods = await c.env.platform.data.allowedMethods(c.var.project.ref, { table }, profileOf(c));
  return await allow(c, methods, started);
});
dataRoutes.options("/rest/v1/", async (c) => {
  const started = performance.now();
  await c.env.platform.data.checkOpenApi(c.var.project.ref);
  return await allow(c, "OPTIONS,GET,HEAD", started);
});
// The OpenAPI root: PostgREST's Swagger 2.0 document of the exposed (or Accept-Profile's) schema.
dataRoutes.on(["GET", "HEAD"], ["/rest/v1/", "/rest/v1"], async (c) => {
  const parsing = performance.now();
  const url = new URL(c.req.url);
  const scheme = url.protocol === "https:" ? "https" : "http";
  const port = url.port || (scheme === "https" ? "443" : "80");
  const parse = performance.now() - parsing;
  const result = await c.env.platform.data.openApi(c.var.project.ref, dataIdentity(c.var.caller), {
    profile: c.req.header("accept-profile"),
    accept: c.req.header("accept"),
    server: { scheme, host: `${url.hostname}:${port}`, basePath: "/rest/v1" },
  });
  return serialize(result, "postgrest", c.req.method === "HEAD", { jwt: c.get("authMs"), parse });
});

/** The schema an `OPTIONS` asks for (`Accept-Profile`, as a read). */
function profileOf(c: Context<AppEnv>): string | undefined {
  return c.req.header("accept-profile");
}

/** A percent-decoded path segment, or the segment as sent when its encoding is malformed. */
function decodeOr(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/**
 * An `OPTIONS` answer: `Allow`, and when the project enables it PostgREST's `Server-Timing` of the phases an
 * OPTIONS has (`jwt`, `parse`: reading the request and the resource, `response`).
 */
async function allow(c: Context<AppEnv>, methods: string, started: number): Promise<Response> {
  const parse = performance.now() - started;
  const headers = new Headers({
    allow: methods,
    "access-control-allow-origin": "*",
    "content-length": "0",
  });
  if ((await c.env.platform.data.settingsOf(c.var.project.ref)).serverTiming) {
    const answering = performance.now();
    headers.set(
      "server-timing",
      [dur("jwt", c.get("authMs") ?? 0), dur("parse", parse), dur("response", performance.now() - answering)]
        .join(", "),
    );
  }
  return new Response(null, { status: 200, headers });
}

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"];
dataRoutes.on(METHODS, "/v1/db/:table", (c) => handle(c, "envelope"));
dataRoutes.on(METHODS, "/rest/v1/:table", (c) => handle(c, "postgrest"));
// Any other method: PostgREST's 405 (PGRST101 on a function, PGRST117 elsewhere).
dataRoutes.all("/rest/v1/rpc/:fn", rpcMethod);
const unsupported = (c: Context<AppEnv>) => {
  throw restErrors.unsupportedMethod(c.req.method);
};
dataRoutes.all("/rest/v1/:table", unsupported);
dataRoutes.all("/rest/v1/", unsupported);
dataRoutes.all("/rest/v1", unsupported);
// Any other path below the mount (`/rest/v1/a/b`) is PostgREST's PGRST125, whatever the method.
dataRoutes.all("/rest/v1/*", () => {
  throw restErrors.invalidPath();
});
