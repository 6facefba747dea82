/**
 * Fails when an import crosses the layers the wrong way, or when two folders import each other (directly or
 * around a loop). The layers, top to bottom:
 *
 *   main.ts, cli/ → routes/ → services/ → db/, runtime/ → lib/
 *   main.ts, cli/ → workers/ → services/
 *   client/ (the SDK) imports no other folder
 *
 * and no two folders import each other, directly or around a loop (a folder importing its own subfolders is
 * composition, not a cycle). Also fails when a route touches the databases (`platform.dbs`, a `Db`, SQL): routes
 * call area facades; and when a service runs SQL outside its area's `store.ts` (see SQL_EXCEPTIONS).
 *
 * Tests and benchmarks may import anything. Run: `deno run --allow-read cli/check_layers.ts`.
 */
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** Which top-level folders each folder may import, besides itself. */
const ALLOWED: Record<string, string[]> = {
  lib: [],
  // The client SDK is shipped alone: it imports nothing of the server.
  client: [],
  db: ["lib"],
  runtime: ["lib"],
  services: ["lib", "db", "runtime"],
  workers: ["lib", "services"],
  routes: ["lib", "services"],
  cli: ["lib", "db", "runtime", "services", "workers", "routes"],
  ".": ["lib", "db", "runtime", "services", "workers", "routes", "cli"],
};
const CHECKED = Object.keys(ALLOWED);
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const IMPORT =
  /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g;

/** SQL calls: postgres.js's sql`…`, and the driver's query, unsafe, execRows, pipeline and exec of a literal. */
const SQL_CALL =
  /(?<![\w/.])sql`|\.(?:query|unsafe|execRows|pipeline)\s*(?:<[^>()]*>)?\s*\(|\.exec\(\s*[`"']/;
/** What a route may not mention: the databases, a driver type, SQL. */
const ROUTE_DB = new RegExp(`\\.dbs\\b|\\bdbs\\.|\\b(?:Db|Databases|Queryable)\\b|${SQL_CALL.source}`);
/** Services that may run SQL outside a `store.ts`, and why. */
const SQL_EXCEPTIONS: Record<string, string> = {
  "services/projects/sql.ts": "runs the owner's own SQL: that is POST /v1/sql",
  "services/system/health.ts": "its `select 1` is the readiness probe",
  "services/data/data.ts": "runs the statements the PostgREST compiler (db/rest/) writes",
};

interface Edge {
  from: string;
  to: string;
}

async function* sources(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory && !entry.name.startsWith(".") && entry.name !== "node_modules") {
      yield* sources(path);
    } else if (entry.isFile && /\.tsx?$/.test(entry.name) && !/_test\.tsx?$/.test(entry.name)) yield path;
  }
}

/** The top folder of a repository path ("." for files at the root). */
const layerOf = (path: string) => (path.includes("/") ? path.split("/")[0]! : ".");
/** The folder a file belongs to for the cycle check: its directory. */
const folderOf = (path: string) => (path.includes("/") ? dirname(path) : ".");

const edges: Edge[] = [];
const problems: string[] = [];
const excepted = new Set<string>();
for await (const file of sources(ROOT)) {
  const from = relative(ROOT, file);
  if (!CHECKED.includes(layerOf(from))) continue; // tests/, bench/
  const text = await Deno.readTextFile(file);
  // The line of the first match (0: none); matched on the whole text, so a call split over lines counts.
  const line = (pattern: RegExp) => {
    const found = pattern.exec(text);
    return found ? text.slice(0, found.index).split("\n").length : 0;
  };
  if (layerOf(from) === "routes" && line(ROUTE_DB)) {
    problems.push(`${from}:${line(ROUTE_DB)} touches the databases: routes call area facades`);
  }
  const store = from.startsWith("services/") && from.endsWith("/store.ts");
  if (SQL_EXCEPTIONS[from] && line(SQL_CALL)) excepted.add(from);
  else if (layerOf(from) === "services" && !store && line(SQL_CALL)) {
    problems.push(`${from}:${line(SQL_CALL)} runs SQL: it belongs in its area's store.ts`);
  }
  for (const match of text.matchAll(IMPORT)) {
    const spec = match[1] ?? match[2]!;
    if (!spec.startsWith(".")) continue;
    edges.push({ from, to: relative(ROOT, resolve(dirname(file), spec)) });
  }
}
for (const file of Object.keys(SQL_EXCEPTIONS)) {
  if (!excepted.has(file)) problems.push(`${file} runs no SQL any more: remove it from SQL_EXCEPTIONS`);
}

for (const { from, to } of edges) {
  const [a, b] = [layerOf(from), layerOf(to)];
  if (a === b) continue;
  if (!ALLOWED[a]?.includes(b)) problems.push(`${from} imports ${to}: ${a}/ may not import ${b}/`);
}

// Folder cycles: a strongly connected set of two or more folders (Tarjan).
const graph = new Map<string, Set<string>>();
for (const { from, to } of edges) {
  const [a, b] = [folderOf(from), folderOf(to)];
  // A folder composes its own subfolders (routes/mod.ts mounts routes/middleware): only the other way counts.
  if (a === b || a === "." || b.startsWith(`${a}/`)) continue;
  if (!graph.has(a)) graph.set(a, new Set());
  graph.get(a)!.add(b);
}
let counter = 0;
const index = new Map<string, number>();
const low = new Map<string, number>();
const stack: string[] = [];
const onStack = new Set<string>();
const visit = (node: string) => {
  index.set(node, counter);
  low.set(node, counter++);
  stack.push(node);
  onStack.add(node);
  for (const next of graph.get(node) ?? []) {
    if (!index.has(next)) {
      visit(next);
      low.set(node, Math.min(low.get(node)!, low.get(next)!));
    } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
  }
  if (low.get(node) === index.get(node)) {
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(member);
    } while (member !== node);
    if (group.length > 1) {
      const inside = edges.filter(({ from, to }) =>
        group.includes(folderOf(from)) && group.includes(folderOf(to)) && folderOf(from) !== folderOf(to)
      );
      problems.push(
        `folders import each other: ${group.sort().join(", ")}\n` +
          inside.map(({ from, to }) => `    ${from} → ${to}`).join("\n"),
      );
    }
  }
};
for (const node of graph.keys()) if (!index.has(node)) visit(node);

if (problems.length > 0) {
  console.error(problems.join("\n"));
  console.error(`\n${problems.length} layering problem(s)`);
  Deno.exit(1);
}
console.log(
  `layers: ${edges.length} imports checked, none crosses a layer the wrong way, no folder cycle; ` +
    "no route touches the databases, no service runs SQL outside a store",
);
