import v8 from "node:v8";
import { assert, assertEquals } from "../tests/assert.ts";
import { restCollector } from "./rest_gc.ts";

/** The young generation's committed size: grown by allocation, given back only by a full collection. */
function youngBytes(): number {
  return v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space")!.physical_space_size;
}

/** Allocates short-lived objects until the young generation has grown past 4 MB. */
function growYoung(): void {
  let keep: unknown[] = [];
  for (let i = 0; i < 4e6 && youngBytes() <= 4 * 1048576; i++) {
    keep.push({ i, s: `x${i}` });
    if (keep.length > 2000) keep = [];
  }
}

Deno.test("restCollector: a thread polled a few times per rest window still collects once at rest", async () => {
  growYoung();
  const grown = youngBytes();
  assert(grown > 4 * 1048576, `young generation ${grown} bytes`);
  // Touched every 100 ms, it is never idle for a whole 400 ms window; 4 touches a window are within 6.
  const rest = restCollector(400, { quietTouches: 6 });
  try {
    for (let i = 0; i < 30 && youngBytes() >= grown; i++) {
      rest.touch();
      await new Promise((r) => setTimeout(r, 100));
    }
    assert(youngBytes() < grown, `young generation still ${youngBytes()} of ${grown} bytes`);
  } finally {
    rest.stop();
  }
});

Deno.test("restCollector: a busy window never collects; a polled rest collects once, not again without growth", async () => {
  let collections = 0;
  const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));
  // Windows of 400 ms, checked every 200 ms; 6 touches a window are still rest. The margins are wide so that a
  // loaded machine's late timers change nothing: busy is some 80 touches a window, polled 4.
  const rest = restCollector(400, { quietTouches: 6, collect: () => collections++ });
  try {
    for (let i = 0; i < 300; i++) {
      rest.touch();
      await tick(5);
    }
    assertEquals(collections, 0);
    // The first quiet window collects (nothing collected yet: the heap has grown since); later ones find no
    // 4 MB of growth since.
    for (let i = 0; i < 24; i++) {
      rest.touch();
      await tick(100);
    }
    assertEquals(collections, 1);
  } finally {
    rest.stop();
  }
});

Deno.test("restCollector: collectSoon collects once at the moment asked, not at the next rest", async () => {
  let collections = 0;
  let trims = 0;
  // A rest of a minute: only collectSoon can collect within this test.
  const rest = restCollector(60_000, { collect: () => collections++, trim: () => trims++ });
  try {
    rest.collectSoon(50);
    for (let i = 0; i < 200 && collections === 0; i++) await new Promise((r) => setTimeout(r, 50));
    assertEquals([collections, trims], [1, 1]);
    // Asked again before it ran: once, as last asked.
    rest.collectSoon(10_000);
    rest.collectSoon(50);
    for (let i = 0; i < 200 && collections === 1; i++) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 200));
    assertEquals(collections, 2);
  } finally {
    rest.stop();
  }
});
