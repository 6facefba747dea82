import { assertEquals } from "../../tests/assert.ts";
import { makeSandbox, openSandboxDatabases } from "../../tests/harness.ts";
import { realtimeStore } from "./store.ts";

Deno.test("realtime store: stored broadcasts replay by topic and time, oldest first, until they expire", async () => {
  const sandbox = await makeSandbox();
  const dbs = await openSandboxDatabases(sandbox);
  try {
    await dbs.createProject("default");
    const db = await dbs.project("default");
    const since = Date.now() - 1000;
    const store = (topic: string, n: number) =>
      realtimeStore.storeBroadcast(db, { topic, event: "e", payload: { n }, keepSeconds: 60 });
    const first = await store("room:1", 1);
    await store("room:2", 2);
    await store("room:1", 3);
    const replayed = await realtimeStore.storedBroadcasts(db, "room:1", since, 25);
    assertEquals(replayed.map((r) => r.payload), [{ n: 1 }, { n: 3 }]);
    assertEquals(replayed[0]!.id, first);
    assertEquals((await realtimeStore.storedBroadcasts(db, "room:1", since, 1)).length, 1);
    assertEquals((await realtimeStore.storedBroadcasts(db, "room:1", Date.now() + 60_000, 25)).length, 0);
    // Past its time a message is not replayed, and the cleanup deletes it.
    await db.query("update realtime.messages set expires_at = now() - interval '1 second' where id = $1", [
      first,
    ]);
    assertEquals((await realtimeStore.storedBroadcasts(db, "room:1", since, 25)).map((r) => r.payload), [{
      n: 3,
    }]);
    // Messages sent from SQL (realtime.send, no expires_at) go once they are older than the replay window.
    await db.query("select realtime.send('{}', 'e', 'room:3'), realtime.send('{}', 'e', 'room:4')");
    await db.query(
      `update realtime.messages set inserted_at = inserted_at - interval '4 days'
        where topic = 'room:3'`,
    );
    await realtimeStore.pruneStoredBroadcasts(db);
    const left = await db.query<{ topic: string }>("select topic from realtime.messages order by topic");
    assertEquals(left.map((r) => r.topic), ["room:1", "room:2", "room:4"]);
  } finally {
    await dbs.close();
    await sandbox.destroy();
  }
});
