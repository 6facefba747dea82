// Replays PostgREST v14.17's own hspec suite (test/spec/Feature/**) against this repo's /rest/v1 and prints
// pass / fail / skip / excluded / unparsed per spec file. The spec files and the SQL fixture are read straight from
// a PostgREST git directory with `git show v14.17:<path>`; nothing is copied into this repository.
//
//   deno run -A --unstable-kv --unstable-worker-options --unstable-no-legacy-abort tools/postgrest_replay/replay.ts \
//     [--postgrest /work/.mirror/PostgREST+postgrest/repo] [--out <dir>] [--files QuerySpec,RpcSpec] [--pglite]
//     [--verbose] [--repo <dir>] [--search-path test] [--no-rollback] [--out-suffix _x]
//
// --postgrest: a PostgREST git directory (bare is fine) that has the tag v14.17. The default is the mirror the agent
//   session's `fetch` tool makes (`fetch github:PostgREST/postgrest`); fetch it again if it is gone.
// --out: where cases.json, failures.json and results.json go (default: a new temp dir, printed at the end). Never
//   point it into the repository.
// --repo: the platform checkout to replay against (default: the repository holding this file).
// By default the platform runs on PostgreSQL (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test);
// --pglite uses the embedded PGlite. The script re-runs itself with the repo's deno.json (its import map).
// --search-path is a diagnostic (an operator's `alter role … set search_path`); --no-rollback stops adding
// `Prefer: tx=rollback` to writes. What is excluded and why: exclusion() and settingsFor() below.
import { resolve } from "node:path";
import { fixtureStatements } from "./sql.ts";
import { type Case, type Skip, translateFile } from "./translate.ts";

const TAG = "v14.17";
const args = Deno.args;
const arg = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const repo = resolve(arg("--repo") ?? new URL("../..", import.meta.url).pathname);
const postgrest = arg("--postgrest") ?? "/work/.mirror/PostgREST+postgrest/repo";
const only = arg("--files")?.split(",").map((s) => s.trim().replace(/\.hs$/, ""));
const usePglite = args.includes("--pglite");
const verbose = args.includes("--verbose");
const outSuffix = arg("--out-suffix") ?? "";

if (!Deno.env.get("SPECREPLAY_CHILD")) {
  const env: Record<string, string> = { SPECREPLAY_CHILD: "1" };
  if (!usePglite) {
    env.DATABASE_URL = Deno.env.get("DATABASE_URL") ?? "postgres://postgres@127.0.0.1:5432/test";
  }
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--unstable-kv",
      "--unstable-worker-options",
      "--unstable-no-legacy-abort",
      "--config",
      `${repo}/deno.json`,
      import.meta.filename!,
      // the child runs in the repo: paths given relative to here are made absolute
      ...args.map((a, i) => ["--out", "--postgrest", "--repo"].includes(args[i - 1] ?? "") ? resolve(a) : a),
    ],
    cwd: repo,
    env: usePglite ? { ...env } : env,
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  const st = await child.status;
  Deno.exit(st.code);
}
if (usePglite) Deno.env.delete("DATABASE_URL");

// deno-lint-ignore no-explicit-any
type Any = any;
const { startPlatform } = await import(`${repo}/tests/harness.ts`);
const { SignJWT } = await import("jose");

// ---------------------------------------------------------------- configuration of the spec files
const SPEC_SECRET = "reallyreallyreallyreallyverysafe";

/** Files / definitions excluded, with why. */
function exclusion(c: { file: string; fn: string }): string | null {
  const f = c.file;
  const byFile: Record<string, string> = {
    AsymmetricJwtSpec: "JWT key config (asymmetric JWK) – platform has its own per-project ES256 keys",
    BinaryJwtSecretSpec: "JWT key config (binary secret) – platform has its own per-project keys",
    NoJwtSecretSpec: "no-JWT-secret server config – no such platform setting",
    AudienceJwtSecretSpec: "jwt-aud config – platform requires aud=authenticated, no setting",
    NoAnonSpec: "no anonymous role config – platform always has anon",
    ProxySpec: "openapi-server-proxy-uri – no platform setting",
    ObservabilitySpec: "server-trace-header – no platform setting",
    ExtraSearchPathSpec: "db-extra-search-path – no platform setting",
    PostGISSpec: "PostGIS not installed",
    RootSpec: "db-root-spec – no platform setting",
    ConcurrentSpec: "concurrency/pool behaviour of one server",
  };
  if (byFile[f]) return byFile[f];
  if (f === "PgSafeUpdateSpec" && c.fn === "spec") return "pg-safeupdate LOAD (superuser) pre-request";
  if (f === "RollbackSpec" && c.fn !== "allowed") {
    return "db-tx-end disallow/forced config – no platform setting";
  }
  return null;
}

