import { restErrors } from "../../lib/rest_errors.ts";
import type { MediaHandler } from "../../db/rest/schema.ts";

/** What an answer is written as, chosen from `Accept` as PostgREST chooses. */
export interface Media {
  kind: "json" | "object" | "csv" | "openapi" | "plan" | "custom";
  /** A media type handler's answer: its aggregate or domain (PostgREST's Media Type Handlers). */
  handler?: MediaHandler;
  /** `application/vnd.pgrst.plan`: the EXPLAIN format and options asked for. */
  plan?: { format: "json" | "text"; options: string[] };
  /** `nulls=stripped`: null fields are left out of the objects. */
  stripNulls: boolean;
  /** The `Content-Type` of the answer. */
  contentType: string;
}

interface Decoded {
  /** The media type as PostgREST names it back (`application/json`, `*∕*`, or the text as sent). */
  mime: string;
  media: Media | null;
  /** Produced only by the OpenAPI root. */
  openapi?: boolean;
  any?: boolean;
  /** PostgREST's vendor media types (one object, a stripped array, a plan): never a handler's. */
  vendor?: boolean;
  /** A plan `for` a media type no built-in handler answers: the plan, when a handler answers `mime`. */
  planOf?: { mime: string; media: Media };
}

const JSON_MEDIA: Media = { kind: "json", stripNulls: false, contentType: "application/json; charset=utf-8" };
const MEDIA_TYPE =
  /^([A-Za-z0-9.*]+)\/([A-Za-z0-9.*+-]+)((?:\s*;\s*[A-Za-z0-9-]+\s*=\s*(?:"[^"]*"|[A-Za-z0-9|-]+))*)\s*;?/;
const PARAM = /;\s*([A-Za-z0-9-]+)\s*=\s*(?:"([^"]*)"|([A-Za-z0-9|-]+))/g;

/**
 * The media types of an `Accept` header, best first (wai's `parseHttpAccept`, which PostgREST uses): spaces
 * dropped, split on commas, ordered by `q` (default 1), then by more parameters, then by fewer `*`.
 */
export function parseAccept(header: string): string[] {
  const items = header.replaceAll(" ", "").split(",").filter((s) => s !== "").map((item, i) => {
    const at = item.indexOf(";q=");
    const type = at < 0 ? item : item.slice(0, at);
    const qText = at < 0 ? "" : /^\d+(?:\.\d+)?(?:e-?\d+)?/i.exec(item.slice(at + 3).split(";")[0]!)?.[0];
    const q = qText ? Number(qText) : 1;
    return { type, q, semis: type.split(";").length - 1, stars: type.split("*").length - 1, i };
  });
  items.sort((a, b) => b.q - a.q || b.semis - a.semis || a.stars - b.stars || a.i - b.i);
  return items.map((x) => x.type);
}

const PLAN_OPTIONS = ["analyze", "verbose", "settings", "buffers", "wal"];

/**
 * One media type of `Accept`, decoded as PostgREST's `decodeMediaType`. The plan media type is answerable only
 * when `plan` is on (PostgREST's db-plan-enabled) and its `for` type is one the engine produces.
 */
function decode(text: string, plan = false): Decoded {
  const m = MEDIA_TYPE.exec(text);
  if (!m) return { mime: text, media: null };
  const type = `${m[1]!.toLowerCase()}/${m[2]!.toLowerCase()}`;
  const params = new Map<string, string>();
  for (const p of m[3]!.matchAll(PARAM)) params.set(p[1]!.toLowerCase(), p[2] ?? p[3]!);
  const stripped = params.get("nulls") === "stripped";
  switch (type) {
    case "application/json":
      return { mime: "application/json", media: JSON_MEDIA };
    case "*/*":
      return { mime: "*/*", media: JSON_MEDIA, any: true };
    case "text/csv":
      return {
        mime: "text/csv",
        media: { kind: "csv", stripNulls: false, contentType: "text/csv; charset=utf-8" },
      };
    case "application/openapi+json":
      return { mime: "application/openapi+json", media: null, openapi: true };
    case "application/vnd.pgrst.object+json":
    case "application/vnd.pgrst.object": {
      const mime = `application/vnd.pgrst.object+json${stripped ? ";nulls=stripped" : ""}`;
      return {
        mime,
        vendor: true,
        media: { kind: "object", stripNulls: stripped, contentType: `${mime}; charset=utf-8` },
      };
    }
    case "application/vnd.pgrst.array+json":
    case "application/vnd.pgrst.array": {
      if (!stripped) return { mime: "application/json", media: JSON_MEDIA };
      const mime = "application/vnd.pgrst.array+json;nulls=stripped";
      return {
        mime,
        vendor: true,
        media: { kind: "json", stripNulls: true, contentType: `${mime}; charset=utf-8` },
      };
    }
    case "application/vnd.pgrst.plan":
    case "application/vnd.pgrst.plan+text":
    case "application/vnd.pgrst.plan+json": {
      const format = type.endsWith("+json") ? "json" : "text";
      const forDecoded = decode(params.get("for") ?? "application/json");
      const asked = (params.get("options") ?? "").split("|");
      const order = PLAN_OPTIONS.filter((o) => asked.includes(o));
      const mime = `application/vnd.pgrst.plan+${format}; for="${forDecoded.mime}"${
        order.length ? `; options=${order.join("|")}` : ""
      }`;
      const planMedia: Media = {
        kind: "plan",
        plan: { format, options: order },
        stripNulls: false,
        contentType: `${mime}; charset=utf-8`,
      };
      // Off (PostgREST's db-plan-enabled, false by default), nothing answers it: 406 PGRST107.
      if (!plan) return { mime, vendor: true, media: null };
      // The plan of a media type only a handler answers: the plan of the handler's statement, if there is one.
      if (forDecoded.media === null) {
        const planOf = forDecoded.vendor ? undefined : { mime: forDecoded.mime, media: planMedia };
        return { mime, vendor: true, media: null, planOf };
      }
      return { mime, vendor: true, media: planMedia };
    }
    case "application/geo+json":
      return { mime: "application/geo+json", media: null };
    case "text/plain":
    case "text/xml":
    case "application/x-www-form-urlencoded":
    case "application/octet-stream":
      return { mime: type, media: null };
    default:
      return { mime: text, media: null };
  }
}

/** The media types PostgREST names with `; charset=utf-8` in `Content-Type` (all it knows but octet-stream). */
const CHARSET_TYPES = new Set([
  "application/json",
  "application/geo+json",
  "text/csv",
  "text/plain",
  "text/xml",
  "application/openapi+json",
  "application/x-www-form-urlencoded",
]);

/** The media type a handler's domain answers, as PostgREST decodes its name; null for a vendor type. */
export function handlerMediaType(domain: string): string | null {
  const d = decode(domain);
  return d.vendor ? null : d.mime;
}

/** The answer of a media type handler: its `Content-Type` as PostgREST writes it (`toContentType`). */
export function handlerMedia(handler: MediaHandler): Media {
  const mime = decode(handler.resolved).mime;
  const contentType = CHARSET_TYPES.has(mime) ? `${mime}; charset=utf-8` : mime;
  return { kind: "custom", handler, stripNulls: false, contentType };
}

/**
 * The media type handlers a resource may answer with (PostgREST's `lookupHandler`): for a media type, the
 * resource's `*∕*` handler, then its handler of that type (both only with the default `select`), then an
 * `anyelement` handler of that type; undefined: the built-in ones (JSON, CSV).
 */
export type HandlerLookup = (mediaType: string) => Media | undefined;

/**
 * The handler lookup of `identifier` among `handlers`: a table or view (`relation`: its aggregates), or the
 * overload called of a function not returning a table's rows (`returns`: the oid of its return type, its domain).
 */
export function handlerLookup(
  handlers: readonly MediaHandler[] | undefined,
  identifier: { relation: string } | { returns: number | undefined },
  defaultSelect: boolean,
): HandlerLookup | undefined {
  if (!handlers?.length) return undefined;
  const key = (h: MediaHandler) => handlerMediaType(h.mediaType);
  const mine = "relation" in identifier
    ? (h: MediaHandler) => h.kind === "aggregate" && h.target === identifier.relation
    : (h: MediaHandler) => h.kind === "cast" && h.domain !== undefined && h.domain === identifier.returns;
  return (mediaType) => {
    const own = defaultSelect
      ? handlers.find((h) => mine(h) && key(h) === "*/*") ??
        handlers.find((h) => mine(h) && key(h) === mediaType)
      : undefined;
    const found = own ??
      handlers.find((h) => h.kind === "aggregate" && h.target === null && key(h) === mediaType);
    return found && handlerMedia(found);
  };
}

/**
 * The media type of a table, view or function answer, as PostgREST's `negotiateContent`: the first media type of
 * `Accept` (none: `*∕*`) that a vendor type, a media type handler (`handlers`) or a built-in one answers, or
 * 406 PGRST107 naming what was asked for.
 */
export function negotiate(
  accept: string | null | undefined,
  options: { plan?: boolean; handlers?: HandlerLookup } = {},
): Media {
  if ((accept === null || accept === undefined) && !options.handlers) return JSON_MEDIA;
  const decoded = parseAccept(accept ?? "*/*").map((text) => decode(text, options.plan));
  for (const d of decoded) {
    if (d.vendor) {
      if (d.media) return d.media;
      const custom = d.planOf && options.handlers?.(d.planOf.mime);
      if (custom) return { ...d.planOf!.media, handler: custom.handler };
      continue;
    }
    const custom = options.handlers?.(d.mime);
    if (custom) return custom;
    if (d.media) return d.media;
  }
  throw restErrors.mediaType(decoded.map((d) => d.mime));
}

/** The media type of the OpenAPI root: `application/openapi+json` for JSON, OpenAPI or anything. */
export function negotiateOpenApi(accept: string | null | undefined): Media {
  const media: Media = {
    kind: "openapi",
    stripNulls: false,
    contentType: "application/openapi+json; charset=utf-8",
  };
  if (accept === null || accept === undefined) return media;
  const decoded = parseAccept(accept).map((text) => decode(text));
  if (decoded.some((d) => d.openapi || d.any || d.mime === "application/json")) return media;
  throw restErrors.mediaType(decoded.map((d) => d.mime));
}
