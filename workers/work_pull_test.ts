import { assertEquals } from "../tests/assert.ts";
import type { Claimed, Outcome, WorkArea, WorkBus, WorkItem, WorkKind } from "../lib/work_queue.ts";
import { type PullTarget, WorkPuller } from "./work_pull.ts";

/** One bus for every puller of a test, as the control database's NOTIFY is for every instance. */
function memoryBus() {
  const listeners = new Set<(payload: string) => void>();
  const sent: string[] = [];
  const calls: string[][] = [];
  const bus: WorkBus = {
    announce: (payloads) => {
      calls.push(payloads);
      sent.push(...payloads);
      for (const payload of payloads) for (const l of listeners) l(payload);
      return Promise.resolve();
    },
    listen: (onPayload) => {
      listeners.add(onPayload);
      return Promise.resolve(() => Promise.resolve(void listeners.delete(onPayload)));
    },
  };
  return { bus, sent, calls, deliver: (payload: string) => listeners.forEach((l) => l(payload)) };
}

/** An instance's engine as the puller sees it: a table of due ids per project, free slots, what it adopted. */
function memoryTarget(due: Map<string, string[]>, slots: { free: number }) {
  const adopted: { project: string; id: string }[] = [];
  const claims: { project: string; limit: number }[] = [];
  const area = {
    kind: "job.run",
    leaseSecs: 30,
    claimDue: (project: string, limit: number) => {
      claims.push({ project, limit });
      const rows = due.get(project) ?? [];
      const taken = rows.splice(0, limit);
      return Promise.resolve(taken.map((id) => ({
        item: { id, token: id },
        token: id,
        claimed: { attempt: 1, maxAttempts: 1 },
      })));
    },
  } as unknown as WorkArea<Claimed, Outcome>;
  const target: PullTarget = {
    pullable: (kind: WorkKind) => kind === "job.run" ? area : undefined,
    freeSlots: () => slots.free,
    adopt: (_kind, project, pulled: { item: WorkItem }[]) => {
      for (const p of pulled) adopted.push({ project, id: p.item.id });
      slots.free -= pulled.length;
    },
  };
  return { target, adopted, claims };
}

async function until(what: string, done: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

Deno.test("an instance pulls the work another announced, as far as its free slots go", async () => {
  const { bus, sent } = memoryBus();
  const table = new Map([["demo", ids("j", 7)], ["quiet", ids("q", 3)]]);
  const one = memoryTarget(table, { free: 0 });
  const otherSlots = { free: 5 };
  const other = memoryTarget(table, otherSlots);
  const a = new WorkPuller({ target: one.target, bus, everyMs: 10, batch: 2 });
  const b = new WorkPuller({ target: other.target, bus, everyMs: 10, batch: 2 });
  await a.start();
  await b.start();
  try {
    a.announce("job.run", "demo");
    a.announce("job.run", "demo"); // grouped: one announcement
    await until("b to fill its slots", () => other.adopted.length === 5);
    assertEquals(sent.length, 1);
    assertEquals(other.adopted.map((x) => x.id), ids("j", 5), "oldest first, in batches of 2");
    assertEquals(one.adopted, [], "its own announcement does not wake the announcer");
    assertEquals(
      other.claims.every((c) => c.project === "demo"),
      true,
      "projects not announced are not read",
    );

    // Full: the project stays woken, and is pulled again once slots free, until a claim comes back short.
    otherSlots.free = 4;
    await until("the rest", () => other.adopted.length === 7);
    await until("a short claim", () => other.claims.at(-1)!.limit > 0 && table.get("demo")!.length === 0);
    await new Promise((r) => setTimeout(r, 50));
    const claimsThen = other.claims.length;
    await new Promise((r) => setTimeout(r, 50));
    assertEquals(other.claims.length, claimsThen, "drained: no claim until the next wake");
    assertEquals(table.get("quiet")!.length, 3);

    // The sweep wakes a project without any announcement.
    otherSlots.free = 3;
    b.wake("job.run", "quiet");
    await until("the swept project", () => other.adopted.length === 10);
  } finally {
    await a.stop();
    await b.stop();
  }
});

Deno.test("announcements that are not the puller's format are ignored", async () => {
  const { bus, deliver } = memoryBus();
  const table = new Map([["demo", ids("j", 2)]]);
  const t = memoryTarget(table, { free: 10 });
  const p = new WorkPuller({ target: t.target, bus, everyMs: 10 });
  await p.start();
  try {
    for (const bad of ["", "x", "x job.run", "x other.kind demo", "x job.run Demo!", "x job.run ../demo"]) {
      deliver(bad);
    }
    await new Promise((r) => setTimeout(r, 50));
    assertEquals(t.claims, []);
    deliver("x job.run demo");
    await until("the well-formed one", () => t.adopted.length === 2);
  } finally {
    await p.stop();
  }
});

Deno.test("a busy instance announces at most once a round, grouping what came meanwhile", async () => {
  const { bus, calls } = memoryBus();
  const t = memoryTarget(new Map(), { free: 0 });
  const p = new WorkPuller({ target: t.target, bus, everyMs: 2000 });
  await p.start();
  try {
    for (let i = 0; i < 20; i++) {
      p.announce("job.run", i % 2 ? "a" : "b");
      await new Promise((r) => setTimeout(r, 0)); // each in its own turn, as requests come
    }
    p.announce("notification.send", "a");
    await until("the first announcement", () => calls.length >= 1);
    assertEquals(calls.length, 1, "the rest waits for the end of the round");
    await until("the rest, at the end of the round", () => calls.length === 2);
    const strip = (payloads: string[]) => payloads.map((x) => x.split(" ").slice(1).join(" ")).sort();
    assertEquals(strip(calls[0]!), ["job.run b"]);
    assertEquals(strip(calls[1]!), ["job.run a", "job.run b", "notification.send a"]);
  } finally {
    await p.stop();
  }
});
