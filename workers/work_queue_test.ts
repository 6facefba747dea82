import { assert, assertEquals } from "../tests/assert.ts";
import { type Claimed, type Outcome, type WorkArea, type WorkItem, WorkQueue } from "../lib/work_queue.ts";
import { WorkEngine } from "./work_queue.ts";

async function withKv(fn: (kv: Deno.Kv) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "work-queue-test-" });
  const kv = await Deno.openKv(`${dir}/kv.sqlite3`);
  let open = true;
  const close = kv.close.bind(kv);
  kv.close = () => {
    if (open) close();
    open = false;
  };
  try {
    await fn(kv);
  } finally {
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }
}

async function until(what: string, done: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** An in-memory table: rows with a status, attempts and a lease, and a script of outcomes. */
function memoryArea(outcomes: Outcome[] = []) {
  const rows = new Map<string, { status: string; attempts: number; max: number; lease?: string }>();
  const runs: string[] = [];
  const finished: { id: string; next: string; retryInMs?: number }[] = [];
  let gate: Promise<void> = Promise.resolve();
  const area: WorkArea<Claimed & { id: string }, Outcome> = {
    kind: "job.run",
    concurrency: 4,
    leaseSecs: 30,
    backoff: () => ({ baseMs: 1000, capMs: 60_000 }),
    claim: (_project, item, lease) => {
      const row = rows.get(item.id);
      if (!row || row.status !== "pending") return Promise.resolve(null);
      row.status = "running";
      row.attempts++;
      row.lease = lease.token;
      return Promise.resolve({ id: item.id, attempt: row.attempts, maxAttempts: row.max });
    },
    run: async (_project, c) => {
      runs.push(c.id);
      await gate;
      return outcomes.shift() ?? { ok: true };
    },
    finish: (_project, c, _outcome, next) => {
      const row = rows.get(c.id)!;
      row.status = next.status === "failed" ? "failed" : next.status;
      finished.push({
        id: c.id,
        next: next.status,
        retryInMs: next.status === "failed" ? next.retryInMs : undefined,
      });
      return Promise.resolve(true);
    },
    renew: () => Promise.resolve(),
    recover: () =>
      Promise.resolve([...rows].filter(([, r]) => r.status === "pending").map(([id]) => ({ id, token: id }))),
  };
  return {
    area,
    rows,
    runs,
    finished,
    add: (id: string, max = 3) => rows.set(id, { status: "pending", attempts: 0, max }),
    hold: () => {
      let release!: () => void;
      gate = new Promise((r) => (release = r));
      return release;
    },
  };
}

Deno.test("work queue: immediate items of one turn share KV messages, per project, at most 100 each", async () => {
  await withKv(async (kv) => {
    const got: { project: string; items: WorkItem[] }[] = [];
    const listening = kv.listenQueue((m) => {
      got.push(m as { project: string; items: WorkItem[] });
    });
    const queue = new WorkQueue(kv);
    const writes: Promise<void>[] = [];
    for (let i = 0; i < 150; i++) writes.push(queue.enqueue("job.run", "a", { id: `a${i}`, token: "t" }));
    writes.push(queue.enqueue("job.run", "b", { id: "b0", token: "t" }));
    await Promise.all(writes); // every caller resolves once its message is written
    await until("151 items", () => got.flatMap((m) => m.items).length >= 151);
    assertEquals(got.map((m) => `${m.project}:${m.items.length}`).sort(), ["a:100", "a:50", "b:1"]);
    kv.close();
    await listening;
  });
});

Deno.test("work engine: fast path with de-duplication, attempts, backoff, dead, and a clean stop", async (t) => {
  await withKv(async (kv) => {
    const queue = new WorkQueue(kv);
    const mem = memoryArea([{ ok: false }, { ok: false, permanent: true }, { ok: false }]);
    const engine = new WorkEngine(queue, () => Promise.resolve(["p"])).register(mem.area, {
      everyMs: 0,
      graceSecs: 5,
    });
    engine.start();
    await t.step("an immediate item runs once: locally, its KV copy skipped", async () => {
      mem.add("x");
      await queue.enqueue("job.run", "p", { id: "x", token: "t1" });
      await until("a retry scheduled", () => mem.finished.length === 1);
      assertEquals(mem.finished[0]!.next, "failed");
      const wait = mem.finished[0]!.retryInMs!;
      assert(wait >= 500 && wait <= 1000, `backoff of the first retry with jitter: ${wait}`);
      // The retry (a fresh token) comes back through KV after its delay; this one is permanent: dead.
      mem.rows.get("x")!.status = "pending";
      await until("the retry", () => mem.finished.length === 2);
      assertEquals(mem.finished[1]!.next, "dead");
      assertEquals(mem.runs, ["x", "x"]);
    });
    await t.step("the last attempt is dead", async () => {
      mem.add("y", 1);
      await queue.enqueue("job.run", "p", { id: "y", token: "t2" });
      await until("y done", () => mem.finished.some((f) => f.id === "y"));
      assertEquals(mem.finished.find((f) => f.id === "y")!.next, "dead");
    });
    await t.step("stop waits for attempts in flight", async () => {
      const release = mem.hold();
      mem.add("slow");
      await queue.enqueue("job.run", "p", { id: "slow", token: "t3" });
      await until("slow started", () => mem.runs.includes("slow"));
      assert(engine.busy > 0);
      const stopping = engine.stop();
      setTimeout(release, 50);
      await stopping;
      assertEquals(mem.finished.at(-1)!.id, "slow");
      assertEquals(engine.busy, 0);
    });
  });
});

Deno.test("work engine: a message KV gives up on is not written anywhere; the sweep at start recovers the row", async () => {
  await withKv(async (kv) => {
    const queue = new WorkQueue(kv, [10, 10]);
    const mem = memoryArea();
    let failing = true;
    let claims = 0;
    const claim = mem.area.claim;
    mem.area.claim = (project, item, lease) => {
      claims++;
      return failing ? Promise.reject(new Error("database down")) : claim(project, item, lease);
    };
    const first = new WorkEngine(queue, () => Promise.resolve([])).register(mem.area, {
      everyMs: 0,
      graceSecs: 0,
    });
    first.start();
    mem.add("z");
    await queue.put({ kind: "job.run", project: "p", items: [{ id: "z", token: "t" }] });
    await until("three deliveries", () => claims >= 3);
    await new Promise((r) => setTimeout(r, 200));
    assertEquals(claims, 3, "KV gave up after its retries");
    await first.stop();
    const left: unknown[] = [];
    for await (const entry of kv.list({ prefix: [] })) left.push(entry.key);
    assertEquals(left, [], "no undelivered copy is parked in KV");
    failing = false;
    const second = new WorkEngine(queue, () => Promise.resolve(["p"])).register(mem.area, {
      everyMs: 0,
      graceSecs: 0,
    });
    second.start();
    await until("z done after the restart", () => mem.finished.some((f) => f.id === "z"));
    await second.stop();
  });
});

Deno.test("work engine: work it has no slot for is announced; pulled items run within the slots and finish", async () => {
  await withKv(async (kv) => {
    const queue = new WorkQueue(kv);
    const mem = memoryArea();
    const engine = new WorkEngine(queue, () => Promise.resolve(["p"])).register(mem.area, {
      everyMs: 0,
      graceSecs: 5,
    });
    const announced: string[] = [];
    const woken: string[] = [];
    engine.pullWith({
      announce: (kind, project) => announced.push(`${kind}/${project}`),
      wake: (kind, project) => woken.push(`${kind}/${project}`),
    });
    engine.start();
    try {
      await until("the sweep at start to wake the project", () => woken.includes("job.run/p"));
      assertEquals(engine.pullable("job.run"), undefined, "an area without claimDue is not pulled from");
      assertEquals(engine.freeSlots("job.run"), 4);

      const release = mem.hold();
      for (const id of ["a", "b", "c"]) {
        mem.add(id);
        await queue.enqueue("job.run", "p", { id, token: id });
      }
      assertEquals(announced, [], "slots were free: nothing announced");
      assertEquals(engine.freeSlots("job.run"), 1);

      // A pulled item (claimed by the table, as claimDue does) takes the last slot.
      mem.add("pulled");
      const row = mem.rows.get("pulled")!;
      row.status = "running";
      row.attempts = 1;
      engine.adopt("job.run", "p", [{
        item: { id: "pulled", token: "lease" },
        token: "lease",
        claimed: { id: "pulled", attempt: 1, maxAttempts: 3 } as Claimed,
      }]);
      assertEquals(engine.freeSlots("job.run"), 0);
      mem.add("d");
      await queue.enqueue("job.run", "p", { id: "d", token: "d" });
      assertEquals(announced, ["job.run/p"], "no slot for it: the others are told");

      release();
      await until("every item done", () => mem.finished.length === 5);
      assertEquals(mem.finished.map((f) => f.id).sort(), ["a", "b", "c", "d", "pulled"]);
      assertEquals(mem.runs.filter((id) => id === "pulled").length, 1);
      assertEquals(engine.freeSlots("job.run"), 4);
    } finally {
      await engine.stop();
    }
  });
});
