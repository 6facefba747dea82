import { createRoute, z } from "@hono/zod-openapi";
import { encodeBase64 } from "../lib/encoding.ts";
import { errors } from "../lib/errors.ts";
import type { InvokeInput, InvokeResult, StreamedResult } from "../services/functions/invoke.ts";
import type { EdgeEnv } from "./env.ts";
import { CONSOLE_COOKIE, resolveRequest } from "./middleware/auth.ts";
import { readBody } from "./middleware/body.ts";
import { type OwnBody, tooDeep } from "./middleware/edge.ts";
import { jsonTooDeep } from "./middleware/json_depth.ts";
import { pathOf } from "./middleware/path.ts";
import { clientAddressOf } from "./middleware/rate_limit.ts";
import { failures, ok, PROJECT_SECURITY } from "./schemas.ts";
import { TENANT_CONTENT_CSP } from "./tenant_content.ts";

/** The body of POST /v1/functions/{name}/invoke (docs/functions.md). */
export const InvokeBody = z.strictObject({
  method: z.string().max(16).optional().openapi({ description: "HTTP method seen by the function (POST)" }),
  path: z.string().max(4096).optional().openapi({ description: "Path with query seen by the function (/)" }),
  headers: z.record(z.string(), z.string().max(8192)).optional()
    .openapi({ description: "Headers for the function; reserved ones are dropped" }),
  body: z.unknown().optional().openapi({ description: "Body for the function: JSON value or text" }),
  body_encoding: z.enum(["utf8", "base64"]).optional()
    .openapi({ description: "base64: body is a string of base64-encoded bytes" }),
}).openapi("InvokeFunction");

/** The default (envelope) answer of an invoke. */
export const InvokeEnvelope = z.object({
  status: z.number().int(),
  headers: z.record(z.string(), z.string()),
  body: z.unknown(),
  body_encoding: z.literal("base64").optional().openapi({ description: "Present when body is base64 bytes" }),
  logs: z.array(z.string()),
  duration_ms: z.number(),
}).openapi("InvokeResult");

const utf8Lenient = new TextDecoder();

/**
 * POST /v1/functions/{name}/invoke. The edge serves it itself ({@linkcode serveInvoke}), in front of the Hono
 * app, whose per-request layers cost a measurable share of a warm call; this definition is its OpenAPI entry
 * and the path the edge matches.
 */
export const invokeRoute = createRoute({
  method: "post",
  path: "/v1/functions/{name}/invoke",
  tags: ["Functions"],
  summary: "Invoke a function (anon, authenticated, service_role, admin)",
  description: "Default: the function's answer in the envelope. With `X-Service-Invoke-Mode: raw`: the " +
    "function's own status, content type and bytes, plus `x-service-invoke-origin: function`.",
  security: PROJECT_SECURITY,
  request: {
    params: z.object({
      name: z.string().min(1).max(200).openapi({ description: "The function's name, or its id" }),
    }),
    headers: z.object({ "x-service-invoke-mode": z.enum(["raw"]).optional() }),
    body: { content: { "application/json": { schema: InvokeBody } }, required: false },
  },
  responses: {
    200: ok(InvokeEnvelope, "The function's answer"),
    ...failures(400, 401, 403, 404, 503),
    429: { content: { "application/json": { schema: z.object({}) } }, description: "rate_limit_exceeded" },
    500: { content: { "application/json": { schema: z.object({}) } }, description: "The function failed" },
    504: { content: { "application/json": { schema: z.object({}) } }, description: "TIMEOUT" },
  },
});

/** The route's path as a pattern: `{name}` is one segment. */
const SHORT_FORM = new RegExp(`^${invokeRoute.path.replace(/\{[^}]+\}/g, "[^/]+")}$`);
/** Short form, or long form (`/v1/functions/{project_id}/{name}/invoke`) when a project is named. */
const ANY_FORM = new RegExp(`^${invokeRoute.path.replace(/\{[^}]+\}/g, "[^/]+(/[^/]+)?")}$`);
const METHOD = invokeRoute.method.toUpperCase();

/** True for a call of a function at `path` (short form, or a long form's rewritten path). */
export function isInvoke(req: Request, path: string): boolean {
  return req.method === METHOD && SHORT_FORM.test(path);
}

/**
 * Invoke reads its body itself, after resolving its caller, under the invoke limit (503 above it); the edge
 * leaves it unread for any path that may be an invoke, whether or not its long form names a project.
 */
export function invokeBody(maxBytes: number): OwnBody {
  return {
    accepts: (req) => req.method === METHOD && ANY_FORM.test(pathOf(req.url)),
    maxBytes,
    tooLarge: () => errors.unavailable(`Request body is larger than the invoke limit of ${maxBytes} bytes`),
  };
}

