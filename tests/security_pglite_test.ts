// On the embedded default every project is its own PGlite instance, and PGlite has only a superuser session:
// tenant SQL can always `reset role` there. The boundary is the instance: a project's SQL reaches no other
// project, no control data and no host file, and a project that wrecks its own internals breaks only itself.
import { assert, assertEquals } from "./assert.ts";
import { type Json, json, serverUrl, startPlatform, type TestPlatform } from "./harness.ts";
import { waitUntil } from "./jobs_fixtures.ts";
import { openSource, projectDir } from "../db/move_source.ts";
import { pgliteHealth } from "../db/pglite_health.ts";
import { join } from "node:path";

async function sqlAs(p: TestPlatform, key: string, query: string, host?: string) {
  const url = host ? `http://${host}/v1/sql` : "/v1/sql";
  return await json(await p.fetch(url, { method: "POST", headers: { apikey: key }, json: { query } }));
}

const exists = (path: string) => Deno.lstat(path).then(() => true, () => false);

/**
 * A WebAssembly side module (a dylink.0 section, and an EM_JS string `FS.writeFile('/tmp/pwned','x')`), as a
 * project's SQL could write one and LOAD it (built with wabt from a few lines of WAT).
 */
const EVIL_LIBRARY =
  "0061736d0100000000100864796c696e6b2e300105800200000002240203656e76066d656d6f727902000003656e760d" +
  "5f5f6d656d6f72795f62617365037f000606017f0041000b0710010c5f5f656d5f6a735f5f70776e03010b2d01002300" +
  "0b2728293c3a3a3e303b46532e777269746546696c6528272f746d702f70776e6564272c2778272900";

