import { FTS_OPERATORS, OPERATORS } from "./ast.ts";
import type { CallArguments } from "./compile.ts";
import { FuzzySet } from "../../lib/fuzzy.ts";
import { RestError } from "../../lib/rest_errors.ts";
import type { FunctionInfo, FunctionParam, SchemaCache } from "./schema.ts";

const RESERVED = new Set(["select", "columns", "on_conflict"]);
const RESERVED_LAST = new Set(["order", "limit", "offset", "and", "or"]);
const FILTER_OPERATORS = new Set<string>(OPERATORS);

/** True when a query value is a filter (`eq.1`, `not.in.(…)`, `fts(english).cat`), not a plain argument. */
function isFilterValue(value: string): boolean {
  const parts = value.split(".");
  const first = parts[0]!;
  if (first === "not" && parts.length > 1) return true;
  const head = first.replace(/\((any|all)\)$/, "");
  if (FILTER_OPERATORS.has(head)) return true;
  const paren = value.indexOf("(");
  return paren > 0 && FTS_OPERATORS.has(value.slice(0, paren));
}

/**
 * Splits the query of `GET /rpc/{fn}` as PostgREST does: a key without a dot, not reserved, whose value is not a
 * filter, is an argument of the function; everything else (select, order, limit, filters) shapes the result.
 */
export function splitRpcQuery(
  search: URLSearchParams,
): { args: Map<string, string[]>; rest: URLSearchParams } {
  const args = new Map<string, string[]>();
  const rest = new URLSearchParams();
  for (const [key, value] of search) {
    const last = key.split(".").at(-1)!;
    const argument = !RESERVED.has(key) && !RESERVED_LAST.has(last) && !key.includes(".") &&
      !key.includes("->") &&
      !isFilterValue(value);
    if (argument) args.set(key, [...args.get(key) ?? [], value]);
    else rest.append(key, value);
  }
  return { args, rest };
}

/** What a call brings to choose a function: argument names, or the whole body for a single parameter. */
export interface CallShape {
  /** Argument names (the body's keys, or the query's arguments). */
  keys: string[];
  /** `Prefer: params=single-object`: the body is the function's one json/jsonb parameter. */
  singleObject: boolean;
  /** A POST (its body may go whole to one unnamed json/jsonb parameter). */
  post: boolean;
  /**
   * The body's media type (POST): `text/plain`, `text/xml` and `application/octet-stream` bodies go whole to one
   * unnamed text, xml or bytea parameter. Absent: JSON.
   */
  mime?: string;
}

/** The media types whose body is the raw value of a function's one unnamed parameter, and that type. */
export const RAW_BODY_TYPES: Record<string, string> = {
  "text/plain": "text",
  "text/xml": "xml",
  "application/octet-stream": "bytea",
};

const isJson = (p: FunctionParam) => p.udt === "json" || p.udt === "jsonb";

/** A raw body (text, xml, bytea) of the call, or null for JSON, CSV and form bodies. */
function rawType(shape: CallShape): string | null {
  return shape.post ? RAW_BODY_TYPES[shape.mime ?? ""] ?? null : null;
}

/**
 * Whether the call's argument names fit the parameters: every required one given, none unknown (an unnamed
 * parameter's name is "", as PostgREST names it: `{"": value}` gives it).
 */
function matches(fn: FunctionInfo, shape: CallShape): boolean {
  const params = fn.params;
  if (shape.singleObject) return params.length === 1 && isJson(params[0]!);
  // A raw body is no argument list: it calls a function of one unnamed parameter of its type only.
  if (params.length === 0) return shape.keys.length === 0 && rawType(shape) === null;
  const required = params.filter((p) => p.required);
  const names = new Set(params.map((p) => p.name));
  return shape.keys.every((k) => names.has(k)) && required.every((p) => shape.keys.includes(p.name));
}

const compareText = (a: string, b: string) => a < b ? -1 : a > b ? 1 : 0;

/**
 * PostgREST's order of overloads (its Routine's Ord): fewer parameters first, then the parameters compared in
 * turn by name, type, required (optional first) and variadic. PGRST203 lists the candidates in it.
 */
function overloadOrder(a: FunctionInfo, b: FunctionInfo): number {
  if (a.params.length !== b.params.length) return a.params.length - b.params.length;
  for (let i = 0; i < a.params.length; i++) {
    const p = a.params[i]!, q = b.params[i]!;
    const c = compareText(p.name, q.name) || compareText(p.type, q.type) ||
      Number(p.required) - Number(q.required) || Number(p.variadic) - Number(q.variadic);
    if (c !== 0) return c;
  }
  return 0;
}

/** Whether `fn` is called with its one unnamed parameter by position: the call's arguments whole as its value. */
export function positional(fn: FunctionInfo): boolean {
  return fn.params.length === 1 && fn.params[0]!.name === "";
}

/** PostgREST's fallback: a POST whose body goes whole to the function's one unnamed parameter of its type. */
function takesSingleUnnamed(fn: FunctionInfo, shape: CallShape): boolean {
  const only = fn.params.length === 1 ? fn.params[0]! : undefined;
  if (!shape.post || !only || only.name !== "" || shape.singleObject) return false;
  const raw = rawType(shape);
  if (raw !== null) return only.udt === raw;
  return (shape.mime ?? "application/json") === "application/json" && isJson(only);
}

/** The signature PostgREST prints: `public.fn(a, b)`, `public.fn(a => integer)`. */
function signature(schema: string, fn: FunctionInfo, typed = false): string {
  const params = fn.params.map((p) => typed ? `${p.name} => ${p.type}` : p.name).join(", ");
  return `${schema}.${fn.name}(${params})`;
}

