import { assertEquals } from "../../tests/assert.ts";
import { makeSandbox, openSandboxDatabases } from "../../tests/harness.ts";
import type { Change } from "./types.ts";
import { channelAccess, type Viewer, visibleTo } from "./visibility.ts";

const REF = "default";
const ALICE = "00000000-0000-4000-8000-00000000000a";
const BOB = "00000000-0000-4000-8000-00000000000b";

const insertOf = (schema: string, table: string, record: Record<string, unknown>): Change => ({
  schema,
  table,
  type: "INSERT",
  commit_timestamp: new Date().toISOString(),
  record,
  old_record: null,
  primary_key: ["id"],
});
const user = (sub: string, extra: Record<string, unknown> = {}): Viewer => ({
  role: "authenticated",
  claims: { role: "authenticated", sub, ...extra },
});

Deno.test("realtime visibility: one planned check per change, run per group of subscribers", async (t) => {
  const sandbox = await makeSandbox();
  const dbs = await openSandboxDatabases(sandbox);
  try {
    await dbs.createProject(REF);
    const db = await dbs.project(REF);
    await db.exec(`
      create table public.notes (id int primary key, author uuid, body text);
      alter table public.notes enable row level security;
      create policy own on public.notes for select using (author = auth.uid());
      create table public.ranked (id int primary key);
      alter table public.ranked enable row level security;
      create policy ranked on public.ranked for select to authenticated
        using ((auth.jwt() ->> 'rank')::int > 0);
      create schema hidden;
      create table hidden.items (id int primary key);
      grant select on hidden.items to authenticated;`);

    await t.step("each group sees what its role and claims may read", async () => {
      const change = insertOf("public", "notes", { id: 1, author: ALICE, body: "hi" });
      const viewers: Viewer[] = [user(ALICE), user(BOB), { role: "anon" }, { role: "service_role" }];
      assertEquals(await visibleTo(db, change, viewers), [true, false, false, true]);
      // 100 groups, every other one the author: the one plan serves them all.
      const many = Array.from({ length: 100 }, (_, i) => user(i % 2 ? BOB : ALICE, { n: i }));
      assertEquals(await visibleTo(db, change, many), many.map((_, i) => i % 2 === 0));
    });

    await t.step("a check that fails for one group hides the change from that group only", async () => {
      const change = insertOf("public", "ranked", { id: 1 });
      const viewers = [user(ALICE, { rank: 1 }), user(BOB, { rank: "not a number" }), user(BOB, { rank: 2 })];
      assertEquals(await visibleTo(db, change, viewers), [true, false, true]);
    });

    await t.step("SELECT on a table in a schema the role may not use shows nothing", async () => {
      const change = insertOf("hidden", "items", { id: 1 });
      assertEquals(await visibleTo(db, change, [user(ALICE)]), [false]);
    });

    await t.step("a statement left prepared under the check's name is replaced", async () => {
      const change = insertOf("public", "notes", { id: 2, author: BOB, body: "x" });
      const answer = await db.transaction(async (tx) => {
        // On the same connection as the check: as an interrupted call would have left it.
        await tx.exec("prepare realtime_visible_check(text) as select true");
        return await visibleTo(tx, change, [user(ALICE), user(BOB)]);
      });
      assertEquals(answer, [false, true]);
    });

    await t.step("a policy whose function drops the prepared check breaks no later change", async () => {
      await db.exec(`
        create function public.drops_the_check() returns boolean language plpgsql as $$
        begin
          execute 'deallocate realtime_visible_check';
          return true;
        end $$;
        create table public.rude (id int primary key);
        alter table public.rude enable row level security;
        create policy rude on public.rude for select to authenticated using (public.drops_the_check());`);
      const answer = await visibleTo(db, insertOf("public", "rude", { id: 1 }), [user(ALICE), user(BOB)]);
      // Once the statement is gone, the groups after are told nothing.
      assertEquals(answer[1], false);
      const change = insertOf("public", "notes", { id: 3, author: ALICE, body: "after" });
      assertEquals(await visibleTo(db, change, [user(ALICE), user(BOB)]), [true, false]);
    });

    await t.step("a check that cannot be planned lets nobody see the change", async () => {
      const [row] = await db.query<{ visible: boolean[] }>(
        "select realtime.visible_to($1::text[], $2::text[], $3, $4) as visible",
        [["authenticated", "service_role"], ["{}", "{}"], "select no_such_column from no_such_table", "{}"],
      );
      assertEquals(row?.visible, [false, false]);
    });

    await t.step(
      "private topics: realtime.messages' SELECT and INSERT policies, per extension and topic",
      async () => {
        // Written by the project's owner, as an app would (the owner owns realtime.messages).
        const owner = await dbs.ownerSession(REF);
        await owner.db.transaction(async (tx) => {
          await tx.exec(`set local role ${owner.role};
          create policy hear on realtime.messages for select to authenticated
            using (realtime.topic() = 'room:' || (auth.jwt() ->> 'sub'));
          create policy speak on realtime.messages for insert to authenticated
            with check (realtime.topic() = 'room:' || (auth.jwt() ->> 'sub') and extension = 'broadcast');
          create policy lobby on realtime.messages for select to anon
            using (realtime.topic() = 'lobby' and extension = 'presence');`);
        });
        const all = { broadcastRead: true, broadcastWrite: true, presenceRead: true, presenceWrite: true };
        const none = {
          broadcastRead: false,
          broadcastWrite: false,
          presenceRead: false,
          presenceWrite: false,
        };
        assertEquals(await channelAccess(db, user(ALICE), `room:${ALICE}`), { ...all, presenceWrite: false });
        assertEquals(await channelAccess(db, user(BOB), `room:${ALICE}`), none);
        assertEquals(await channelAccess(db, { role: "anon" }, `room:${ALICE}`), none);
        assertEquals(await channelAccess(db, { role: "anon" }, "lobby"), { ...none, presenceRead: true });
        // The subscriber roles may use the schema for these only: realtime.send() and broadcast_changes() act
        // with the caller's rights, which the policies on realtime.messages decide.
        for (const role of ["anon", "authenticated"]) {
          const reachable = await db.query<{ name: string }>(
            `select p.oid::regprocedure::text as name from pg_catalog.pg_proc p
             where p.pronamespace = 'realtime'::regnamespace and pg_catalog.has_function_privilege($1, p.oid, 'EXECUTE')
           union all
           select c.oid::regclass::text from pg_catalog.pg_class c
             where c.relnamespace = 'realtime'::regnamespace and c.relkind in ('r', 'v', 'm', 'p')
               and pg_catalog.has_table_privilege($1, c.oid, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE')
           order by 1`,
            [role],
          );
          assertEquals(reachable.map((r) => r.name), [
            "realtime.broadcast_changes(text,text,text,text,text,record,record,text)",
            "realtime.messages",
            "realtime.send(jsonb,text,text,boolean)",
            "realtime.topic()",
          ]);
        }
        // The topic is the transaction's alone: a later query sees none.
        const [row] = await db.query<{ topic: string | null }>("select realtime.topic() as topic");
        assertEquals(row?.topic, null);
      },
    );
  } finally {
    await dbs.close();
    await sandbox.destroy();
  }
});