/** The invoke input in the body of `req`: 415 when not JSON, 400 when malformed. */
function parseInvokeBody(bytes: Uint8Array, req: Request): InvokeInput {
  if (bytes.byteLength === 0) return {};
  if (!/^application\/([a-z0-9.+-]*\+)?json\b/i.test(req.headers.get("content-type") ?? "")) {
    throw errors.unsupportedMediaType();
  }
  if (jsonTooDeep(bytes)) throw tooDeep(req, "body");
  if (bytes.byteLength === 2 && bytes[0] === 0x7b && bytes[1] === 0x7d) return {}; // `{}`, the usual body
  let parsed: unknown;
  try {
    parsed = JSON.parse(utf8Lenient.decode(bytes));
  } catch {
    throw errors.validation("Malformed JSON in request body");
  }
  if (
    parsed !== null && typeof parsed === "object" && !Array.isArray(parsed) &&
    Object.keys(parsed).length === 0
  ) {
    return {};
  }
  const result = InvokeBody.safeParse(parsed);
  if (!result.success) {
    const issues = result.error.issues.map((i) => `${i.path.map(String).join(".") || "body"}: ${i.message}`);
    throw errors.validation(`Invalid body: ${issues.join("; ")}`);
  }
  return result.data as InvokeInput;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

const TEXTUAL =
  /^(text\/|application\/([a-z0-9.+-]*\+)?(json|xml)|application\/(javascript|x-www-form-urlencoded)|image\/svg)/i;

type BodyKind = "json" | "text" | "bytes";
/** What each content type seen makes of a body; bounded in entries and key length (a function picks them). */
const kinds = new Map<string, BodyKind>();

function kindOf(type: string): BodyKind {
  let kind = kinds.get(type);
  if (kind === undefined) {
    kind = TEXTUAL.test(type) || type === "" ? (/json/i.test(type) ? "json" : "text") : "bytes";
    if (kinds.size < 256 && type.length <= 128) kinds.set(type, kind);
  }
  return kind;
}

/** The last body found to be one JSON value: a function most often answers the same text call after call. */
let lastJson: string | null = null;
/** Longest body remembered as {@linkcode lastJson} (comparing a longer one costs as much as parsing it). */
const MAX_REMEMBERED_JSON = 4096;

/** True when `text` is one JSON value. */
function isJson(text: string): boolean {
  if (text === lastJson) return true;
  try {
    JSON.parse(text);
  } catch {
    return false;
  }
  if (text.length <= MAX_REMEMBERED_JSON) lastJson = text;
  return true;
}

type HeaderList = InvokeResult["headers"];

/** An answer's headers as the envelope gives them (JSON, repeated names joined) and its content type. */
interface EnvelopeHeaders {
  pairs: HeaderList;
  json: string;
  type: string;
}

/** The last headers seen: a function most often answers the same ones call after call. */
let lastHeaders: EnvelopeHeaders | null = null;

function samePairs(a: HeaderList, b: HeaderList): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (a[i]![0] !== b[i]![0] || a[i]![1] !== b[i]![1]) return false;
  }
  return true;
}

function headersOf(pairs: HeaderList): EnvelopeHeaders {
  if (lastHeaders !== null && samePairs(pairs, lastHeaders.pairs)) return lastHeaders;
  // No prototype: a function's header may be named "constructor" or "__proto__".
  const headers: Record<string, string> = Object.create(null);
  for (const [name, value] of pairs) {
    headers[name] = headers[name] ? `${headers[name]}, ${value}` : value;
  }
  const found = { pairs, json: JSON.stringify(headers), type: headers["content-type"] ?? "" };
  // Kept when small (comparing long ones costs as much as building them); a copy, so that nothing changes it.
  if (pairs.length <= 16 && found.json.length <= 2048) {
    lastHeaders = { ...found, pairs: pairs.map(([name, value]) => [name, value]) };
  }
  return found;
}

/**
 * The envelope answer's JSON text (docs/functions.md):
 * `{"data":{status, headers, body, [body_encoding], logs, duration_ms},"meta":null}`. A JSON body goes in as
 * the function wrote it once it parses (the same value, its numbers to the last digit, without a parse and a
 * stringify per call), text as a string, other bytes as base64.
 */
export function envelopeText(result: InvokeResult): string {
  const headers = headersOf(result.headers);
  let body = "null";
  let encoding = "";
  if (result.body.byteLength > 0) {
    const kind = kindOf(headers.type);
    let text: string | null = null;
    if (kind !== "bytes") {
      try {
        text = utf8.decode(result.body);
      } catch {
        text = null;
      }
    }
    if (text === null) {
      body = JSON.stringify(encodeBase64(result.body));
      encoding = ',"body_encoding":"base64"';
    } else body = kind === "json" && isJson(text) ? text : JSON.stringify(text);
  }
  const data = `"status":${result.status},"headers":${headers.json},"body":${body}${encoding},` +
    `"logs":${JSON.stringify(result.logs)},"duration_ms":${result.duration_ms}`;
  return `{"data":{${data}},"meta":null}`;
}

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "upgrade",
  "content-length",
  "te",
  "trailer",
]);

/** Statuses whose response has no body (a Response with one, even empty, throws). */
const NULL_BODY_STATUS = new Set([204, 205, 304]);

