// LISTEN (realtime capture, schema cache reloads, work announcements) survives the loss of its connection: cut
// once, cut again while it listens again, and cut while its database refuses connections for a while (a server
// still restarting). postgres.js connects the listening connection again and subscribes its channels once more.
import postgres from "postgres";
import { assertEquals } from "../tests/assert.ts";
import { openPostgres } from "./postgres.ts";

const SERVER = Deno.env.get("DATABASE_URL") ?? "postgres://postgres@127.0.0.1:5432/test";

/** Notifies `channel` every 100 ms until `heard` holds `payload` (20 s guard against a hang, not a timing). */
async function deliveredAgain(
  admin: postgres.Sql,
  channel: string,
  heard: string[],
  payload: string,
): Promise<boolean> {
  for (let i = 0; i < 200; i++) {
    await admin`select pg_notify(${channel}, ${payload})`;
    await new Promise((r) => setTimeout(r, 100));
    if (heard.includes(payload)) return true;
  }
  return false;
}

Deno.test("PostgreSQL: LISTEN listens again after its connection is lost, however often", async (t) => {
  const name = `listener_${crypto.randomUUID().slice(0, 8)}`;
  const root = postgres(SERVER, { max: 1, onnotice: () => {} });
  await root.unsafe(`create database "${name}"`);
  const url = new URL(SERVER);
  url.pathname = `/${name}`;
  const admin = postgres(url.toString(), { max: 1, onnotice: () => {} });
  const db = openPostgres(url.toString(), { max: 2 });
  const listenerPids = async () =>
    (await root<{ pid: number }[]>`
      select pid from pg_stat_activity where datname = ${name} and query like 'listen %'`).map((r) => r.pid);
  const cut = async () => {
    const pids = await listenerPids();
    await root`select pg_terminate_backend(p) from unnest(${pids}::int[]) p`;
    return pids.length;
  };
  try {
    const heard: string[] = [];
    const other: string[] = [];
    await db.listen("events", (p) => heard.push(p));
    await db.listen('other "quoted"', (p) => other.push(p));

    await t.step("notifications arrive on every channel", async () => {
      assertEquals(await deliveredAgain(admin, "events", heard, "first"), true);
      assertEquals(await deliveredAgain(admin, 'other "quoted"', other, "first"), true);
    });

    await t.step("cut once: both channels are heard again", async () => {
      assertEquals(await cut(), 1);
      assertEquals(await deliveredAgain(admin, "events", heard, "after one cut"), true);
      assertEquals(await deliveredAgain(admin, 'other "quoted"', other, "after one cut"), true);
    });

    await t.step("cut three times in a row: heard again", async () => {
      for (let i = 0; i < 3; i++) {
        await cut();
        await new Promise((r) => setTimeout(r, 30));
      }
      assertEquals(await deliveredAgain(admin, "events", heard, "after three cuts"), true);
    });

    await t.step(
      "cut while the database refuses connections for 1.5 s: heard again once it accepts",
      async () => {
        await root.unsafe(`alter database "${name}" allow_connections false`);
        await admin.end();
        assertEquals(await cut(), 1);
        await new Promise((r) => setTimeout(r, 1_500)); // several tries to listen again fail meanwhile
        assertEquals(await listenerPids(), [], "nothing could connect");
        await root.unsafe(`alter database "${name}" allow_connections true`);
        const again = postgres(url.toString(), { max: 1, onnotice: () => {} });
        try {
          assertEquals(await deliveredAgain(again, "events", heard, "after the outage"), true);
        } finally {
          await again.end();
        }
      },
    );

    await t.step("a channel unlistened is not heard; one listened after the losses is", async () => {
      const late: string[] = [];
      const unlisten = await db.listen("late", (p) => late.push(p));
      const again = postgres(url.toString(), { max: 1, onnotice: () => {} });
      try {
        assertEquals(await deliveredAgain(again, "late", late, "late"), true);
        await unlisten();
        await again`select pg_notify('late', 'unheard')`;
        assertEquals(await deliveredAgain(again, "events", heard, "last"), true); // delivered in order after it
        assertEquals(late.includes("unheard"), false);
      } finally {
        await again.end();
      }
    });
  } finally {
    await db.close();
    await admin.end().catch(() => {});
    await root.unsafe(`alter database "${name}" allow_connections true`);
    await root.unsafe(`drop database "${name}" with (force)`);
    await root.end();
  }
});
