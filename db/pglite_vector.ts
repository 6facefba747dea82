/**
 * pgvector's files for the embedded engines, read once per process. PGlite's own loading of the extension
 * unpacks its archive and compiles its library at every engine start (about a fifth of the CPU time of an open,
 * measured); here the archive is unpacked once, each engine writes the files into its file system before
 * PostgreSQL starts, and the library is compiled only when a statement first uses it.
 */

/** A file of the extension: its path under PGlite's install prefix, and its bytes. */
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

let read: Promise<ExtensionFile[] | undefined> | undefined;

/** pgvector's files; undefined when its package is not on disk here (each engine then loads it itself). */
export function vectorFiles(): Promise<ExtensionFile[] | undefined> {
  read ??= (async () => {
    const entry = new URL(import.meta.resolve("@electric-sql/pglite-pgvector"));
    if (entry.protocol !== "file:") return undefined;
    try {
      const gz = await Deno.readFile(new URL("./vector.tar.gz", entry));
      const tar = await new Response(new Blob([gz]).stream().pipeThrough(new DecompressionStream("gzip")))
        .bytes();
      const files = untar(tar);
      return files.some((f) => f.path.endsWith("/vector.so")) ? files : undefined;
    } catch {
      return undefined;
    }
  })();
  return read;
}
