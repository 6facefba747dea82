import { join } from "node:path";

/** One unit the cache drops whole: a package version's directory, or a downloaded remote module. */
interface Entry {
  path: string;
  usedAt: number;
}

// The bundler itself (Deno fetches it as an npm package): every build uses it, none names it.
const KEEP = /^@esbuild\//;

/**
 * PackageCache bounds the shared package cache (Deno's cache directory, which the bundler fills): each package
 * version used by a build is marked as used now (its directory's mtime), and past the size limit the least
 * recently used versions and remote modules are deleted; a later build downloads them again. A version's
 * files never change once unpacked, so each one's size is measured once.
 */
export class PackageCache {
  private readonly sizes = new Map<string, number>();

  constructor(private readonly denoDir: string, private readonly maxBytes: number) {}

  /** Marks package versions (`name@version`, as deno.lock lists them) as used now. */
  async touch(ids: string[]): Promise<void> {
    const now = new Date();
    for (const host of await dirs(join(this.denoDir, "npm"))) {
      for (const id of ids) {
        const at = id.lastIndexOf("@");
        if (at <= 0) continue;
        const name = id.slice(0, at);
        const version = id.slice(at + 1).split("_")[0]!; // peer-dependency suffixes
        await Deno.utime(join(this.denoDir, "npm", host, name, version), now, now).catch(() => {});
      }
    }
  }

  /** Deletes the least recently used entries until the cache fits its limit. Returns the bytes it holds. */
  async prune(): Promise<number> {
    const entries = await this.entries();
    let total = 0;
    for (const e of entries) total += await this.sizeOf(e.path);
    entries.sort((a, b) => a.usedAt - b.usedAt);
    for (const e of entries) {
      if (total <= this.maxBytes) break;
      await Deno.remove(e.path, { recursive: true }).catch(() => {});
      total -= this.sizes.get(e.path) ?? 0;
      this.sizes.delete(e.path);
    }
    return total;
  }

  private async entries(): Promise<Entry[]> {
    const out: Entry[] = [];
    const add = async (path: string) => {
      const info = await Deno.stat(path).catch(() => null);
      if (info) out.push({ path, usedAt: info.mtime?.getTime() ?? 0 });
    };
    const npm = join(this.denoDir, "npm");
    for (const host of await dirs(npm)) {
      for (const top of await dirs(join(npm, host))) {
        const names = top.startsWith("@")
          ? (await dirs(join(npm, host, top))).map((n) => `${top}/${n}`)
          : [top];
        for (const name of names) {
          if (KEEP.test(name)) continue;
          for (const version of await dirs(join(npm, host, name))) await add(join(npm, host, name, version));
        }
      }
    }
    for await (const file of files(join(this.denoDir, "remote"))) await add(file);
    return out;
  }

  private async sizeOf(path: string): Promise<number> {
    let size = this.sizes.get(path);
    if (size === undefined) {
      size = 0;
      const info = await Deno.stat(path).catch(() => null);
      if (info?.isFile) size = info.size;
      else for await (const file of files(path)) size += (await Deno.stat(file).catch(() => null))?.size ?? 0;
      this.sizes.set(path, size);
    }
    return size;
  }
}

/** The names of the directories in `dir` (none when it does not exist). */
async function dirs(dir: string): Promise<string[]> {
  const out: string[] = [];
  try {
    for await (const e of Deno.readDir(dir)) if (e.isDirectory) out.push(e.name);
  } catch { /* absent */ }
  return out;
}

/** Every file under `dir`, recursively. */
async function* files(dir: string): AsyncGenerator<string> {
  let list: Deno.DirEntry[] = [];
  try {
    list = await Array.fromAsync(Deno.readDir(dir));
  } catch { /* absent */ }
  for (const e of list) {
    const path = join(dir, e.name);
    if (e.isDirectory) yield* files(path);
    else if (e.isFile) yield path;
  }
}