interface Settings {
  schemas: string[];
  aggregates: boolean;
  plan: boolean;
  server_timing: boolean;
  pre_request: string | null;
  app_settings: Record<string, string>;
  openapi_mode: string;
  openapi_security_active: boolean;
}
const BASE: Settings = {
  schemas: ["test"],
  aggregates: false,
  plan: false,
  server_timing: true,
  pre_request: "test.switch_role",
  app_settings: { app_host: "localhost", external_api_secret: "0123456789abcdef" },
  openapi_mode: "follow-privileges",
  openapi_security_active: false,
};
function settingsFor(c: { file: string; fn: string }): { key: string; s: Settings; maxRows?: string } {
  const f = c.file;
  if (f === "QueryLimitedSpec") return { key: "maxrows", s: BASE, maxRows: "2" };
  if (f === "UnicodeSpec") return { key: "unicode", s: { ...BASE, schemas: ["تست"] } };
  if (f === "DisabledOpenApiSpec") return { key: "oadisabled", s: { ...BASE, openapi_mode: "disabled" } };
  if (f === "IgnorePrivOpenApiSpec") {
    return { key: "oaignore", s: { ...BASE, openapi_mode: "ignore-privileges", schemas: ["test", "v1"] } };
  }
  if (f === "SecurityOpenApiSpec") return { key: "oasec", s: { ...BASE, openapi_security_active: true } };
  if (f === "RpcPreRequestGucsSpec") {
    return { key: "prereq", s: { ...BASE, pre_request: "test.custom_headers" } };
  }
  if (f === "MultipleSchemaSpec") {
    return { key: "multi", s: { ...BASE, schemas: ["v1", "v2", 'SPECIAL "@/\\#~_-'] } };
  }
  if (f === "PlanSpec" && c.fn === "spec") return { key: "plan", s: { ...BASE, plan: true } };
  if (f === "ServerTimingSpec") return { key: "plan", s: { ...BASE, plan: true } };
  if (f === "AggregateFunctionsSpec" && c.fn === "allowed") {
    return { key: "agg", s: { ...BASE, aggregates: true } };
  }
  return { key: "base", s: BASE };
}

// ---------------------------------------------------------------- translate
/** `git show TAG:<path>` in the PostgREST git directory. */
function gitShow(path: string): Uint8Array {
  const r = new Deno.Command("git", { args: ["--git-dir", postgrest, "show", `${TAG}:${path}`] })
    .outputSync();
  if (!r.success) {
    throw new Error(`git show ${TAG}:${path} in ${postgrest}: ${new TextDecoder().decode(r.stderr).trim()}`);
  }
  return r.stdout;
}
function gitLsTree(path: string): string[] {
  const r = new Deno.Command("git", {
    args: ["--git-dir", postgrest, "ls-tree", "-r", "--name-only", TAG, path],
  })
    .outputSync();
  if (!r.success) {
    throw new Error(
      `git ls-tree ${TAG} ${path} in ${postgrest}: ${new TextDecoder().decode(r.stderr).trim()} ` +
        "(bring the mirror back with the session's fetch tool: github:PostgREST/postgrest)",
    );
  }
  return new TextDecoder().decode(r.stdout).split("\n").filter((l) => l.endsWith(".hs"));
}
const FIXTURES = "test/spec/fixtures";
const fixtureCache = new Map<string, Uint8Array>();
const readFixture = (name: string): Uint8Array => {
  if (!fixtureCache.has(name)) fixtureCache.set(name, gitShow(`${FIXTURES}/${name}`));
  return fixtureCache.get(name)!;
};

const out = resolve(arg("--out") ?? await Deno.makeTempDir({ prefix: "postgrest_replay_" }));
if (out === repo || out.startsWith(`${repo}/`)) {
  throw new Error(`--out ${out} is inside the repository ${repo}`);
}
await Deno.mkdir(out, { recursive: true });

