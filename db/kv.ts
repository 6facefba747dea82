import { join } from "node:path";

/** Options of {@linkcode openKv}. */
export interface KvOptions {
  /** A KV Connect endpoint; takes precedence over the path. */
  url?: string;
  /** A local SQLite file. */
  path?: string;
  /** Where the default file lives: `<dataDir>/kv.sqlite3`. */
  dataDir: string;
}

/** Opens Deno KV from `KV_URL`, `KV_PATH` or the data directory. */
export async function openKv(options: KvOptions): Promise<Deno.Kv> {
  if (options.url) return await Deno.openKv(options.url);
  const path = options.path ?? join(options.dataDir, "kv.sqlite3");
  await Deno.mkdir(join(path, ".."), { recursive: true });
  return await Deno.openKv(path);
}