/** Whether a call passes its body whole, as the one json/jsonb parameter of `fn`. */
export function takesWholeBody(fn: FunctionInfo, shape: CallShape): boolean {
  const only = fn.params.length === 1 ? fn.params[0]! : undefined;
  return (!!only && isJson(only) && shape.singleObject) || takesSingleUnnamed(fn, shape);
}

/**
 * The function that `name` and the call's arguments designate, as PostgREST chooses among overloads: every
 * required parameter given and no unknown argument. None is 404 PGRST202, several 300 PGRST203.
 */
export function chooseFunction(cache: SchemaCache, name: string, shape: CallShape): FunctionInfo {
  const overloads = [...cache.functions.get(name) ?? []].sort(overloadOrder);
  // Functions whose parameters the arguments name come first; one unnamed parameter taking the body is the fallback.
  const named = overloads.filter((fn) => matches(fn, shape));
  const found = named.length > 0 ? named : overloads.filter((fn) => takesSingleUnnamed(fn, shape));
  if (found.length === 1) return found[0]!;
  const qualified = `${cache.schema}.${name}`;
  if (found.length > 1) {
    throw new RestError(
      300,
      "PGRST203",
      `Could not choose the best candidate function between: ${
        found.map((f) => signature(cache.schema, f, true)).join(", ")
      }`,
      {
        hint:
          "Try renaming the parameters or the function itself in the database so function overloading can be resolved",
      },
    );
  }
  const keys = [...new Set(shape.keys)].sort();
  if (shape.singleObject) {
    return throwNotFound(
      qualified,
      "",
      `Searched for the function ${qualified} with a single json/jsonb parameter, but no matches were found in the schema cache.`,
      null,
    );
  }
  const raw = rawType(shape);
  if (raw !== null) {
    // A raw body names no arguments: PostgREST names the one parameter it looked for, and hints nothing.
    return throwNotFound(
      qualified,
      "",
      `Searched for the function ${qualified} with a single unnamed ${raw} parameter, but no matches were found in the schema cache.`,
      null,
    );
  }
  // PostgREST's wording: "without parameters", "(a, b)" / "with parameter a", "with parameters a, b".
  const asked = keys.length === 0 ? " without parameters" : `(${keys.join(", ")})`;
  const searched =
    (keys.length === 0
      ? " without parameters"
      : ` with parameter${keys.length > 1 ? "s" : ""} ${keys.join(", ")}`) +
    (shape.post && (shape.mime ?? "application/json") === "application/json"
      ? " or with a single unnamed json/jsonb parameter"
      : "");
  return throwNotFound(
    qualified,
    asked,
    `Searched for the function ${qualified}${searched}, but no matches were found in the schema cache.`,
    functionSuggestion(cache, name, keys, overloads),
  );
}

/** PostgREST's "Perhaps you meant to call …": a close function name, or the closest parameter list. */
function functionSuggestion(
  cache: SchemaCache,
  name: string,
  keys: string[],
  overloads: FunctionInfo[],
): string | null {
  const prefix = `Perhaps you meant to call the function ${cache.schema}.`;
  if (overloads.length === 0) {
    const close = new FuzzySet(cache.functions.keys()).getOne(name, 0.75);
    return close === undefined ? null : prefix + close;
  }
  const listed = (names: string[]) => `(${[...names].sort().join(", ")})`;
  const close = new FuzzySet(overloads.map((f) => listed(f.params.map((p) => p.name)))).getOne(listed(keys));
  return close === undefined ? null : prefix + name + close;
}

function throwNotFound(qualified: string, asked: string, details: string, hint: string | null): never {
  throw new RestError(
    404,
    "PGRST202",
    `Could not find the function ${qualified}${asked} in the schema cache`,
    {
      details,
      hint,
    },
  );
}

/**
 * The arguments of a POST call: the body's keys by name, or the body whole. `columns` (`columns=`) restricts
 * them to those names, a missing one null, as PostgREST's json_to_record of the listed parameters reads it.
 */
export function bodyArguments(
  fn: FunctionInfo,
  shape: CallShape,
  body: unknown,
  columns?: string[],
): CallArguments {
  if (rawType(shape) !== null) return { kind: "raw", value: body as string };
  if (takesWholeBody(fn, shape) || positional(fn)) return { kind: "single", value: body ?? {} };
  // An array of objects (JSON or CSV rows) gives the first object's arguments, as PostgREST v14 reads it (its
  // body source takes one row); an empty one, or no body, calls the function without arguments.
  const first = ((Array.isArray(body) ? body[0] : body) ?? {}) as Record<string, unknown>;
  if (columns === undefined) return { kind: "named", values: first };
  return {
    kind: "named",
    values: Object.fromEntries(columns.map((c) => [c, Object.hasOwn(first, c) ? first[c] : null])),
  };
}

/**
 * The arguments of a GET call (or a form's POST), as PostgREST v14 reads them: a variadic parameter takes every
 * value given, in order (`?v=1&v=2`, each one element); any other the last value of its name (an array parameter
 * takes an array literal, `{1,2}`, as postgrest-js sends arrays).
 */
export function queryArguments(fn: FunctionInfo, args: Map<string, string[]>): CallArguments {
  const params = new Map(fn.params.map((p) => [p.name, p]));
  const values: Record<string, unknown> = {};
  for (const [key, list] of args) values[key] = params.get(key)!.variadic ? list : list.at(-1);
  return positional(fn) ? { kind: "single", value: values } : { kind: "named", values };
}

/** Whether a function takes a body that is not an object (an array, a value) whole. */
export function takesOnlyWholeBody(cache: SchemaCache, name: string, shape: CallShape): boolean {
  return (cache.functions.get(name) ?? []).some((fn) => takesWholeBody(fn, shape));
}