// spec file name (no .hs) -> its path under test/spec/Feature
const specPaths = new Map(
  gitLsTree("test/spec/Feature").map((p) => [p.replace(/^.*\//, "").replace(/\.hs$/, ""), p]),
);
const specFiles = [...specPaths.keys()].sort().filter((f) => !only || only.includes(f));
const allCases: Case[] = [];
const parseSkips: Skip[] = [];
for (const f of specFiles) {
  const src = new TextDecoder().decode(gitShow(specPaths.get(f)!));
  const { cases, skips } = translateFile(f, src, readFixture);
  allCases.push(...cases);
  parseSkips.push(...skips);
}
Deno.writeTextFileSync(`${out}/cases${outSuffix}.json`, JSON.stringify(allCases, null, 1));

// ---------------------------------------------------------------- JWTs
function b64urlDecode(s: string): Uint8Array<ArrayBuffer> {
  const b = s.replace(/-/g, "+").replace(/_/g, "/");
  return Uint8Array.from(atob(b + "=".repeat((4 - b.length % 4) % 4)), (c) => c.charCodeAt(0));
}
async function specSigned(token: string): Promise<Record<string, unknown> | null> {
  const parts = token.split(".");
  if (parts.length !== 3) return null;
  try {
    const header = JSON.parse(new TextDecoder().decode(b64urlDecode(parts[0]!)));
    if (header.alg !== "HS256") return null;
    const key = await crypto.subtle.importKey(
      "raw",
      new TextEncoder().encode(SPEC_SECRET),
      {
        name: "HMAC",
        hash: "SHA-256",
      },
      false,
      ["verify"],
    );
    const ok = await crypto.subtle.verify(
      "HMAC",
      key,
      b64urlDecode(parts[2]!),
      new TextEncoder().encode(`${parts[0]}.${parts[1]}`),
    );
    if (!ok) return null;
    return JSON.parse(new TextDecoder().decode(b64urlDecode(parts[1]!)));
  } catch {
    return null;
  }
}

/** The Authorization value to send, or a skip reason. */
async function mapAuth(p: Any, value: string): Promise<{ value?: string; skip?: string }> {
  const m = /^(\S+)\s+([\s\S]*)$/.exec(value);
  if (!m) return { value };
  const [, scheme, token] = m;
  let claims: Record<string, unknown> | null;
  if (token!.startsWith("\u0001JWT:")) claims = JSON.parse(token!.slice(5));
  else claims = await specSigned(token!);
  if (!claims) return { value }; // not signed with the spec's secret: sent unchanged (an invalid token case)
  const role = claims.role;
  if (role === undefined) {
    return { skip: "JWT without role claim (spec's anonymous JWT; platform JWTs are authenticated)" };
  }
  if (role === "postgrest_test_anonymous") {
    return { skip: "JWT with role postgrest_test_anonymous (platform JWTs are authenticated)" };
  }
  if (role !== "postgrest_test_author") {
    return { skip: `JWT role ${JSON.stringify(role)} not available on platform` };
  }
  const now = Math.floor(Date.now() / 1000);
  const all = {
    aud: "authenticated",
    ref: "default",
    session_id: crypto.randomUUID(),
    sub: crypto.randomUUID(),
    iat: now,
    exp: now + 600,
    ...claims,
    role: "authenticated",
  };
  const project = await p.platform.projects.get("default");
  const key = await p.platform.projects.signingKey("default");
  const jwt = await new SignJWT(all).setProtectedHeader({ alg: "ES256", kid: project.jwt_kid }).sign(key);
  return { value: `${scheme} ${jwt}` };
}

// ---------------------------------------------------------------- platform + fixture
async function ownerSql(p: Any, query: string): Promise<{ status: number; body: Any }> {
  const res = await p.fetch("/v1/sql", { method: "POST", headers: { apikey: p.secretKey }, json: { query } });
  return { status: res.status, body: await res.json().catch(() => null) };
}

function dollar(sql: string, base: string): string {
  let tag = `$${base}$`;
  let i = 0;
  while (sql.includes(tag)) tag = `$${base}${i++}$`;
  return tag;
}

const fixtureFiles: Record<string, string> = {};
for (const f of ["schema.sql", "jwt.sql", "jsonschema.sql", "privileges.sql", "data.sql"]) {
  fixtureFiles[f] = new TextDecoder().decode(readFixture(f));
}
const fixture = fixtureStatements(fixtureFiles);

async function loadFixture(p: Any): Promise<{ file: string; sql: string; code: string; message: string }[]> {
  const setup = await ownerSql(p, "create table public._replay_errors (i int, code text, msg text)");
  if (setup.status !== 200) throw new Error(`cannot create error table: ${JSON.stringify(setup.body)}`);
  const BATCH = 60;
  const stmts = fixture.stmts;
  for (let b = 0; b < stmts.length; b += BATCH) {
    const parts = ["set check_function_bodies = false", "set client_min_messages = error"];
    for (let i = b; i < Math.min(stmts.length, b + BATCH); i++) {
      const s = stmts[i];
      const body = s!.sql;
      const t = dollar(body, "stmt");
      const sp = s!.searchPath ? dollar(s!.searchPath, "sp") : "";
      const setSp = s!.searchPath ? `execute ${sp}set local search_path = ${s!.searchPath}${sp};` : "";
      const d = dollar(body + setSp, "do");
      parts.push(
        `do ${d} begin ${setSp} execute ${t}${body}${t}; exception when others then ` +
          `insert into public._replay_errors values (${i}, sqlstate, sqlerrm); end ${d}`,
      );
    }
    const r = await ownerSql(p, parts.join(";\n"));
    if (r.status !== 200) {
      // the whole batch failed (a statement a DO block cannot hold): one by one
      for (let i = b; i < Math.min(stmts.length, b + BATCH); i++) {
        const s = stmts[i];
        const q = "set check_function_bodies = false;\n" +
          (s!.searchPath ? `set search_path = ${s!.searchPath};\n` : "") + s!.sql;
        const r1 = await ownerSql(p, q);
        if (r1.status !== 200) {
          await ownerSql(
            p,
            `insert into public._replay_errors values (${i}, '${r1.body?.error?.code ?? "?"}', ${"$m$"}${
              r1.body?.error?.message ?? ""
            }${"$m$"})`,
          );
        }
      }
    }
  }
  const errs = await ownerSql(p, "select * from public._replay_errors order by i");
  await ownerSql(p, "drop table public._replay_errors");
  // the spec ANALYZEs these before RangeSpec (planned counts)
  await ownerSql(p, "analyze test.items; analyze test.child_entities");
  // make the schema cache see everything
  await ownerSql(p, "notify platform_schema");
  return (errs.body?.data ?? []).map((e: Any) => ({
    file: stmts[e.i]!.file,
    sql: stmts[e.i]!.sql,
    code: e.code,
    message: e.msg,
  }));
}

async function applySettings(p: Any, s: Settings): Promise<string | null> {
  const res = await p.fetch("/v1/project/data-settings", {
    method: "PATCH",
    headers: { apikey: p.secretKey },
    json: s,
  });
  const t = await res.text();
  return res.status === 200 ? null : `${res.status} ${t.slice(0, 300)}`;
}

// ---------------------------------------------------------------- running a case
interface Result {
  status: "pass" | "fail" | "skip" | "excluded";
  why?: string;
  actual?: { status: number; headers: Record<string, string>; body: string };
  problems?: string[];
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null) return false;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, (b as unknown[])[i]));
  }
  if (typeof a === "object") {
    const ka = Object.keys(a as object), kb = Object.keys(b as object);
    return ka.length === kb.length &&
      ka.every((k) => Object.hasOwn(b as object, k) && deepEqual((a as Any)[k], (b as Any)[k]));
  }
  return false;
}

