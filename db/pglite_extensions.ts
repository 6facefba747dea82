/**
 * The extensions an embedded engine offers besides plpgsql: pgvector, and the contrib modules of PostgreSQL that
 * Supabase projects enable (pgcrypto, uuid-ossp, pg_trgm, citext, hstore, ltree, unaccent…), which PGlite ships
 * as archives. PGlite's own loading of an extension unpacks its archive and compiles its library at every engine
 * start; here the archives are unpacked once per process into one buffer, which each engine's thread receives a
 * copy of (never a shared view: code that escaped one engine could rewrite the bytes the next engine loads),
 * each engine writes its own copy of the files before PostgreSQL starts, and a library is compiled only when a
 * statement first uses it (`create extension`, or a call of its functions).
 */

/**
 * PGlite's contrib archives offered: Supabase's usual extensions. Left out: file_fdw (files), pg_stat_statements
 * (needs a preloaded library), passwordcheck, and the inspection tools of a server's internals.
 */
const CONTRIB = [
  "pgcrypto",
  "uuid-ossp",
  "pg_trgm",
  "citext",
  "hstore",
  "ltree",
  "unaccent",
  "fuzzystrmatch",
  "btree_gin",
  "btree_gist",
  "intarray",
  "cube",
  "earthdistance",
  "isn",
  "seg",
  "tablefunc",
  "bloom",
  "dict_int",
  "dict_xsyn",
  "lo",
  "tcn",
  "tsm_system_rows",
  "tsm_system_time",
  "spi",
];

/** A file of an extension: its path under PGlite's install prefix, and its bytes. */
export interface ExtensionFile {
  path: string;
  data: Uint8Array;
}

/** A field of a tar header: text up to its first NUL. */
function field(header: Uint8Array, offset: number, length: number): string {
  const bytes = header.subarray(offset, offset + length);
  const end = bytes.indexOf(0);
  return new TextDecoder().decode(end < 0 ? bytes : bytes.subarray(0, end));
}

/** The regular files of a tar archive (ustar; what npm packages ship). */
export function untar(tar: Uint8Array): ExtensionFile[] {
  const files: ExtensionFile[] = [];
  for (let at = 0; at + 512 <= tar.length;) {
    const header = tar.subarray(at, at + 512);
    if (header.every((b) => b === 0)) break;
    const name = field(header, 0, 100);
    const prefix = field(header, 345, 155);
    const size = parseInt(field(header, 124, 12).trim() || "0", 8);
    const type = String.fromCharCode(header[156]!);
    const path = prefix ? `${prefix}/${name}` : name;
    at += 512;
    if ((type === "0" || type === "\0") && !path.split("/").some((p) => p === ".." || p.startsWith("."))) {
      files.push({ path, data: tar.slice(at, at + size) });
    }
    at += Math.ceil(size / 512) * 512;
  }
  return files;
}

/** The files of a gzipped tar archive at `url`. */
async function unpack(url: URL): Promise<ExtensionFile[]> {
  const gz = await Deno.readFile(url);
  return untar(
    await new Response(new Blob([gz]).stream().pipeThrough(new DecompressionStream("gzip"))).bytes(),
  );
}

/**
 * Moves the files' bytes into one ArrayBuffer: posted to an engine's thread, it is copied once (4.5 MB), not
 * once a file.
 */
function packed(files: ExtensionFile[]): ExtensionFile[] {
  const buffer = new ArrayBuffer(files.reduce((n, f) => n + f.data.byteLength, 0));
  let at = 0;
  return files.map(({ path, data }) => {
    const view = new Uint8Array(buffer, at, data.byteLength);
    view.set(data);
    at += data.byteLength;
    return { path, data: view };
  });
}

let read: Promise<ExtensionFile[] | undefined> | undefined;

/**
 * The extensions' files; undefined when the packages are not on disk here (each engine then loads pgvector
 * itself, and no contrib module is offered).
 */
export function extensionFiles(): Promise<ExtensionFile[] | undefined> {
  read ??= (async () => {
    const pglite = new URL(import.meta.resolve("@electric-sql/pglite"));
    const pgvector = new URL(import.meta.resolve("@electric-sql/pglite-pgvector"));
    if (pglite.protocol !== "file:" || pgvector.protocol !== "file:") return undefined;
    try {
      const archives = await Promise.all([
        unpack(new URL("./vector.tar.gz", pgvector)),
        ...CONTRIB.map((name) => unpack(new URL(`./${name}.tar.gz`, pglite))),
      ]);
      const files = archives.flat();
      return files.some((f) => f.path.endsWith("/vector.so")) ? packed(files) : undefined;
    } catch (err) {
      // Not kept: the next engine to open tries again.
      read = undefined;
      console.error(`the extensions' archives could not be read: ${(err as Error).message}`);
      return undefined;
    }
  })();
  return read;
}
