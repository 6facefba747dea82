/** The operators of a realtime filter: the data API's comparison operators. */
export type FilterOp = "eq" | "neq" | "lt" | "lte" | "gt" | "gte" | "in";

/** A parsed filter `column=op.value`. */
export interface Filter {
  column: string;
  op: FilterOp;
  /** One value, or several for `in`. */
  values: string[];
}

const OPS = new Set<FilterOp>(["eq", "neq", "lt", "lte", "gt", "gte", "in"]);
const COLUMN = /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/;
/** Longest filter text accepted. */
export const MAX_FILTER_LENGTH = 1024;

/** Why a filter text was refused. */
export class FilterError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "FilterError";
  }
}

/** Splits the list of `in.(a,b,"c,d")`: double quotes protect commas, `\` escapes inside quotes. */
function splitList(text: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i <= text.length) {
    let value = "";
    if (text[i] === '"') {
      i++;
      while (i < text.length && text[i] !== '"') {
        if (text[i] === "\\" && i + 1 < text.length) i++;
        value += text[i++];
      }
      if (text[i] !== '"') throw new FilterError("Unterminated quote in the in list");
      i++;
      if (i < text.length && text[i] !== ",") throw new FilterError("Expected a comma after a quoted value");
    } else {
      const end = text.indexOf(",", i);
      value = text.slice(i, end === -1 ? text.length : end);
      i = end === -1 ? text.length : end;
    }
    out.push(value);
    i++; // past the comma (or past the end)
  }
  return out;
}

/** Parses `column=op.value` (`in.(a,b)` for lists); throws {@linkcode FilterError} on anything else. */
export function parseFilter(text: string): Filter {
  if (text.length > MAX_FILTER_LENGTH) {
    throw new FilterError(`Filter is longer than ${MAX_FILTER_LENGTH} characters`);
  }
  const eq = text.indexOf("=");
  if (eq <= 0) throw new FilterError('Filter must look like "column=op.value"');
  const column = text.slice(0, eq);
  if (!COLUMN.test(column)) throw new FilterError(`Filter column "${column}" is not a valid column name`);
  const rest = text.slice(eq + 1);
  const dot = rest.indexOf(".");
  const op = (dot === -1 ? rest : rest.slice(0, dot)) as FilterOp;
  if (!OPS.has(op)) {
    throw new FilterError(`Filter operator "${op}" is not one of eq, neq, lt, lte, gt, gte, in`);
  }
  if (dot === -1) throw new FilterError(`Filter operator "${op}" needs a value: "${column}=${op}.value"`);
  const value = rest.slice(dot + 1);
  if (op !== "in") return { column, op, values: [value] };
  if (!value.startsWith("(") || !value.endsWith(")") || value.length < 3) {
    throw new FilterError(`Filter "in" needs a list: "${column}=in.(a,b)"`);
  }
  const values = splitList(value.slice(1, -1));
  if (values.length > 100) throw new FilterError("Filter list has more than 100 values");
  return { column, op, values };
}

/** Compares a column value with a filter value: numerically when both are numbers, as text otherwise. */
function compare(actual: unknown, expected: string): number {
  if (typeof actual === "number" || typeof actual === "bigint") {
    const n = Number(expected);
    if (expected.trim() !== "" && !Number.isNaN(n)) return Number(actual) - n;
  }
  if (typeof actual === "string" && /^-?\d+(\.\d+)?$/.test(actual) && /^-?\d+(\.\d+)?$/.test(expected)) {
    return Number(actual) - Number(expected); // int8 and numeric arrive as JSON strings
  }
  const text = typeof actual === "string" ? actual : JSON.stringify(actual);
  return text < expected ? -1 : text > expected ? 1 : 0;
}

/**
 * True when `row` passes the filter. As in SQL, a null or missing column matches no operator, and a row without
 * the column (a DELETE's primary key only) does not match.
 */
export function matchesFilter(filter: Filter, row: Record<string, unknown> | null): boolean {
  if (!row) return false;
  const actual = row[filter.column];
  if (actual === null || actual === undefined) return false;
  const [first = ""] = filter.values;
  switch (filter.op) {
    case "eq":
      return compare(actual, first) === 0;
    case "neq":
      return compare(actual, first) !== 0;
    case "lt":
      return compare(actual, first) < 0;
    case "lte":
      return compare(actual, first) <= 0;
    case "gt":
      return compare(actual, first) > 0;
    case "gte":
      return compare(actual, first) >= 0;
    case "in":
      return filter.values.some((v) => compare(actual, v) === 0);
  }
}