function isJsonCT(v: string | null): boolean {
  if (!v) return false;
  const [m, ...ps] = v.split(";");
  return m === "application/json" && (ps.length === 0 || (ps.length === 1 && ps[0] === " charset=utf-8"));
}

async function runCase(p: Any, c: Case): Promise<Result> {
  const headers = new Headers();
  headers.set("apikey", p.publicKey);
  for (const [k, v] of c.headers) {
    if (k.toLowerCase() === "authorization") {
      const m = await mapAuth(p, v);
      if (m.skip) return { status: "skip", why: m.skip };
      headers.append(k, m.value!);
    } else headers.append(k, v);
  }
  // PostgREST's test server rolls back every request (db-tx-end rollback-allow-override): the same, with Prefer
  let injected = false;
  const prefer = headers.get("prefer") ?? "";
  if (
    !args.includes("--no-rollback") && !["GET", "HEAD", "OPTIONS"].includes(c.method) && !/\btx=/.test(prefer)
  ) {
    headers.append("Prefer", "tx=rollback");
    injected = true;
  }
  // hspec-wai sends the path raw: a '#' is not a fragment there
  const raw = c.url.replace(/#/g, "%23");
  const url = `http://127.0.0.1/rest/v1${raw.startsWith("/") ? raw : "/" + raw}`;
  const hasBody = c.body !== null && !["GET", "HEAD"].includes(c.method);
  let res: Response;
  try {
    res = await p.handler(
      new Request(url, {
        method: c.method,
        headers,
        body: hasBody ? new TextEncoder().encode(c.body!) : undefined,
      }),
    );
  } catch (e) {
    return {
      status: "fail",
      problems: [`handler threw: ${(e as Error).message}`],
      actual: { status: 0, headers: {}, body: "" },
    };
  }
  const bytes = new Uint8Array(await res.arrayBuffer());
  const text = new TextDecoder().decode(bytes);
  const rh = new Headers(res.headers);
  if (injected) {
    const pa = rh.get("preference-applied");
    if (pa !== null) {
      const rest = pa.split(",").map((s) => s.trim()).filter((s) => s !== "tx=rollback");
      if (rest.length) rh.set("preference-applied", rest.join(", "));
      else rh.delete("preference-applied");
    }
  }
  // the in-process handler sets no Content-Length; an HTTP server would (except on 204/304 and HEAD)
  if (!rh.has("content-length") && c.method !== "HEAD" && res.status !== 204 && res.status !== 304) {
    rh.set("content-length", String(bytes.length));
  }
  const problems: string[] = [];
  // the spec's role names are the platform's anon/authenticated
  const mapRoles = (t: string) =>
    t.replace(/postgrest_test_anonymous/g, "anon").replace(/postgrest_test_author/g, "authenticated");
  const e = JSON.parse(mapRoles(JSON.stringify(c.expect))) as Case["expect"];
  if (res.status !== e.status) problems.push(`status ${e.status} != ${res.status}`);
  if (e.json !== undefined) {
    let actual: unknown;
    try {
      actual = JSON.parse(text);
      if (!deepEqual(e.json, actual)) problems.push("json body differs");
    } catch {
      problems.push("body not JSON");
    }
  }
  if (e.text !== undefined && e.text !== text) problems.push("text body differs");
  if (e.jsonCT && !isJsonCT(rh.get("content-type"))) {
    problems.push(`json matcher content-type: ${rh.get("content-type")}`);
  }
  for (const h of e.headers) {
    let v = rh.get(h.name);
    if (h.name.toLowerCase() === "set-cookie" && h.kind === "eq") {
      const all = res.headers.getSetCookie();
      v = all.includes(h.value!) ? h.value! : all.join(" | ");
    }
    if (h.name.toLowerCase() === "content-length" && c.method === "HEAD" && v === null) continue;
    if (h.kind === "absent") {
      if (v !== null) problems.push(`header ${h.name} present: ${v}`);
    } else if (h.kind === "eq" || h.kind === "ct") {
      if (v !== h.value) {
        problems.push(`header ${h.name}: expected ${JSON.stringify(h.value)} got ${JSON.stringify(v)}`);
      }
    } else if (h.kind === "contains") {
      if (v === null || !v.includes(h.value!)) {
        problems.push(
          `header ${h.name}: expected to contain ${JSON.stringify(h.value)} got ${JSON.stringify(v)}`,
        );
      }
    } else if (h.kind === "timing") {
      if (v === null || !new RegExp(`${h.value};dur=\\d+.\\d+`).test(v)) {
        problems.push(`Server-Timing lacks ${h.value}: ${v}`);
      }
    }
  }
  const actual = { status: res.status, headers: Object.fromEntries(rh.entries()), body: text.slice(0, 4000) };
  return problems.length ? { status: "fail", problems, actual } : { status: "pass", actual };
}

// ---------------------------------------------------------------- main
const groups = new Map<string, { s: Settings; maxRows?: string; cases: Case[] }>();
const results: { c: Case; r: Result }[] = [];
for (const c of allCases) {
  const ex = exclusion(c);
  if (ex) {
    results.push({ c, r: { status: "excluded", why: ex } });
    continue;
  }
  const g = settingsFor(c);
  const key = g.key;
  if (!groups.has(key)) groups.set(key, { s: g.s, maxRows: g.maxRows, cases: [] });
  groups.get(key)!.cases.push(c);
}

let loadErrors: Any[] = [];
const platforms = new Map<string, Any>();
async function platformFor(maxRows?: string): Promise<Any> {
  const k = maxRows ?? "default";
  if (platforms.has(k)) return platforms.get(k);
  const t0 = Date.now();
  const p = await startPlatform(maxRows ? { DATA_MAX_ROWS: maxRows } : {});
  const errs = await loadFixture(p);
  const sp = arg("--search-path");
  if (sp) {
    // diagnostic only: what PostgREST's per-request search_path would give (an operator's `alter role … in database`)
    for (const role of ["anon", "authenticated", "service_role"]) {
      await p.internalSql(
        `do $x$ begin execute format('alter role ${role} in database %I set search_path = ${sp}', current_database()); end $x$`,
      );
    }
    await ownerSql(p, "notify platform_schema");
    await new Promise((r) => setTimeout(r, 500));
  }
  if (k === "default" || loadErrors.length === 0) loadErrors = errs;
  console.error(
    `platform ${k}: started and fixture loaded in ${Date.now() - t0} ms, ${errs.length} statements failed`,
  );
  platforms.set(k, p);
  return p;
}

const t0 = Date.now();
for (const [key, g] of groups) {
  const p = await platformFor(g.maxRows);
  const err = await applySettings(p, g.s);
  if (err) {
    console.error(`settings for ${key} refused: ${err}`);
    for (const c of g.cases) {
      results.push({ c, r: { status: "excluded", why: `settings refused: ${err.slice(0, 120)}` } });
    }
    continue;
  }
  for (const c of g.cases) {
    const r = await runCase(p, c);
    results.push({ c, r });
    if (verbose && r.status === "fail") {
      console.error(`FAIL ${c.file}:${c.line} ${c.it}: ${r.problems?.join("; ")}`);
    }
  }
}
for (const p of platforms.values()) await p.close();

// ---------------------------------------------------------------- report
const per = new Map<string, Record<string, number>>();
for (const f of specFiles) per.set(f, { pass: 0, fail: 0, skip: 0, excluded: 0, unparsed: 0 });
for (const { c, r } of results) per.get(c.file)![r.status]!++;
for (const s of parseSkips) per.get(s.file)!.unparsed!++;
const tot = { pass: 0, fail: 0, skip: 0, excluded: 0, unparsed: 0 };
console.log(`${"file".padEnd(26)} pass  fail  skip  excl  unparsed`);
for (const [f, n] of per) {
  for (const k of Object.keys(tot) as (keyof typeof tot)[]) tot[k] += n[k]!;
  console.log(
    `${f.padEnd(26)} ${String(n.pass).padStart(4)}  ${String(n.fail).padStart(4)}  ${
      String(n.skip).padStart(4)
    }  ${String(n.excluded).padStart(4)}  ${String(n.unparsed).padStart(4)}`,
  );
}
const applicable = tot.pass + tot.fail;
console.log(
  `TOTAL pass ${tot.pass} fail ${tot.fail} skip ${tot.skip} excluded ${tot.excluded} unparsed ${tot.unparsed}; ` +
    `pass rate ${(100 * tot.pass / Math.max(1, applicable)).toFixed(1)}% of ${applicable} run (${
      ((Date.now() - t0) / 1000).toFixed(0)
    } s, ${usePglite ? "PGlite" : "PostgreSQL"})`,
);
const failures = results.filter(({ r }) => r.status === "fail").map(({ c, r }) => ({
  file: c.file,
  fn: c.fn,
  line: c.line,
  it: c.it,
  context: c.path,
  request: { method: c.method, url: c.url, headers: c.headers, body: c.body },
  expected: c.expect,
  problems: r.problems,
  actual: r.actual,
}));
Deno.writeTextFileSync(`${out}/failures${outSuffix}.json`, JSON.stringify(failures, null, 1));
Deno.writeTextFileSync(
  `${out}/results${outSuffix}.json`,
  JSON.stringify(
    {
      totals: tot,
      perFile: Object.fromEntries(per),
      skips: results.filter(({ r }) => r.status === "skip" || r.status === "excluded").map(({ c, r }) => ({
        file: c.file,
        fn: c.fn,
        line: c.line,
        it: c.it,
        status: r.status,
        why: r.why,
      })),
      unparsed: parseSkips,
      fixtureDropped: fixture.dropped.map((d) => ({ ...d, sql: d.sql.slice(0, 200) })),
      fixtureErrors: loadErrors.map((e: Any) => ({ ...e, sql: e.sql.slice(0, 300) })),
    },
    null,
    1,
  ),
);
console.log(`wrote ${out}/failures${outSuffix}.json and ${out}/results${outSuffix}.json`);
