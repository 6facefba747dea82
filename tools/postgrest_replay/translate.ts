// Translates hspec-wai cases (`request … \`shouldRespondWith\` …`) of PostgREST's spec files into JSON cases.

export type HVal =
  | { t: "str"; v: string }
  | { t: "qq"; name: string; v: string }
  | { t: "num"; v: number }
  | { t: "list"; v: HVal[] }
  | { t: "tuple"; v: HVal[] }
  | { t: "id"; v: string }
  | { t: "app"; f: string; args: HVal[] }
  | { t: "rec"; base: HVal; fields: Record<string, HVal> }
  | { t: "op"; op: string; a: HVal; b: HVal };

export interface HeaderMatch {
  kind: "eq" | "absent" | "contains" | "ct" | "timing";
  name: string;
  value?: string;
}

export interface Case {
  file: string;
  fn: string; // the top-level definition it is in (spec, allowed, disabledSpec…)
  it: string;
  path: string[]; // describe/context path
  line: number;
  method: string;
  url: string;
  headers: [string, string][];
  body: string | null;
  bodyB64?: string;
  jwt?: {
    claims: Record<string, unknown> | null;
    raw: string;
    scheme: string;
    signed: "spec" | "other" | "none";
  };
  expect: {
    status: number;
    json?: unknown;
    text?: string;
    jsonCT: boolean; // the json matcher's implicit Content-Type check
    headers: HeaderMatch[];
  };
}

export interface Skip {
  file: string;
  fn: string;
  it: string;
  line: number;
  why: string;
}

class ParseError extends Error {}

// ---------- tokenizer ----------
type Tok = { k: string; v: string; pos: number };

function hsString(src: string, i: number): [string, number] {
  // src[i] === '"'
  let out = "";
  let j = i + 1;
  while (j < src.length) {
    const c = src[j];
    if (c === '"') return [out, j + 1];
    if (c === "\\") {
      const d = src[j + 1];
      if (/\s/.test(d!)) {
        // string gap
        let k = j + 1;
        while (k < src.length && src[k] !== "\\") k++;
        j = k + 1;
        continue;
      }
      const simple: Record<string, string> = {
        n: "\n",
        t: "\t",
        r: "\r",
        "\\": "\\",
        '"': '"',
        "'": "'",
        "&": "",
      };
      if (d! in simple) {
        out += simple[d!];
        j += 2;
        continue;
      }
      const num = /^\d+/.exec(src.slice(j + 1, j + 10));
      if (num) {
        out += String.fromCodePoint(Number(num[0]));
        j += 1 + num[0].length;
        continue;
      }
      const hx = /^x([0-9a-fA-F]+)/.exec(src.slice(j + 1, j + 12));
      if (hx) {
        out += String.fromCodePoint(parseInt(hx[1]!, 16));
        j += 1 + hx[0].length;
        continue;
      }
      throw new ParseError(`string escape \\${d}`);
    }
    out += c;
    j++;
  }
  throw new ParseError("unterminated string");
}