// PostgreSQL gives tenant SQL no superuser at all: security_tenant_sql_test attacks that boundary.
if (!serverUrl) {
  Deno.test({
    name: "PGlite: a project's SQL, even as superuser, stays inside its own instance",
    async fn(t) {
      const p = await startPlatform();
      const dataDir = p.sandbox.env.DATA_DIR!;
      const controlDir = join(dataDir, "pglite", "control");
      const otherDir = join(dataDir, "pglite", "projects", "other");
      const ownDir = join(dataDir, "pglite", "projects", "default");
      const marker = `pwned_${crypto.randomUUID().slice(0, 8)}`;
      try {
        const admin = { authorization: `Bearer ${await p.adminToken()}` };
        const created = await json(
          await p.fetch("/v1/admin/projects", { method: "POST", headers: admin, json: { ref: "other" } }),
        );
        assertEquals(created.status, 201, JSON.stringify(created.body));
        const other: Json = created.body.data;
        const seeded = await sqlAs(
          p,
          other.secret_key,
          "create table public.vault (secret text); insert into public.vault values ('other-project-secret');" +
            "grant select on public.vault to anon",
          "other.localhost",
        );
        assertEquals(seeded.status, 200, JSON.stringify(seeded.body));
        const run = (query: string) => sqlAs(p, p.secretKey, query);

        await t.step("the project's SQL is a superuser inside its own instance, as documented", async () => {
          const { body } = await run(
            "reset role; select current_user as who, usesuper from pg_user where usename = current_user",
          );
          assertEquals(body.data, [{ who: "postgres", usesuper: true }]);
        });

        await t.step(
          "what the project's SQL sets on the shared session ends with its transaction",
          async () => {
            const before = await run("select current_setting('search_path') as path, current_user as who");
            const set = await run(
              "set search_path to pg_temp, public; select pg_catalog.set_config('statement_timeout', '1', false); " +
                "set session authorization anon; select 1",
            );
            assertEquals(set.status, 200, JSON.stringify(set.body));
            const after = await run("select current_setting('search_path') as path, current_user as who");
            assertEquals(after.body.data, before.body.data);
            assertEquals(before.body.data[0].who, "project_owner");
            const timeout = await run("select current_setting('statement_timeout') as t");
            assert(timeout.body.data[0].t !== "1ms", JSON.stringify(timeout.body));
            const rest = await p.fetch("/rest/v1/rpc/now", { headers: { apikey: p.publicKey } });
            assert(rest.status !== 500, await rest.text());
          },
        );

        await t.step(
          "nor does it outlive a `commit` in the SQL followed by an error, nor a failed migration",
          async () => {
            const before = await run(
              "select current_user as who, current_setting('session_replication_role') as replication, " +
                "coalesce(current_setting('my.leak', true), '') as leak",
            );
            const escapes = [
              "set my.leak = 'leak'; commit; select 1/0",
              "reset role; set session_replication_role = replica; commit; select 1/0",
              "reset role; create temp table leak_t (x int); declare leak_c cursor with hold for select 1; " +
              "select pg_catalog.pg_advisory_lock(42); commit; select 1/0",
              "set session authorization anon; commit; select 1/0",
            ];
            for (const query of escapes) {
              const failed = await run(query);
              assertEquals(failed.status, 400, `${query}: ${JSON.stringify(failed.body)}`);
            }
            const after = await run(
              "select current_user as who, current_setting('session_replication_role') as replication, " +
                "coalesce(current_setting('my.leak', true), '') as leak",
            );
            assertEquals(after.body.data, before.body.data);
            const held = await run(
              "reset role; select (select count(*) from pg_catalog.pg_cursors)::int as cursors, " +
                "(select count(*) from pg_catalog.pg_locks where locktype = 'advisory')::int as locks, " +
                "pg_catalog.to_regclass('pg_temp.leak_t') is null as no_temp",
            );
            assertEquals(held.body.data, [{ cursors: 0, locks: 0, no_temp: true }]);
            // A migration's text goes through the same door (`deno task migrate`, the console's SQL editor).
            const signup = await p.fetch("/auth/v1/signup", {
              method: "POST",
              headers: { apikey: p.publicKey },
              json: {
                email: `after-escape-${crypto.randomUUID().slice(0, 8)}@example.com`,
                password: "a-long-pass-99",
              },
            });
            assert(signup.status < 500, await signup.text());
          },
        );

        await t.step("host files are out of reach: no read, no write", async () => {
          const secretFile = join(dataDir, ".secret");
          const reads = [
            "/etc/passwd",
            join(controlDir, "PG_VERSION"),
            join(otherDir, "PG_VERSION"),
            secretFile,
            "/pglite/data/../../control/PG_VERSION",
            "../other/PG_VERSION",
          ];
          for (const path of reads) {
            const { status, body } = await run(
              `reset role; select pg_catalog.pg_read_file('${path}') as content`,
            );
            assertEquals(status, 400, `${path} was read: ${JSON.stringify(body)}`);
          }
          // The instance's file system holds its own directory and the engine's files only.
          const { body: root } = await run("reset role; select pg_catalog.pg_ls_dir('/') as name");
          const names = (root.data as { name: string }[]).map((r) => r.name).sort();
          assert(
            !names.includes("etc") && !names.includes("usr") && !names.includes("work"),
            names.join(","),
          );
          for (
            const [what, query] of [
              ["copy to a host path", `reset role; copy (select 'x') to '/tmp/${marker}_copy'`],
              ["copy into the data dir", `reset role; copy (select 'x') to '${join(dataDir, marker)}'`],
              [
                "lo_export",
                `reset role; select lo_export(lo_from_bytea(0, 'x'::bytea), '/tmp/${marker}_lo')`,
              ],
              ["a tablespace", `reset role; create tablespace ${marker} location '/tmp'`],
            ]
          ) {
            await run(query!); // whatever it answers, nothing may appear on the host
            assertEquals(
              [
                await exists(`/tmp/${marker}_copy`),
                await exists(join(dataDir, marker)),
                await exists(`/tmp/${marker}_lo`),
              ],
              [false, false, false],
              what,
            );
          }
          // A tablespace is a link in the data directory; none reached the host's.
          const links: string[] = [];
          for await (const entry of Deno.readDir(join(ownDir, "pg_tblspc"))) links.push(entry.name);
          assertEquals(links, []);
        });

        await t.step(
          "a library the project's SQL writes is never loaded: none of its code runs",
          async () => {
            // Superuser SQL may LOAD any file; the engine's loader would run the JavaScript a WebAssembly side module
            // carries (EM_JS) in the engine's thread. This one's would write /tmp/pwned.
            const written = await run(
              `reset role; select pg_catalog.lo_from_bytea(4243, '\\x${EVIL_LIBRARY}'::bytea); ` +
                "select pg_catalog.lo_export(4243, '/tmp/evil.so'); " +
                "select pg_catalog.lo_export(4243, '/pglite/lib/postgresql/citext.so')",
            );
            assertEquals(written.status, 200, JSON.stringify(written.body));
            for (
              const query of [
                "reset role; load '/tmp/evil.so'",
                "reset role; create function public.evil() returns int language c as '/tmp/evil.so', 'f'",
                // Its own copy of a shipped library, overwritten: refused too.
                "create extension citext",
              ]
            ) {
              const { status, body } = await run(query);
              assertEquals(status, 400, `${query}: ${JSON.stringify(body)}`);
              // The first load is refused by the engine's loader; a second finds the failed one's name taken and
              // an empty library ("missing magic block"): neither compiles the file.
              assert(
                /loads only the libraries it ships|missing magic block/.test(body.error.message),
                JSON.stringify(body),
              );
            }
            const ran = await run("reset role; select pg_catalog.pg_read_file('/tmp/pwned') as f");
            assertEquals(ran.status, 400, JSON.stringify(ran.body));
            // Its files are its own: the other project loads the libraries as shipped.
            const used = await sqlAs(
              p,
              other.secret_key,
              "create extension if not exists pgcrypto; create extension if not exists citext; " +
                "select encode(digest('a', 'sha1'), 'hex') as d, 'A'::citext = 'a' as ci",
              "other.localhost",
            );
            assertEquals(used.body.data, [{ d: "86f7e437faa5a7fce15d1ddcb9eaeaea377667b8", ci: true }]);
          },
        );

        await t.step("roles made there exist only there", async () => {
          const made = await run(`reset role; create role ${marker} superuser login password 'x'`);
          assertEquals(made.status, 200, JSON.stringify(made.body));
          const control = await p.platform.dbs.control.query("select 1 from pg_roles where rolname = $1", [
            marker,
          ]);
          assertEquals(control, []);
          const elsewhere = await p.internalSql(
            "select 1 from pg_roles where rolname = $1",
            [marker],
            "other",
          );
          assertEquals(elsewhere, []);
        });

        await t.step("the other project's rows are not there to read", async () => {
          const { body } = await run(
            "reset role; select count(*)::int as n from pg_catalog.pg_class where relname = 'vault'",
          );
          assertEquals(body.data, [{ n: 0 }]);
        });

        await t.step(
          "rights are not read from the project's database: a function's stored limits are bounded",
          async () => {
            const deployed = await p.fetch("/v1/functions", {
              method: "POST",
              headers: { apikey: p.secretKey },
              json: { name: "bounded", runtime: "deno", code: "export default () => new Response('ok')" },
            });
            assertEquals(deployed.status, 201, await deployed.text());
            const widened = await run(
              `reset role; update platform.functions set permissions =
             '{"memory_mb": 100000, "timeout_secs": 99999, "cpu_ms": 99999999, "allow_net": ["*"]}'
           where name = 'bounded'`,
            );
            assertEquals(widened.status, 200, JSON.stringify(widened.body));
            const { body } = await json(
              await p.fetch("/v1/functions/bounded", { headers: { apikey: p.secretKey } }),
            );
            assertEquals(body.data.permissions, {
              allow_net: ["*"],
              memory_mb: 128,
              timeout_secs: 30,
              cpu_ms: 2000,
            });
          },
        );

        await t.step("wrecking its own internals breaks only that project", async () => {
          const wrecked = await run(
            "reset role; drop schema platform cascade; drop schema auth cascade; drop schema realtime cascade",
          );
          assertEquals(wrecked.status, 200, JSON.stringify(wrecked.body));
          // The default project now fails, in the envelope.
          const broken = await p.fetch("/v1/functions", { headers: { apikey: p.secretKey } });
          assert(broken.status >= 400, `status ${broken.status}`);
          const envelope = await broken.json();
          assert(typeof envelope.error?.code === "string", JSON.stringify(envelope));
          // The platform and the other project go on.
          assertEquals((await p.fetch("/v1/health")).status, 200);
          const read = await json(
            await p.fetch("http://other.localhost/rest/v1/vault?select=secret", {
              headers: { apikey: other.public_key },
            }),
          );
          assertEquals(read, { status: 200, body: [{ secret: "other-project-secret" }] });
          const projects = await json(await p.fetch("/v1/admin/projects", { headers: admin }));
          assertEquals(projects.status, 200);
          const signup = await json(
            await p.fetch("http://other.localhost/v1/auth/signup", {
              method: "POST",
              headers: { apikey: other.public_key },
              json: { email: "still@example.com", password: "a-long-unusual-password-9" },
            }),
          );
          assertEquals(signup.status, 200, JSON.stringify(signup.body));
        });

        await t.step("a program is not run on the host, and breaks at most its own project", async () => {
          // PGlite has no shell: COPY … PROGRAM runs nothing, but it leaves that instance unable to answer rows.
          await run(`reset role; copy (select 1) to program 'touch /tmp/${marker}_program'`);
          assertEquals(await exists(`/tmp/${marker}_program`), false);
          assertEquals((await p.fetch("/v1/health")).status, 200);
          const read = await json(
            await p.fetch("http://other.localhost/rest/v1/vault?select=secret", {
              headers: { apikey: other.public_key },
            }),
          );
          assertEquals(read, { status: 200, body: [{ secret: "other-project-secret" }] });
        });
      } finally {
        await p.close();
      }
    },
  });

  Deno.test({
    name:
      "PGlite: a library the project's SQL names in its data directory's settings is not loaded at a reopen",
    async fn() {
      // PostgreSQL reads postgresql.auto.conf when the engine starts (every reopen after an idle close): a
      // shared_preload_libraries there would be loaded before any statement runs.
      const p = await startPlatform({ PGLITE_IDLE_SECS: "1" });
      try {
        const run = (query: string) => sqlAs(p, p.secretKey, query);
        const written = await run(
          `reset role; select pg_catalog.lo_from_bytea(4243, '\\x${EVIL_LIBRARY}'::bytea); ` +
            "select pg_catalog.lo_export(4243, pg_catalog.current_setting('data_directory') || '/evil.so'); " +
            "select pg_catalog.lo_from_bytea(4244, pg_catalog.convert_to(" +
            "'shared_preload_libraries = ''/pglite/data/evil.so''' || chr(10) || " +
            "'session_preload_libraries = ''/pglite/data/evil.so''' || chr(10), 'UTF8')); " +
            "select pg_catalog.lo_export(4244, pg_catalog.current_setting('data_directory') || '/postgresql.auto.conf')",
        );
        assertEquals(written.status, 200, JSON.stringify(written.body));
        await waitUntil(
          "the project's database to rest",
          () => pgliteHealth().instances.find((i) => i.name === "project default")?.open === false,
        );
        const reopened = await run("reset role; select pg_catalog.pg_read_file('/tmp/pwned') as f");
        assertEquals(reopened.status, 400, JSON.stringify(reopened.body));
        assert(/No such file/.test(reopened.body.error.message), JSON.stringify(reopened.body));
        const served = await run("select 1 as one");
        assertEquals(served.body.data, [{ one: 1 }]);
      } finally {
        await p.close();
      }
    },
  });

  Deno.test({
    name: "PGlite: a library the project's catalog names is not loaded by the move to PostgreSQL either",
    async fn() {
      // A superuser can point a catalog row at a file it wrote (a C function behind a built-in operator); the
      // move opens every project's directory in its own process, which holds every project's data.
      const p = await startPlatform();
      const dir = projectDir(p.sandbox.env.DATA_DIR!, "default");
      let closed = false;
      try {
        const planted = await sqlAs(
          p,
          p.secretKey,
          `reset role; select pg_catalog.lo_from_bytea(4243, '\\x${EVIL_LIBRARY}'::bytea); ` +
            "select pg_catalog.lo_export(4243, '/pglite/data/evil.so'); " +
            "create function public.evilfn(name, text) returns boolean language internal strict as 'namenlike'; " +
            "update pg_catalog.pg_proc set prolang = 13, probin = '/pglite/data/evil.so', prosrc = 'x' " +
            "where oid = 'public.evilfn(name,text)'::pg_catalog.regprocedure; " +
            "update pg_catalog.pg_operator set oprcode = 'public.evilfn'::pg_catalog.regproc " +
            "where oid = '!~~(name,text)'::pg_catalog.regoperator",
        );
        assertEquals(planted.status, 200, JSON.stringify(planted.body));
        await p.close({ keepSandbox: true });
        closed = true;
        const source = await openSource(dir);
        try {
          let refused: unknown;
          try {
            await source.query("select 'a'::name not like 'b' as x");
          } catch (err) {
            refused = err;
          }
          assert(refused instanceof Error, "the planted library was loaded");
          const ran = await source.query("select pg_catalog.pg_read_file('/tmp/pwned') as f").catch((err) =>
            err
          );
          assert(ran instanceof Error && /No such file/.test(ran.message), String(ran));
        } finally {
          await source.close();
        }
      } finally {
        if (closed) await p.sandbox.destroy();
        else await p.close();
      }
    },
  });
}
