import { RestError } from "../../lib/rest_errors.ts";
import { errors } from "../../lib/errors.ts";
import type { Platform } from "../../services/platform.ts";
import type { EdgeEnv } from "../env.ts";
import { failureResponse, toAppError } from "../errors.ts";
import { type BodyLimits, readBody } from "./body.ts";
import { jsonTooDeep, MAX_JSON_DEPTH, queryTooDeep } from "./json_depth.ts";

/** Options of {@linkcode edge}. */
export interface EdgeOptions {
  platform: Platform;
  /** Allowed origins, or "*". */
  origins: "*" | string[];
  allowHeaders: string[];
  /**
   * Paths whose preflight allows whatever request headers it asks for (the functions mount: a function reads the
   * headers it likes); the origin is still checked against `origins`.
   */
  anyRequestHeaders?: (req: Request) => boolean;
  exposeHeaders: string[];
  /** The largest request body (413 above it). */
  maxBodyBytes: number;
  /** How long a request body may take to arrive (408 past it). */
  bodyTimeoutMs: number;
  /** Requests whose route reads the body itself, once it has checked the caller, and their own limit. */
  ownBody?: OwnBody;
  /** A failure at the edge in the format of a path's own API (the compatibility mounts'); null: the default. */
  failure?: (err: unknown, req: Request, requestId: string) => Response | null;
}

/** A route that reads its own body (invoke): which requests, and the limit they are read under. */
export interface OwnBody {
  accepts: (req: Request) => boolean;
  /** The largest body. */
  maxBytes: number;
  /** The error above it. */
  tooLarge: () => Error;
}

/**
 * What the edge hands every request to (the Hono app's fetch, or a route served in front of it) with the
 * request's {@linkcode EdgeEnv}. It may throw or reject: the edge renders the failure.
 */
export type EdgeNext = (req: Request, env: EdgeEnv) => Response | Promise<Response>;

// An incoming id is kept when it is short and plain, so that a trace can cross services.
const VALID_ID = /^[\w\-.:]{1,200}$/;

const POSTGREST_PATH = /^[a-z]+:\/\/[^/]*\/rest\/v1(?:[/?]|$)/i;

/** A failure at the edge, in the format of the route asked for: PostgREST's on `/rest/v1`, else the envelope. */
function defaultFailure(err: unknown, req: Request, id: string): Response {
  if (!POSTGREST_PATH.test(req.url)) return failureResponse(err, id, new URL(req.url).pathname);
  const e = toAppError(err);
  const rest = e instanceof RestError ? e : null;
  const body = { code: e.code, message: e.message, details: rest?.details ?? null, hint: rest?.hint ?? null };
  return Response.json(body, { status: e.status, headers: e.headers });
}

/** The error of a body or query nested too deep, in the format of the route asked for. */
export const tooDeep = (req: Request, where: "body" | "query"): Error => {
  const details = `The ${where} nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep`;
  if (!POSTGREST_PATH.test(req.url)) return errors.validation(details);
  return where === "body"
    ? new RestError(400, "PGRST102", "Empty or invalid json", { details })
    : new RestError(400, "PGRST100", "failed to parse query string", { details });
};

/** The CORS headers of a request from a browser: the origin allowed, and the response headers it may read. */
interface Cors {
  origin: string;
  expose: string;
}

/** A request from an origin the policy does not allow. */
const REFUSED: Cors = { origin: "", expose: "" };

/**
 * PostgREST's CORS on its mount, as its wai-cors policy writes it: the methods it lists (wai-cors adds HEAD), the
 * headers it exposes, and a preflight that allows `Authorization`, the headers asked for and the simple ones.
 */
const POSTGREST_CORS = {
  methods: "GET, POST, PATCH, PUT, DELETE, OPTIONS, HEAD",
  expose: "Content-Encoding, Content-Location, Content-Range, Content-Type, Date, Location, Server, " +
    "Transfer-Encoding, Range-Unit",
  simple: ["Accept", "Accept-Language", "Content-Language"],
};