export function tokenize(src: string): Tok[] {
  const toks: Tok[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (/\s/.test(c!)) {
      i++;
      continue;
    }
    if (c === "-" && src[i + 1] === "-" && !/[!#$%&*+./<=>?@\\^|~:]/.test(src[i + 2] ?? "")) {
      const e = src.indexOf("\n", i);
      i = e < 0 ? src.length : e;
      continue;
    }
    if (c === "{" && src[i + 1] === "-") {
      const e = src.indexOf("-}", i);
      i = e < 0 ? src.length : e + 2;
      continue;
    }
    if (c === '"') {
      const [s, j] = hsString(src, i);
      toks.push({ k: "str", v: s, pos: i });
      i = j;
      continue;
    }
    const qq = /^\[([a-zA-Z]+)\|/.exec(src.slice(i, i + 20));
    if (qq) {
      const e = src.indexOf("|]", i + qq[0].length);
      if (e < 0) throw new ParseError("unterminated quasiquote");
      toks.push({ k: "qq", v: qq[1] + "\u0000" + src.slice(i + qq[0].length, e), pos: i });
      i = e + 2;
      continue;
    }
    if (c === "`") {
      const e = src.indexOf("`", i + 1);
      toks.push({ k: "op", v: src.slice(i + 1, e), pos: i });
      i = e + 1;
      continue;
    }
    if (c === "'" && /^'.'/.test(src.slice(i, i + 3))) {
      toks.push({ k: "str", v: src[i + 1]!, pos: i });
      i += 3;
      continue;
    }
    const num = /^\d+(\.\d+)?/.exec(src.slice(i, i + 30));
    if (num) {
      toks.push({ k: "num", v: num[0], pos: i });
      i += num[0].length;
      continue;
    }
    const id = /^[A-Za-z_][A-Za-z0-9_']*(\.[A-Za-z_][A-Za-z0-9_']*)*/.exec(src.slice(i, i + 200));
    if (id) {
      toks.push({ k: "id", v: id[0], pos: i });
      i += id[0].length;
      continue;
    }
    if ("()[]{},".includes(c!)) {
      toks.push({ k: c!, v: c!, pos: i });
      i++;
      continue;
    }
    const op = /^[!#$%&*+./<=>?@\\^|~:-]+/.exec(src.slice(i, i + 10));
    if (op) {
      toks.push({ k: op[0] === "=" ? "=" : "op", v: op[0], pos: i });
      i += op[0].length;
      continue;
    }
    throw new ParseError(`unexpected character ${c}`);
  }
  return toks;
}

// ---------- parser: application, infix operators, records ----------
class Parser {
  i = 0;
  constructor(readonly toks: Tok[]) {}
  peek(o = 0) {
    return this.toks[this.i + o];
  }
  next() {
    return this.toks[this.i++];
  }
  expect(k: string) {
    const t = this.next();
    if (!t || t.k !== k) throw new ParseError(`expected ${k} got ${t?.v}`);
    return t;
  }
  // expr := app (op app)*  ; `$` lowest, right assoc; others left-to-right, equal precedence
  expr(): HVal {
    const left = this.infix();
    const t = this.peek();
    if (t && t.k === "op" && t.v === "$") {
      this.next();
      const right = this.expr();
      return applyTo(left, right);
    }
    return left;
  }
  infix(): HVal {
    let a = this.app();
    for (;;) {
      const t = this.peek();
      if (!t || t.k !== "op" || t.v === "$") break;
      this.next();
      const b = this.app();
      a = { t: "op", op: t.v, a, b };
    }
    return a;
  }
  app(): HVal {
    const f = this.atomRec();
    const args: HVal[] = [];
    for (;;) {
      const t = this.peek();
      if (!t || !["str", "qq", "num", "id", "(", "["].includes(t.k)) break;
      if (t.k === "id" && ["in", "where", "do", "let", "then", "else", "of"].includes(t.v)) break;
      args.push(this.atomRec());
    }
    if (args.length === 0) return f;
    if (f.t !== "id") throw new ParseError("application of non-identifier");
    return { t: "app", f: f.v, args };
  }
  atomRec(): HVal {
    let a = this.atom();
    while (this.peek()?.k === "{") {
      this.next();
      const fields: Record<string, HVal> = {};
      while (this.peek() && this.peek()!.k !== "}") {
        const name = this.expect("id").v;
        this.expect("=");
        fields[name] = this.expr();
        if (this.peek()?.k === ",") this.next();
      }
      this.expect("}");
      a = { t: "rec", base: a, fields };
    }
    return a;
  }
  atom(): HVal {
    const t = this.next();
    if (!t) throw new ParseError("unexpected end");
    switch (t.k) {
      case "str":
        return { t: "str", v: t.v };
      case "num":
        return { t: "num", v: Number(t.v) };
      case "qq": {
        const [name, v] = t.v.split("\u0000");
        return { t: "qq", name: name!, v: v! };
      }
      case "id":
        return { t: "id", v: t.v };
      case "(": {
        if (this.peek()?.k === ")") {
          this.next();
          return { t: "tuple", v: [] };
        }
        const items = [this.expr()];
        while (this.peek()?.k === ",") {
          this.next();
          items.push(this.expr());
        }
        this.expect(")");
        return items.length === 1 ? items[0]! : { t: "tuple", v: items };
      }
      case "[": {
        const items: HVal[] = [];
        while (this.peek() && this.peek()!.k !== "]") {
          items.push(this.expr());
          if (this.peek()?.k === ",") this.next();
          else break;
        }
        this.expect("]");
        return { t: "list", v: items };
      }
    }
    throw new ParseError(`unexpected token ${t.v}`);
  }
}

function applyTo(f: HVal, x: HVal): HVal {
  if (f.t === "id") return { t: "app", f: f.v, args: [x] };
  if (f.t === "app") return { t: "app", f: f.f, args: [...f.args, x] };
  throw new ParseError("$ applied to non-function");
}

export function parseExpr(src: string): HVal {
  const p = new Parser(tokenize(src));
  const e = p.expr();
  if (p.i < p.toks.length) {
    throw new ParseError(`trailing tokens: ${p.toks.slice(p.i, p.i + 3).map((t) => t.v).join(" ")}`);
  }
  return e;
}

// ---------- evaluation ----------
export interface Env {
  bindings: Map<string, { line: number; val: HVal }[]>;
  line?: number;
  readFixture(name: string): Uint8Array;
  depth?: number;
}

function resolve(v: HVal, env: Env): HVal {
  let depth = 0;
  while (v.t === "id" && env.bindings.has(v.v) && depth++ < 10) {
    const list = env.bindings.get(v.v)!;
    const at = env.line ?? 0;
    const before = list.filter((b) => b.line <= at);
    v = (before.length ? before[before.length - 1] : list[0])!.val;
  }
  return v;
}

function headerName(id: string): string {
  // hContentType → Content-Type
  const base = id.replace(/^(HTTP\.|H\.)/, "").replace(/^h/, "");
  return base.replace(/([a-z])([A-Z])/g, "$1-$2");
}

export function evalStr(v: HVal, env: Env): string {
  v = resolve(v, env);
  if (v.t === "str") return v.v;
  if (v.t === "qq") {
    if (/#\{/.test(v.v)) throw new ParseError("quasiquote interpolation");
    return v.name === "json" ? normalizeJsonText(v.v) : v.name === "str" ? strMargin(v.v) : v.v;
  }
  if (v.t === "id") {
    if (v.v === "mempty" || v.v === "BL.empty" || v.v === "BS.empty") return "";
    if (/^h[A-Z]/.test(v.v) || /\.h[A-Z]/.test(v.v)) return headerName(v.v.split(".").pop()!);
    if (v.v === "methodGet") return "GET";
    const m = /^method([A-Z][a-z]+)$/.exec(v.v);
    if (m) return m[1]!.toUpperCase();
  }
  if (v.t === "op" && (v.op === "<>" || v.op === "++")) return evalStr(v.a, env) + evalStr(v.b, env);
  if (v.t === "app") {
    const a = v.args;
    if (
      ["toS", "encodeUtf8", "BL.fromStrict", "BS.pack", "BL.pack", "toUtf8", "fromString", "T.pack"].includes(
        v.f,
      )
    ) {
      return evalStr(a[0]!, env);
    }
    if (v.f === "getInsertDataForTiobePlsTable") {
      const n = evalNum(a[0]!, env);
      const rows = [];
      for (let i = 20; i <= n + 20; i++) rows.push({ name: `Lang ${i}`, rank: i });
      return JSON.stringify(rows);
    }
    if (v.f === "readFixtureFile") return new TextDecoder().decode(env.readFixture(evalStr(a[0]!, env)));
    if (v.f === "generateJWT") return "\u0001JWT:" + evalStr(a[0]!, env);
  }
  throw new ParseError(`not a string: ${show(v)}`);
}

function evalNum(v: HVal, env: Env): number {
  v = resolve(v, env);
  if (v.t === "num") return v.v;
  throw new ParseError(`not a number: ${show(v)}`);
}

export function show(v: HVal): string {
  return JSON.stringify(v).slice(0, 120);
}

/** Text.Heredoc's `str`: lines after the first lose their leading whitespace up to a `|`. */
export function strMargin(s: string): string {
  const ls = s.split("\n").map((l, i) => (i > 0 ? l.replace(/^\s*\|/, "") : l));
  // the line of the closing `|]` holds only indentation
  if (ls.length > 1 && /^\s+$/.test(ls[ls.length - 1]!)) ls[ls.length - 1] = "";
  return ls.join("\n");
}

/** aeson-qq accepts bare keys; normalise to JSON text where needed. */
export function normalizeJsonText(s: string): string {
  try {
    JSON.parse(s);
    return s.trim();
  } catch {
    const fixed = s.replace(/([{,]\s*)([A-Za-z_][A-Za-z0-9_]*)\s*:/g, '$1"$2":');
    JSON.parse(fixed); // throws when still not JSON
    return fixed.trim();
  }
}

function renderRange(v: HVal, env: Env): string {
  v = resolve(v, env);
  if (v.t === "app") {
    if (v.f === "ByteRangeFromTo") return `${evalNum(v.args[0]!, env)}-${evalNum(v.args[1]!, env)}`;
    if (v.f === "ByteRangeFrom") return `${evalNum(v.args[0]!, env)}-`;
    if (v.f === "ByteRangeSuffix") return `-${evalNum(v.args[0]!, env)}`;
  }
  throw new ParseError(`range ${show(v)}`);
}

export function evalHeaders(v: HVal, env: Env): [string, string][] {
  v = resolve(v, env);
  if (v.t === "id" && (v.v === "mempty" || v.v === "noHeaders")) return [];
  if (v.t === "list") return v.v.flatMap((x) => evalHeader(x, env));
  if (v.t === "op" && (v.op === "<>" || v.op === "++")) {
    return [...evalHeaders(v.a, env), ...evalHeaders(v.b, env)];
  }
  if (v.t === "op" && v.op === ":") return [...evalHeader(v.a, env), ...evalHeaders(v.b, env)];
  if (v.t === "app") {
    const a = v.args;
    if (v.f === "rangeHdrs") return [["Range-Unit", "items"], ["Range", renderRange(a[0]!, env)]];
    if (v.f === "rangeHdrsWithCount") {
      return [["Prefer", "count=exact"], ["Range-Unit", "items"], ["Range", renderRange(a[0]!, env)]];
    }
    if (v.f === "acceptHdrs") return [["Accept", evalStr(a[0]!, env)]];
  }
  throw new ParseError(`headers ${show(v)}`);
}

function evalHeader(v: HVal, env: Env): [string, string][] {
  v = resolve(v, env);
  if (v.t === "tuple" && v.v.length === 2) return [[evalStr(v.v[0]!, env), evalStr(v.v[1]!, env)]];
  if (v.t === "id") {
    if (v.v === "planHdr") return [["Accept", "application/vnd.pgrst.plan+json"]];
    if (v.v === "rangeUnit") return [["Range-Unit", "items"]];
  }
  if (v.t === "app") {
    if (v.f === "authHeaderJWT") return [["Authorization", "Bearer " + evalStr(v.args[0]!, env)]];
    if (v.f === "authHeader") {
      return [["Authorization", evalStr(v.args[0]!, env) + " " + evalStr(v.args[1]!, env)]];
    }
    if (v.f === "authHeaderBasic") throw new ParseError("basic auth");
  }
  // a list spliced in
  if (v.t === "list" || v.t === "op" || v.t === "app") return evalHeaders(v, env);
  throw new ParseError(`header ${show(v)}`);
}

function evalMatchHeaders(v: HVal, env: Env): HeaderMatch[] {
  v = resolve(v, env);
  if (v.t === "op" && (v.op === "<>" || v.op === "++")) {
    return [...evalMatchHeaders(v.a, env), ...evalMatchHeaders(v.b, env)];
  }
  if (v.t === "op" && v.op === ":") {
    return [...evalMatchHeaders({ t: "list", v: [v.a] }, env), ...evalMatchHeaders(v.b, env)];
  }
  if (v.t === "app" && v.f === "map" && v.args.length === 2) {
    const f = v.args[0], xs = resolve(v.args[1]!, env);
    if (f!.t === "id" && xs.t === "list") {
      return evalMatchHeaders(
        { t: "list", v: xs.v.map((x) => ({ t: "app", f: f!.v, args: [x] }) as HVal) },
        env,
      );
    }
  }
  if (v.t !== "list") throw new ParseError(`matchHeaders ${show(v)}`);
  return v.v.map((x0) => {
    const x = resolve(x0, env);
    if (x.t === "op" && x.op === "<:>") {
      return { kind: "eq", name: evalStr(x.a, env), value: evalStr(x.b, env) };
    }
    if (x.t === "id") {
      const ct: Record<string, string> = {
        matchContentTypeJson: "application/json; charset=utf-8",
        matchContentTypeSingular: "application/vnd.pgrst.object+json; charset=utf-8",
        matchCTArrayStrip: "application/vnd.pgrst.array+json;nulls=stripped; charset=utf-8",
        matchCTSingularStrip: "application/vnd.pgrst.object+json;nulls=stripped; charset=utf-8",
      };
      if (x.v in ct) return { kind: "ct", name: "Content-Type", value: ct[x.v] };
    }
    if (x.t === "app") {
      if (x.f === "matchHeaderAbsent") return { kind: "absent", name: evalStr(x.args[0]!, env) };
      if (x.f === "matchHeaderValuePresent") {
        return { kind: "contains", name: evalStr(x.args[0]!, env), value: evalStr(x.args[1]!, env) };
      }
      if (x.f === "matchServerTimingHasTiming") {
        return { kind: "timing", name: "Server-Timing", value: evalStr(x.args[0]!, env) };
      }
    }
    throw new ParseError(`header matcher ${show(x)}`);
  }) as HeaderMatch[];
}

function evalMatcher(v: HVal, env: Env): Case["expect"] {
  v = resolve(v, env);
  if (v.t === "num") return { status: v.v, jsonCT: false, headers: [] };
  if (v.t === "qq" && v.name === "json") {
    if (/#\{/.test(v.v)) throw new ParseError("quasiquote interpolation");
    return { status: 200, json: JSON.parse(normalizeJsonText(v.v)), jsonCT: true, headers: [] };
  }
  if (v.t === "qq" || v.t === "str" || (v.t === "id" && (v.v === "mempty" || env.bindings.has(v.v)))) {
    return { status: 200, text: evalStr(v, env), jsonCT: false, headers: [] };
  }
  if (v.t === "rec") {
    let base: Case["expect"];
    if (v.base.t === "id" && v.base.v === "ResponseMatcher") {
      base = { status: 200, jsonCT: false, headers: [] };
    } else base = evalMatcher(v.base, env);
    for (const [k, fv] of Object.entries(v.fields)) {
      if (k === "matchStatus") base.status = evalNum(fv, env);
      else if (k === "matchHeaders") {
        base.headers = evalMatchHeaders(fv, env);
        base.jsonCT = false;
      } else if (k === "matchBody") {
        const b = resolve(fv, env);
        if (b.t === "app" && b.f === "bodyEquals") base.text = evalStr(b.args[0]!, env);
        else throw new ParseError(`matchBody ${show(b)}`);
        delete base.json;
      } else throw new ParseError(`field ${k}`);
    }
    return base;
  }
  throw new ParseError(`matcher ${show(v)}`);
}

function evalRequest(
  v: HVal,
  env: Env,
): { method: string; url: string; headers: [string, string][]; body: string | null } {
  v = resolve(v, env);
  if (v.t !== "app") throw new ParseError(`request ${show(v)}`);
  const a = v.args;
  const body = (x: HVal) => evalStr(x, env);
  switch (v.f) {
    case "get":
      return { method: "GET", url: evalStr(a[0]!, env), headers: [], body: null };
    case "delete":
      return { method: "DELETE", url: evalStr(a[0]!, env), headers: [], body: null };
    case "options":
      return { method: "OPTIONS", url: evalStr(a[0]!, env), headers: [], body: null };
    case "post":
    case "put":
    case "patch":
      if (a.length < 2) throw new ParseError("missing body");
      return { method: v.f.toUpperCase(), url: evalStr(a[0]!, env), headers: [], body: body(a[1]!) };
    case "request":
      if (a.length < 4) throw new ParseError("request arity");
      return {
        method: evalStr(a[0]!, env),
        url: evalStr(a[1]!, env),
        headers: evalHeaders(a[2]!, env),
        body: body(a[3]!),
      };
  }
  throw new ParseError(`request function ${v.f}`);
}

// ---------- file walking ----------
const REQ_START = /(^|[\s($])(request|get|post|patch|put|delete|options)\s+(?=["(a-zA-Z])/g;

function indentOf(line: string) {
  return line.length - line.trimStart().length;
}

/** Simple bindings of the file: `name = expr` (one line) and `let name = expr [in]`. */
function collectBindings(lines: string[]): Map<string, { line: number; val: HVal }[]> {
  const b = new Map<string, { line: number; val: HVal }[]>();
  for (let i = 0; i < lines.length; i++) {
    const m = /^\s*(?:let\s+)?([a-z][A-Za-z0-9_']*)\s*=\s*(.+?)(\s+in)?\s*$/.exec(lines[i]!);
    if (!m || m[1] === "spec") continue;
    let text = m[2];
    // continuation lines, more indented
    const ind = indentOf(lines[i]!);
    let j = i + 1;
    while (
      j < lines.length && lines[j]!.trim() && indentOf(lines[j]!) > ind &&
      !/^\s*(it|describe|context)\b/.test(lines[j]!) && !/^\s*[a-z][A-Za-z0-9_']*\s*=[^=]/.test(lines[j]!)
    ) {
      text += "\n" + lines[j];
      j++;
    }
    text = text!.replace(/\s+in\s*$/, "");
    try {
      const val = parseExpr(text);
      if (!b.has(m[1]!)) b.set(m[1]!, []);
      b.get(m[1]!)!.push({ line: i, val });
    } catch { /* not a simple value */ }
  }
  return b;
}

export function translateFile(file: string, src: string, readFixture: (n: string) => Uint8Array): {
  cases: Case[];
  skips: Skip[];
} {
  const lines = src.split("\n");
  const env: Env = { bindings: collectBindings(lines), readFixture };
  const cases: Case[] = [];
  const skips: Skip[] = [];
  // line offsets
  const offs: number[] = [];
  let o = 0;
  for (const l of lines) {
    offs.push(o);
    o += l.length + 1;
  }
  const lineAt = (pos: number) => {
    let lo = 0, hi = offs.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (offs[mid]! <= pos) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  // top-level definition and it/describe per line
  const fnAt: string[] = [];
  const itAt: { it: string; path: string[] }[] = [];
  let fn = "";
  const stack: { ind: number; name: string }[] = [];
  let curIt = "";
  let itInd = -1;
  const pendingAt: boolean[] = [];
  let curPending = false;
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    const top = /^([a-z][A-Za-z0-9_']*)\b.*=/.exec(l!) ?? /^([a-z][A-Za-z0-9_']*)\s*::/.exec(l!);
    if (top) fn = top[1]!;
    const ind = indentOf(l!);
    const d = /^\s*(describe|context|it|specify)\s+"((?:[^"\\]|\\.)*)"/.exec(l!);
    if (l!.trim() && !l!.trim().startsWith("--")) {
      while (stack.length && stack[stack.length - 1]!.ind >= ind) stack.pop();
      if (itInd >= 0 && ind <= itInd) (curIt = "", itInd = -1, curPending = false);
    }
    if (d) {
      let name = d[2]!;
      try {
        name = hsString(`"${d[2]}"`, 0)[0];
      } catch { /* keep */ }
      if (d[1] === "it" || d[1] === "specify") {
        curIt = name;
        itInd = ind;
        // an `it` marked pending in the spec never runs its requests
        curPending = false;
        for (
          let k = i;
          k < lines.length && (k === i || !lines[k]!.trim() || indentOf(lines[k]!) > ind);
          k++
        ) {
          if (/\bpending(With)?\b/.test(lines[k]!)) curPending = true;
        }
      } else stack.push({ ind, name });
    }
    fnAt.push(fn);
    pendingAt.push(curPending);
    itAt.push({ it: curIt, path: stack.map((s) => s.name) });
  }

  const SRW = "`shouldRespondWith`";
  let idx = src.indexOf(SRW);
  let prevEnd = 0;
  while (idx >= 0) {
    const line = lineAt(idx);
    const ctx = itAt[line];
    const base = { file, fn: fnAt[line]!, it: ctx!.it || "(no it)", line: line + 1 };
    env.line = line;
    try {
      if (pendingAt[line]) throw new ParseError("pending in the spec (pendingWith)");
      // request start: the last request keyword before, after the previous case
      const before = src.slice(prevEnd, idx);
      const starts = [...before.matchAll(REQ_START)].map((m) => prevEnd + m.index! + m[1]!.length).reverse();
      if (starts.length === 0) throw new ParseError("no request before shouldRespondWith");
      let start = -1;
      let req: ReturnType<typeof evalRequest> | undefined;
      let firstErr: unknown;
      for (const s of starts.slice(0, 6)) {
        try {
          req = evalRequest(parseExpr(src.slice(s, idx)), env);
          start = s;
          break;
        } catch (e) {
          firstErr ??= e;
        }
      }
      if (!req) throw firstErr;
      const startLine = lineAt(start);
      const ind = indentOf(lines[startLine]!);
      // statement end: the next line (after the shouldRespondWith line) indented <= the start line
      let endLine = line + 1;
      while (endLine < lines.length) {
        const l = lines[endLine];
        if (l!.trim() && !l!.trim().startsWith("--") && indentOf(l!) <= ind) break;
        endLine++;
      }
      const end = endLine < lines.length ? offs[endLine] : src.length;
      let matchText = src.slice(idx + SRW.length, end);
      // another statement joined on the same logical block (e.g. `>>`)? cut at the next request/shouldRespondWith
      const nextSrw = matchText.indexOf(SRW);
      if (nextSrw >= 0) throw new ParseError("two shouldRespondWith in one statement");
      matchText = matchText.replace(/\n\s*(liftIO|r <-|let)\b[\s\S]*$/, "");
      const expect = evalMatcher(parseExpr(matchText), env);
      const c: Case = { ...base, path: ctx!.path, ...req, expect };
      cases.push(c);
      prevEnd = idx + SRW.length;
    } catch (e) {
      if (!(e instanceof ParseError) && !(e instanceof SyntaxError)) throw e;
      skips.push({ ...base, why: `parse: ${(e as Error).message}` });
      prevEnd = idx + SRW.length;
    }
    idx = src.indexOf(SRW, idx + SRW.length);
  }
  return { cases, skips };
}
