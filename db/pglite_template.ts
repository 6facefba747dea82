/**
 * Templates of new embedded databases. Making one runs initdb and the platform's migrations in a child process
 * (db/pglite_init.ts): seconds of work on a small machine, and the same work each time. The first database of a
 * kind is made once more as a template, in a directory of templates, and every new one is a copy of that
 * template: a copy of some 40 MB of files, with no engine started in any process.
 *
 * A template is named after everything its files depend on (the migrations' text, the server settings, the
 * engine's and the extensions' packages, the rest tag): another version of the platform makes and uses its own,
 * and removes the other templates of the same kind it finds. A template is never opened by an engine, so its
 * files, and its rest file, stay exactly those the child left.
 */
import { cp } from "node:fs/promises";
import { join } from "node:path";
import type { Migration } from "./migrate.ts";
import { isPgliteDir } from "./pglite_init.ts";
import { sha256Hex } from "../lib/crypto.ts";

/** What a template is made of: it is named after all of it. */
export interface TemplateRecipe {
  /** What the database is for ("control", "project"): one template of each kind is kept. */
  kind: string;
  migrations: Migration[];
  /** Everything else the files depend on: server settings, search path, rest tag. */
  inputs: Record<string, unknown>;
  /**
   * Makes the database in `dir` (a child process: db/pglite_init.ts); for a template, its rest file is asked
   * for at `restFile`, even when the platform's idle databases never rest (a later start may let them).
   */
  make: (dir: string, restFile?: string) => Promise<void>;
}

/** Templates being made by this process, by directory: later callers wait for the same one. */
const making = new Map<string, Promise<void>>();

/** Leftovers of a process that ended while it made a template are removed after this long. */
const STALE_MS = 60 * 60_000;

/** The directory of the template `recipe` names, in `templates`. */
export async function templateDir(templates: string, recipe: TemplateRecipe): Promise<string> {
  const engine = ["@electric-sql/pglite", "@electric-sql/pglite-pgvector"].map((name) =>
    import.meta.resolve(name)
  );
  const named = JSON.stringify({ engine, migrations: recipe.migrations, inputs: recipe.inputs });
  return join(templates, `${recipe.kind}-${(await sha256Hex(named)).slice(0, 16)}`);
}

/**
 * Makes `dir` a copy of the template of `recipe` (making the template first when there is none), and, given
 * `restFile`, writes there the template's rest file: the copy's state is the template's, so the rest file holds
 * for it. The copy is written beside `dir` and renamed into place: `dir` is whole or absent, whenever the
 * process ends. `dir` must not hold a database yet.
 */
export async function copyTemplate(
  templates: string,
  recipe: TemplateRecipe,
  dir: string,
  restFile?: string,
): Promise<void> {
  const template = await templateDir(templates, recipe);
  await ensureTemplate(templates, template, recipe);
  const copy = `${dir}.copy-${crypto.randomUUID().slice(0, 8)}`;
  try {
    await cp(template, copy, { recursive: true, errorOnExist: true, force: false });
    await Deno.rename(copy, dir);
  } catch (err) {
    await Deno.remove(copy, { recursive: true }).catch(() => {});
    throw err;
  }
  if (restFile) {
    await Deno.copyFile(`${template}.rest`, `${restFile}.next`).then(
      () => Deno.rename(`${restFile}.next`, restFile),
      (err) => {
        if (!(err instanceof Deno.errors.NotFound)) throw err; // no rest file: the copy opens at its first check
      },
    );
  }
}

/**
 * Removes the copies in `dir` that a process ended before renaming into place (its embedded databases' folder,
 * which only one process uses).
 */
export async function removeUnfinishedCopies(dir: string): Promise<void> {
  for (const entry of await listDir(dir)) {
    if (/\.copy-[0-9a-f]{8}$/.test(entry.name)) await Deno.remove(join(dir, entry.name), { recursive: true });
  }
}

function ensureTemplate(templates: string, template: string, recipe: TemplateRecipe): Promise<void> {
  const pending = making.get(template);
  if (pending) return pending;
  const made = (async () => {
    if (await isPgliteDir(template)) return;
    await Deno.mkdir(templates, { recursive: true, mode: 0o700 }); // only the platform's user reads or writes it
    const temp = `${template}.tmp-${crypto.randomUUID().slice(0, 8)}`;
    try {
      await recipe.make(temp, `${temp}.rest`);
      await Deno.rename(temp, template);
    } catch (err) {
      await Deno.remove(temp, { recursive: true }).catch(() => {});
      await Deno.remove(`${temp}.rest`).catch(() => {});
      // Another process sharing the templates made the same one meanwhile: it is as good.
      if (await isPgliteDir(template)) return;
      throw err;
    }
    await Deno.rename(`${temp}.rest`, `${template}.rest`).catch(() => {});
    await removeOtherTemplates(templates, template, recipe.kind);
  })();
  making.set(template, made);
  const forget = () => making.delete(template);
  made.then(forget, forget);
  return made;
}

/**
 * Removes the templates of `kind` other than `keep` (another version's), and leftovers of templates whose
 * making a process did not finish, once they are old enough not to be another process's work in progress.
 */
async function removeOtherTemplates(templates: string, keep: string, kind: string): Promise<void> {
  const now = Date.now();
  for (const entry of await listDir(templates)) {
    const path = join(templates, entry.name);
    if (path === keep || path === `${keep}.rest` || !entry.name.startsWith(`${kind}-`)) continue;
    const unfinished = entry.name.includes(".tmp-");
    if (unfinished) {
      const { mtime } = await Deno.stat(path).catch(() => ({ mtime: null }));
      if (!mtime || now - mtime.getTime() < STALE_MS) continue;
    }
    await Deno.remove(path, { recursive: true }).catch(() => {});
  }
}

async function listDir(dir: string): Promise<Deno.DirEntry[]> {
  return await Array.fromAsync(Deno.readDir(dir)).catch((err) => {
    if (err instanceof Deno.errors.NotFound) return [];
    throw err;
  });
}