/** PostgREST's `Access-Control-Allow-Headers`: Authorization, what was asked (valid names), the simple headers. */
function postgrestPreflightHeaders(req: Request): string {
  // As wai-cors: what was asked follows `Authorization` as asked (a repeated name too), then the simple headers
  // not among them. Only valid names, and at most MAX_ASKED_HEADERS of them.
  const names = ["Authorization", ...askedHeaders(req).slice(0, MAX_ASKED_HEADERS)];
  const have = new Set(names.map((n) => n.toLowerCase()));
  return [...names, ...POSTGREST_CORS.simple.filter((n) => !have.has(n.toLowerCase()))].join(", ");
}

/** The header names a preflight asks for (`Access-Control-Request-Headers`), as written, the valid ones only. */
function askedHeaders(req: Request): string[] {
  return (req.headers.get("access-control-request-headers") ?? "").split(",").map((n) => n.trim())
    .filter((n) => HEADER_TOKEN.test(n.toLowerCase()));
}

/** The most request header names a preflight on PostgREST's mount is answered with. */
const MAX_ASKED_HEADERS = 100;

/** An HTTP header name (RFC 9110 token). */
const HEADER_TOKEN = /^[!#$%&'*+\-.^_`|~0-9a-z]{1,128}$/;

/** A body the platform parses as JSON: declared so, or undeclared (the data API reads those as JSON). */
const JSON_TYPE = /json/i;

/**
 * edge runs in front of the Hono app, outside its middleware chain, because every async layer of that chain
 * costs throughput on every request: it assigns the request id (kept from `x-request-id` when valid), hands
 * the platform and the id to the app as its env, answers CORS preflights, and adds the CORS and request-id
 * headers to every answer — synchronously when the app answered synchronously.
 */
export function edge(options: EdgeOptions, next: EdgeNext) {
  const allowMethods = "GET,HEAD,POST,PUT,PATCH,DELETE,OPTIONS";
  const allowHeaders = options.allowHeaders.join(",");
  /** The headers a preflight allows: the platform's list, or those it asks for on a path that takes any. */
  const preflightHeaders = (req: Request): string => {
    if (!req.headers.has("access-control-request-headers") || !options.anyRequestHeaders?.(req)) {
      return allowHeaders;
    }
    const names = askedHeaders(req).map((n) => n.toLowerCase());
    return [...new Set([...options.allowHeaders, ...names])].join(",");
  };
  const exposeHeaders = options.exposeHeaders.join(",");
  const allowOrigin = (origin: string | null): string | null => {
    if (options.origins === "*") return "*";
    return origin && options.origins.includes(origin) ? origin : null;
  };
  const finish = (res: Response, id: string, cors: Cors | null): Response => {
    const headers = res.headers;
    try {
      headers.set("x-request-id", id);
      // An origin the policy refuses gets no allowance, whatever the route wrote (PostgREST's OPTIONS `*`).
      if (cors === REFUSED) headers.delete("access-control-allow-origin");
      else if (cors) {
        headers.set("access-control-allow-origin", cors.origin);
        headers.set("access-control-expose-headers", cors.expose);
        if (cors.origin !== "*") headers.append("vary", "Origin");
      }
    } catch {
      // Immutable headers (a fetched response passed through as is): answer it unchanged.
    }
    return res;
  };
  const edgeFailure = (err: unknown, req: Request, id: string): Response =>
    options.failure?.(err, req, id) ?? defaultFailure(err, req, id);
  const timedOut = () => errors.bodyTimeout(options.bodyTimeoutMs);
  const limits: BodyLimits = {
    maxBytes: options.maxBodyBytes,
    timeoutMs: options.bodyTimeoutMs,
    tooLarge: () => errors.tooLarge(options.maxBodyBytes),
    timedOut,
  };
  const own = options.ownBody;
  const ownLimits: BodyLimits | undefined = own &&
    { maxBytes: own.maxBytes, timeoutMs: options.bodyTimeoutMs, tooLarge: own.tooLarge, timedOut };
  /** The answer of `next`, its failure rendered here: synchronous when `next` answered synchronously. */
  const answer = (req: Request, env: EdgeEnv, cors: Cors | null): Response | Promise<Response> => {
    const id = env.requestId;
    let res: Response | Promise<Response>;
    try {
      res = next(req, env);
    } catch (err) {
      return finish(edgeFailure(err, req, id), id, cors);
    }
    if (!(res instanceof Promise)) return finish(res, id, cors);
    return res.then((r) => finish(r, id, cors), (err) => finish(edgeFailure(err, req, id), id, cors));
  };
  /**
   * The request with its body read whole under the limits and its JSON depth checked, so that neither a slow
   * client nor a pathological document reaches a handler or a database.
   */
  const buffered = async (req: Request): Promise<Request> => {
    const bytes = await readBody(req, limits);
    const type = req.headers.get("content-type");
    if ((type === null || JSON_TYPE.test(type)) && jsonTooDeep(bytes)) throw tooDeep(req, "body");
    // Always a body of its own, even empty: `new Request(req)` without one would reuse the one just read (a
    // TypeError). GET and HEAD, which may carry none, never come here.
    return new Request(req, { body: bytes as Uint8Array<ArrayBuffer> });
  };
  const guarded = async (req: Request, env: EdgeEnv, cors: Cors | null): Promise<Response> => {
    let forwarded: Request;
    try {
      forwarded = await buffered(req);
    } catch (err) {
      return finish(edgeFailure(err, req, env.requestId), env.requestId, cors);
    }
    return await answer(forwarded, env, cors);
  };
  return (req: Request, info?: { remoteAddr: Deno.Addr }): Response | Promise<Response> => {
    const incoming = req.headers.get("x-request-id");
    const id = incoming && VALID_ID.test(incoming) ? incoming : crypto.randomUUID();
    // CORS headers go only to requests that carry an Origin (every CORS request does), as PostgREST's do;
    // on PostgREST's mount they are PostgREST's own (wai-cors's).
    const requestOrigin = req.headers.get("origin");
    const origin = requestOrigin === null ? null : allowOrigin(requestOrigin);
    const postgrest = requestOrigin !== null && POSTGREST_PATH.test(req.url);
    if (req.method === "OPTIONS" && req.headers.has("access-control-request-method")) {
      const headers: Record<string, string> = {
        "x-request-id": id,
        "access-control-allow-methods": postgrest ? POSTGREST_CORS.methods : allowMethods,
        "access-control-allow-headers": postgrest ? postgrestPreflightHeaders(req) : preflightHeaders(req),
        "access-control-max-age": "86400",
      };
      if (origin) headers["access-control-allow-origin"] = origin;
      if (origin && origin !== "*") headers["vary"] = "Origin";
      return new Response(null, { status: postgrest ? 200 : 204, headers });
    }
    const cors = origin
      ? { origin, expose: postgrest ? POSTGREST_CORS.expose : exposeHeaders }
      : requestOrigin === null
      ? null
      : REFUSED;
    if (queryTooDeep(req.url)) return finish(edgeFailure(tooDeep(req, "query"), req, id), id, cors);
    // A GET or HEAD body is never read by any route: not buffered (the method is checked first, it is cheaper).
    const method = req.method;
    const reads = method !== "GET" && method !== "HEAD";
    const owned = reads && ownLimits !== undefined && own!.accepts(req);
    const env: EdgeEnv = {
      platform: options.platform,
      requestId: id,
      info,
      project: undefined,
      body: owned ? ownLimits : limits,
    };
    // `req.body` is looked at last: once built, its stream makes the handler's own `bytes()` slower (invoke).
    if (reads && !owned && req.body !== null) return guarded(req, env, cors);
    return answer(req, env, cors);
  };
}