const JSON_HEADERS = { "content-type": "application/json" };

/** Cookies of the platform's own (lowercase): a function's answer on the platform's origin may not touch them. */
const PLATFORM_COOKIES = new Set([CONSOLE_COOKIE.toLowerCase()]);

/** The name of the cookie a Set-Cookie value sets, as a browser reads it (trimmed), lowercased. */
function cookieName(value: string): string {
  const eq = value.indexOf("=");
  return eq < 0 ? "" : value.slice(0, eq).trim().toLowerCase();
}

/**
 * True for a header a function may not send on the platform's origin: the platform's own (request id, origin
 * mark), hop-by-hop ones, its CORS policy (`access-control-*`: the edge adds the platform's), a Set-Cookie of
 * a platform cookie, and Clear-Site-Data (which would clear the platform's cookies and storage).
 */
function refusedHeader(name: string, value: string): boolean {
  if (HOP_BY_HOP.has(name) || name === "x-service-invoke-origin" || name === "x-request-id") return true;
  if (name.startsWith("access-control-") || name === "clear-site-data") return true;
  return name === "set-cookie" && PLATFORM_COOKIES.has(cookieName(value));
}

/** The function's own answer (raw mode): its status, headers and bytes, marked as the function's. */
export function rawResponse(result: StreamedResult, requestId: string): Response {
  // Pairs, not a Headers object: Response takes them without the object's per-call setters.
  const headers: [string, string][] = [];
  for (const pair of result.headers) {
    if (!refusedHeader(pair[0], pair[1])) headers.push(pair);
  }
  headers.push(
    ["x-service-invoke-origin", "function"],
    ["x-request-id", requestId],
    ["content-security-policy", TENANT_CONTENT_CSP],
  );
  let body = result.body as Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array<ArrayBuffer>> | null;
  if (NULL_BODY_STATUS.has(result.status)) {
    if (body instanceof ReadableStream) body.cancel().catch(() => {});
    body = null;
  }
  return new Response(body, { status: result.status, headers });
}

/** The name of the function in an invoke path (`…/{name}/invoke`), decoded as the router decodes parameters. */
function nameOf(path: string): string {
  const end = path.length - "/invoke".length;
  const name = path.slice(path.lastIndexOf("/", end - 1) + 1, end);
  if (!name.includes("%")) return name;
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}

/**
 * Serves an invoke (see {@linkcode invokeRoute}) at `path`, the short form: the project and the caller are
 * resolved as for every Hono route; the body is read under the limits the edge chose, and a failure is
 * rendered by the edge.
 */
export async function serveInvoke(req: Request, env: EdgeEnv, path: string): Promise<Response> {
  const input = async () => parseInvokeBody(await readBody(req, env.body), req);
  if ((req.headers.get("x-service-invoke-mode") ?? "").toLowerCase() === "raw") {
    return rawResponse(await callFunction(req, env, nameOf(path), input, true), env.requestId);
  }
  // The envelope wraps the whole body in JSON: the answer is taken whole.
  const result = await callFunction(req, env, nameOf(path), input, false);
  return new Response(envelopeText(result), { headers: JSON_HEADERS });
}

/**
 * One call of the function `name` by the caller of `req`, as every way of invoking makes it: the project and
 * the caller are resolved as for every Hono route, `apikey` is required (a console admin needs none), then
 * `input` reads what the function is to receive, and the invoker runs it under the caller's rate limit and the
 * project's quota. `streamed`: the answer's body streams as the function writes it (raw answers).
 */
export async function callFunction(
  req: Request,
  env: EdgeEnv,
  name: string,
  input: () => Promise<InvokeInput>,
  streamed: false,
): Promise<InvokeResult>;
export async function callFunction(
  req: Request,
  env: EdgeEnv,
  name: string,
  input: () => Promise<InvokeInput>,
  streamed: true,
): Promise<StreamedResult>;
export async function callFunction(
  req: Request,
  env: EdgeEnv,
  name: string,
  input: () => Promise<InvokeInput>,
  streamed: boolean,
): Promise<InvokeResult | StreamedResult> {
  const { platform, requestId } = env;
  const headers = req.headers;
  const resolved = resolveRequest(env, req);
  const caller = resolved instanceof Promise ? await resolved : resolved;
  // Invoke requires `apikey` (docs/api.md); a user token rides along with it (a console admin needs none).
  if (caller.role !== "admin" && !headers.has("apikey")) {
    throw errors.unauthorized(
      'No API key found in request: invoke needs the project key in the "apikey" header',
    );
  }
  const ctx = {
    ref: caller.project.ref,
    requestId,
    clientId: caller.user ? `user:${caller.user.sub}` : `${caller.role}:${clientAddressOf(env, headers)}`,
    user: caller.user ? { ...caller.user } : undefined,
  };
  const invoker = platform.functions.invoker;
  return streamed
    ? await invoker.invokeStreamed(name, await input(), ctx)
    : await invoker.invoke(name, await input(), ctx);
}
