import { parse, type Statement, toSql } from "pgsql-ast-parser";

/** A lexical token of printed SQL. Only `code` tokens are ever rewritten; the others pass through verbatim. */
export interface SqlToken {
  kind: "code" | "string" | "quoted" | "comment" | "space";
  text: string;
}

const WORD = /[A-Za-z0-9_$]/;
const DOLLAR_TAG = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/;

/**
 * Splits SQL into tokens the way PostgreSQL's lexer delimits them: string literals (`'…'` with `''`, `E'…'`
 * with backslash escapes, `$tag$…$tag$`), quoted identifiers (`"…"` with `""`), comments (`--`, nested
 * `/* *\/`), whitespace, words and single punctuation characters. Throws on an unterminated literal.
 */
export function tokenize(sql: string): SqlToken[] {
  const out: SqlToken[] = [];
  let i = 0;
  const take = (kind: SqlToken["kind"], end: number) => {
    out.push({ kind, text: sql.slice(i, end) });
    i = end;
  };
  const unterminated = (what: string): never => {
    throw new Error(`unterminated ${what}`);
  };
  while (i < sql.length) {
    const ch = sql[i]!;
    const next = sql[i + 1];
    if (/\s/.test(ch)) {
      let j = i + 1;
      while (j < sql.length && /\s/.test(sql[j]!)) j++;
      take("space", j);
    } else if (ch === "-" && next === "-") {
      const nl = sql.indexOf("\n", i);
      take("comment", nl < 0 ? sql.length : nl);
    } else if (ch === "/" && next === "*") {
      // Block comments nest in PostgreSQL.
      let depth = 0;
      let j = i;
      for (; j < sql.length; j++) {
        if (sql[j] === "/" && sql[j + 1] === "*") {
          depth++;
          j++;
        } else if (sql[j] === "*" && sql[j + 1] === "/" && --depth === 0) break;
      }
      if (j >= sql.length) unterminated("comment");
      take("comment", j + 2);
    } else if (ch === "'" || ((ch === "E" || ch === "e") && next === "'" && !WORD.test(sql[i - 1] ?? ""))) {
      const escapes = ch !== "'";
      let j = escapes ? i + 2 : i + 1;
      for (;; j++) {
        if (j >= sql.length) unterminated("string literal");
        if (escapes && sql[j] === "\\") j++;
        else if (sql[j] === "'") {
          if (sql[j + 1] === "'") j++;
          else break;
        }
      }
      take("string", j + 1);
    } else if (ch === '"') {
      let j = i + 1;
      for (;; j++) {
        if (j >= sql.length) unterminated("quoted identifier");
        if (sql[j] === '"') {
          if (sql[j + 1] === '"') j++;
          else break;
        }
      }
      take("quoted", j + 1);
    } else if (ch === "$" && !WORD.test(sql[i - 1] ?? "") && DOLLAR_TAG.test(sql.slice(i))) {
      const tag = sql.slice(i).match(DOLLAR_TAG)![0];
      const end = sql.indexOf(tag, i + tag.length);
      if (end < 0) unterminated("dollar-quoted string");
      take("string", end + tag.length);
    } else if (WORD.test(ch)) {
      let j = i + 1;
      while (j < sql.length && WORD.test(sql[j]!)) j++;
      take("code", j);
    } else {
      take("code", i + 1);
    }
  }
  return out;
}

const QUANTIFIERS = new Set(['"any"', '"all"', '"some"']);

/**
 * The printer renders `x = ANY (arr)` as `(x) = ("any" (arr) )`: a call to a function named "any" in
 * parentheses, which PostgreSQL does not accept. This puts the syntax back (`ANY (arr)` right after the
 * operator), working on tokens: string literals, quoted identifiers and comments are never touched.
 */
export function fixQuantifiers(sql: string): string {
  const tokens = tokenize(sql);
  const drop = new Set<number>();
  const significant = (from: number) => {
    let j = from;
    while (j < tokens.length && (tokens[j]!.kind === "space" || tokens[j]!.kind === "comment")) j++;
    return j;
  };
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.kind !== "quoted" || !QUANTIFIERS.has(t.text.toLowerCase())) continue;
    const open = significant(i + 1);
    if (tokens[open]?.kind !== "code" || tokens[open]!.text !== "(") continue; // an identifier, not a call
    tokens[i] = { kind: "code", text: t.text.slice(1, -1).toUpperCase() };
    // The parenthesis the printer put around the call goes, with its partner.
    let before = i - 1;
    while (before >= 0 && tokens[before]!.kind === "space") before--;
    if (before < 0 || tokens[before]!.kind !== "code" || tokens[before]!.text !== "(") continue;
    const close = matchingParen(tokens, before);
    if (close < 0) continue;
    drop.add(before).add(close);
  }
  return tokens.filter((_, i) => !drop.has(i)).map((t) => t.text).join("");
}

function matchingParen(tokens: SqlToken[], open: number): number {
  let depth = 0;
  for (let i = open; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.kind !== "code") continue;
    if (t.text === "(") depth++;
    else if (t.text === ")" && --depth === 0) return i;
  }
  return -1;
}

/** A syntax tree without source positions, for comparing two parses. */
function shape(node: unknown): unknown {
  return JSON.stringify(node, (key, value) => key === "_location" ? undefined : value);
}

/**
 * Prints a checked statement back to SQL and proves the text is the statement: the printed (and
 * quantifier-fixed) SQL is parsed again and must give exactly the checked syntax tree, so no rewrite can change
 * a literal, add a statement or alter the query. Returns null when it does not (the caller refuses).
 */
export function printChecked(root: Statement): string | null {
  let sql: string;
  let again: Statement[];
  try {
    sql = fixQuantifiers(toSql.statement(root));
    again = parse(sql);
  } catch {
    return null;
  }
  if (again.length !== 1 || shape(again[0]) !== shape(root)) return null;
  return sql;
}
