// Every migrated database, control and project, on PGlite and PostgreSQL: nothing that runs with its owner's
// rights belongs to a superuser, and each such function resolves names through pg_catalog first.
import { assertEquals } from "./assert.ts";
import { makeSandbox, openSandboxDatabases } from "./harness.ts";
import type { Queryable } from "../db/driver.ts";

/** Functions that run as their definer, with their owner and settings. */
const DEFINERS = `
select p.oid::regprocedure::text as name, r.rolname as owner, r.rolsuper as super,
       coalesce(p.proconfig, '{}') as config
  from pg_catalog.pg_proc p join pg_catalog.pg_roles r on r.oid = p.proowner
 where p.prosecdef
 order by 1`;

/** Views outside the system catalogs owned by a superuser (a view reads its tables with its owner's rights). */
const SUPERUSER_VIEWS = `
select c.oid::regclass::text as name
  from pg_catalog.pg_class c
  join pg_catalog.pg_namespace n on n.oid = c.relnamespace
  join pg_catalog.pg_roles r on r.oid = c.relowner
 where c.relkind in ('v', 'm') and r.rolsuper and n.nspname not in ('pg_catalog', 'information_schema')`;

/** Event triggers, with whether their function runs as its definer and its settings. */
const EVENT_TRIGGERS = `
select e.evtname as name, p.prosecdef as definer, coalesce(p.proconfig, '{}') as config
  from pg_catalog.pg_event_trigger e join pg_catalog.pg_proc p on p.oid = e.evtfoid`;

const PINNED = "search_path=pg_catalog, pg_temp";

async function scan(db: Queryable): Promise<{ definers: string[]; problems: string[] }> {
  const problems: string[] = [];
  const definers = await db.query<{ name: string; owner: string; super: boolean; config: string[] }>(
    DEFINERS,
  );
  for (const d of definers) {
    if (d.super) problems.push(`${d.name} is SECURITY DEFINER and owned by superuser ${d.owner}`);
    if (!d.config.includes(PINNED)) problems.push(`${d.name} does not pin ${PINNED}: ${d.config}`);
  }
  for (const v of await db.query<{ name: string }>(SUPERUSER_VIEWS)) {
    problems.push(`view ${v.name} is owned by a superuser`);
  }
  for (const e of await db.query<{ name: string; definer: boolean; config: string[] }>(EVENT_TRIGGERS)) {
    if (e.definer) problems.push(`event trigger ${e.name} runs as its definer`);
    if (!e.config.includes(PINNED)) problems.push(`event trigger ${e.name} does not pin ${PINNED}`);
  }
  return { definers: definers.map((d) => `${d.name} by ${d.owner}`), problems };
}

Deno.test("no SECURITY DEFINER object in any migrated database is owned by a superuser", async () => {
  const sandbox = await makeSandbox();
  const dbs = await openSandboxDatabases(sandbox);
  try {
    // A project as the platform leaves it: migrated, with its owner and tenant logins set up.
    await dbs.createProject("default");
    const project = await dbs.project("default");
    await dbs.ownerSession("default");
    await dbs.tenant("default");
    const control = await scan(dbs.control);
    assertEquals(control.problems, []);
    const scanned = await scan(project);
    assertEquals(scanned.problems, []);
    // The definers that exist are realtime's, owned by its own role: the scan saw them.
    assertEquals(scanned.definers, [
      "realtime.capture() by platform_realtime",
      "realtime.publish(text,text) by platform_realtime",
      "realtime.publish_message() by platform_realtime",
      "realtime.register(regclass) by platform_realtime",
    ]);
    const [role] = await project.query<{ rolsuper: boolean; rolcanlogin: boolean }>(
      "select rolsuper, rolcanlogin from pg_catalog.pg_roles where rolname = 'platform_realtime'",
    );
    assertEquals(role, { rolsuper: false, rolcanlogin: false });
  } finally {
    await dbs.close();
    await sandbox.destroy();
  }
});
