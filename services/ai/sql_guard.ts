import { parse, type Statement } from "pgsql-ast-parser";
import { errors } from "../../lib/errors.ts";
import { printChecked } from "./sql_print.ts";

/** Functions a generated query may call: pure, read-only, none that sleeps, reads files or sets settings. */
export const ALLOWED_FUNCTIONS: ReadonlySet<string> = new Set(
  (
    // aggregates and window functions
    "count sum avg min max bool_and bool_or every string_agg array_agg json_agg jsonb_agg json_object_agg " +
    "jsonb_object_agg stddev stddev_pop stddev_samp variance var_pop var_samp percentile_cont percentile_disc mode " +
    "row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value " +
    // conditionals, strings, numbers
    "coalesce nullif greatest least lower upper length char_length octet_length trim ltrim rtrim btrim substr " +
    "substring replace concat concat_ws left right position strpos split_part initcap repeat reverse lpad rpad " +
    "starts_with format abs round ceil ceiling floor trunc mod power sqrt sign exp ln log div width_bucket " +
    // dates
    "now date_trunc date_part extract age to_char to_date to_timestamp to_number make_date make_time " +
    "make_timestamp make_interval justify_days justify_hours " +
    // arrays and json
    "any all some cardinality array_length array_position array_to_string unnest jsonb_array_length " +
    "json_array_length jsonb_typeof json_typeof jsonb_extract_path_text json_extract_path_text to_json to_jsonb " +
    "json_build_object jsonb_build_object json_build_array jsonb_build_array exists"
  ).split(" "),
);

const STATEMENT_TYPES = new Set(["select", "union", "union all", "values", "with", "with recursive"]);
const UNBOUNDED = new Set(["with recursive"]);
const EXPRESSION_TYPES = new Set([
  "ref",
  "call",
  "cast",
  "string",
  "integer",
  "numeric",
  "boolean",
  "null",
  "list",
  "array",
  "array select",
  "binary",
  "unary",
  "case",
  "ternary",
  "extract",
  "keyword",
  "member",
  "arrayIndex",
  "substring",
  "overlay",
  "constant",
  "table",
  "statement",
]);

/** A table by schema and name. */
export interface TableName {
  schema: string;
  name: string;
}

/** A generated query that passed the guard. */
export interface CheckedSelect {
  /**
   * The SQL that runs: the validated syntax tree printed back, and proven to parse again to exactly that tree
   * ({@linkcode printChecked}), so what runs is what was checked.
   */
  sql: string;
  /** Tables it reads. */
  tables: TableName[];
}

function refuse(reason: string): never {
  throw errors.validation(`Generated SQL refused: ${reason}`);
}

/**
 * Checks that `text` is exactly one read-only SELECT over the `readable` tables, with a real SQL parser
 * (pgsql-ast-parser), not a pattern: one statement; only SELECT, UNION, VALUES and WITH whose parts are all
 * SELECTs (so no data-modifying CTE) and no WITH RECURSIVE (unbounded); no FOR UPDATE/SHARE, no SELECT INTO (the parser refuses it); only
 * functions of {@linkcode ALLOWED_FUNCTIONS}; no parameters; every table in `readable` (unqualified names are
 * `public` or a CTE). Refusals are 400 VALIDATION_ERROR naming the reason.
 */
export function checkSelect(text: string, readable: TableName[]): CheckedSelect {
  let statements: Statement[];
  try {
    statements = parse(text);
  } catch {
    refuse("it does not parse as PostgreSQL (only one plain SELECT is accepted)");
  }
  if (statements.length !== 1) refuse(`it has ${statements.length} statements, only one SELECT is accepted`);
  const root = statements[0]!;
  if (root.type === "with recursive") refuse("WITH RECURSIVE can run without bound");
  if (!STATEMENT_TYPES.has(root.type)) refuse(`it is a ${root.type.toUpperCase()} statement, not a SELECT`);

  const allowed = new Set(readable.map((t) => `${t.schema}.${t.name}`));
  const tables: TableName[] = [];

  // `ctes` are the WITH names in scope: those of the enclosing WITH statements only.
  const walk = (node: unknown, key: string, ctes: ReadonlySet<string>): void => {
    if (Array.isArray(node)) {
      for (const item of node) walk(item, key, ctes);
      return;
    }
    if (!node || typeof node !== "object") return;
    const n = node as Record<string, unknown>;
    if (key === "for") refuse("FOR UPDATE/SHARE locks rows");
    if (key === "skip") refuse("row locking clauses are not accepted");
    const type = n.type;
    if (typeof type === "string" && key !== "join" && key !== "name" && key !== "dataType" && key !== "to") {
      if (type === "parameter") refuse("it has a parameter placeholder");
      if (UNBOUNDED.has(type)) refuse("WITH RECURSIVE can run without bound");
      if (STATEMENT_TYPES.has(type)) {
        if (type === "with" || type === "with recursive") {
          const names = new Set(ctes);
          // WITH binds a list of named statements; WITH RECURSIVE names itself (alias) and binds one.
          const binds = Array.isArray(n.bind) ? n.bind as { alias?: { name?: string } }[] : [n];
          for (const b of binds) {
            const alias = (b as { alias?: { name?: string } }).alias;
            // The parser folds unquoted names to lower case and keeps quoted ones: compare them exactly, as
            // PostgreSQL resolves them (`with "Secrets" …` does not hide the table `secrets`).
            if (alias?.name) names.add(alias.name);
          }
          ctes = names;
        }
      } else if (!EXPRESSION_TYPES.has(type)) {
        refuse(`it contains a ${type.toUpperCase()} (only a read-only SELECT is accepted)`);
      }
      if (type === "call") {
        const fn = n.function as { name?: string; schema?: string } | undefined;
        const name = fn?.name?.toLowerCase() ?? "";
        const schema = fn?.schema?.toLowerCase();
        if ((schema !== undefined && schema !== "pg_catalog") || !ALLOWED_FUNCTIONS.has(name)) {
          refuse(`function "${schema ? `${schema}.` : ""}${name}" is not allowed`);
        }
      }
      if (type === "table") {
        const ref = n.name as { name: string; schema?: string };
        const name = ref.name;
        if (!ref.schema && ctes.has(name)) {
          // a CTE of this query
        } else {
          const schema = ref.schema ?? "public";
          if (!allowed.has(`${schema}.${name}`)) {
            refuse(`table "${schema}.${name}" is not readable by the caller`);
          }
          tables.push({ schema, name });
        }
      }
    }
    for (const [k, v] of Object.entries(n)) if (k !== "_location") walk(v, k, ctes);
  };
  walk(root, "root", new Set());
  const sql = printChecked(root);
  if (sql === null) refuse("it does not print back to the same query");
  return { sql, tables };
}
