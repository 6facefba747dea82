import { assert, assertEquals } from "../tests/assert.ts";
import { enqueue, QueueDispatcher } from "./queue.ts";

Deno.test("the queue dispatcher routes by kind, tolerates strangers and stops cleanly", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "queue-test-" });
  const kv = await Deno.openKv(`${dir}/kv.sqlite3`);
  try {
    const seen: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let finished = false;
    const dispatcher = new QueueDispatcher(kv).on("notification.send", async (m) => {
      seen.push(m.items[0]!.id);
      if (m.items[0]!.id === "slow") {
        await gate;
        finished = true;
      }
    });
    await t.step("a second handler of one kind is refused", () => {
      let threw = false;
      try {
        dispatcher.on("notification.send", () => Promise.resolve());
      } catch {
        threw = true;
      }
      assert(threw);
    });
    dispatcher.start();
    await t.step("messages reach the handler of their kind; unknown kinds are dropped", async () => {
      await kv.enqueue({ kind: "nobody.handles.this" });
      await kv.enqueue("not an object");
      await enqueue(kv, {
        kind: "notification.send",
        project: "p",
        items: [{ id: "a", channel: "webhook", dispatch: "d" }],
      });
      const deadline = Date.now() + 5000;
      while (!seen.includes("a") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      assertEquals(seen, ["a"]);
    });
    await t.step("stop waits for handlers in flight", async () => {
      await enqueue(kv, {
        kind: "notification.send",
        project: "p",
        items: [{ id: "slow", channel: "webhook", dispatch: "d" }],
      });
      while (!seen.includes("slow")) await new Promise((r) => setTimeout(r, 10));
      assertEquals(dispatcher.busy, 1);
      const stopping = dispatcher.stop();
      setTimeout(release, 50);
      await stopping;
      assert(finished, "the slow handler finished before stop resolved");
      assertEquals(dispatcher.busy, 0);
    });
  } finally {
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }
});
