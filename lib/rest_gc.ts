/**
 * One full garbage collection when a process comes to rest. V8 collects when it needs room; the memory reducer
 * that would shrink an idle process's heap waits for idle-time notifications Deno's runtime does not send. So a
 * platform left alone after some traffic kept its grown young generation and its garbage resident (measured in
 * PostgreSQL mode: 117–120 MB at rest, 104–107 MB after one full collection). A collection `restMs` after the
 * last sign of work gives that memory back, once per stretch of work, for a few milliseconds of CPU.
 *
 * `gc` is reached the way Node programs do: the `--expose-gc` flag set at run time, read from a new context. The
 * flag is process-wide: threads started later in this process (the embedded engines' threads) see a global
 * `gc` too. Functions' code never runs in this process (it runs in host processes of its own), so no user code
 * can call it. After the collection, malloc's arenas are trimmed (lib/malloc_trim.ts).
 */
import v8 from "node:v8";
import vm from "node:vm";
import { mallocTrim } from "./malloc_trim.ts";

export interface RestCollector {
  /** Marks work: the next rest ends with a collection. Cheap enough for every request. */
  touch(): void;
  /**
   * Collects once `ms` from now, whatever the requests do meanwhile: for work that ends at a known moment (the
   * platform's start), whose garbage should not wait for the next rest.
   */
  collectSoon(ms: number): void;
  stop(): void;
}

let exposed: (() => void) | undefined;
/** A trim asked for by {@linkcode trimSoon}, done at the collectors' next tick. */
let trimWanted = false;

/**
 * Asks this thread's collectors for a malloc trim at their next tick, without a collection: for memory freed
 * outside the heap (an ended thread's), which a collection would not return. No timer of its own is started.
 */
export function trimSoon(): void {
  trimWanted = true;
}

function collector(): () => void {
  if (!exposed) {
    v8.setFlagsFromString("--expose-gc");
    exposed = vm.runInNewContext("gc") as () => void;
  }
  return exposed;
}

/** How far the committed heap must have grown since the last collection for a polled rest to collect again. */
const POLLED_GROWTH_BYTES = 4 * 1048576;

export interface RestOptions {
  /**
   * The most touches within one `restMs` window still counted as rest: background rounds that poll a thread
   * every second or so (an embedded engine's change capture, the workers' rounds) would otherwise never let it
   * rest, and its grown young generation (8–15 MB an engine, measured) would stay resident. Such a rest collects
   * only once the heap has grown by POLLED_GROWTH_BYTES since the last collection. 0: only a full `restMs` with
   * no touch is rest.
   */
  quietTouches?: number;
  /** What a collection runs (tests count them); default: a full garbage collection. */
  collect?: () => void;
  /** Gives malloc's free memory back after a collection; default: malloc_trim here (needs the FFI permission). */
  trim?: () => void;
}

/** Collects once after each stretch of work followed by `restMs` without a touch (or with only `quietTouches`). */
export function restCollector(restMs: number, options: RestOptions = {}): RestCollector {
  const gc = options.collect ?? collector();
  const trim = options.trim ?? mallocTrim;
  const quietTouches = options.quietTouches ?? 0;
  let worked = true; // starting is work too
  let lastWork = Date.now();
  let windowStart = lastWork;
  let windowTouches = 0;
  let lastWindowTouches = Infinity;
  let afterCollection = 0;
  const collectNow = () => {
    gc();
    // What the collection and the compilers freed is still resident in malloc's arenas until trimmed.
    trim();
    afterCollection = Deno.memoryUsage().heapTotal;
  };
  let soon: ReturnType<typeof setTimeout> | undefined;
  const timer = setInterval(() => {
    if (trimWanted) {
      trimWanted = false;
      mallocTrim();
    }
    const now = Date.now();
    if (now - windowStart >= restMs) {
      lastWindowTouches = windowTouches;
      windowTouches = 0;
      windowStart = now;
    }
    if (!worked) return;
    const idle = now - lastWork >= restMs;
    const polled = !idle && quietTouches > 0 && lastWindowTouches <= quietTouches &&
      windowTouches <= quietTouches &&
      Deno.memoryUsage().heapTotal - afterCollection >= POLLED_GROWTH_BYTES;
    if (!idle && !polled) return;
    worked = false;
    collectNow();
  }, Math.max(100, restMs / 2));
  Deno.unrefTimer(timer);
  return {
    touch() {
      lastWork = Date.now();
      worked = true;
      windowTouches++;
    },
    collectSoon(ms) {
      clearTimeout(soon);
      soon = setTimeout(collectNow, ms);
      Deno.unrefTimer(soon);
    },
    stop: () => {
      clearInterval(timer);
      clearTimeout(soon);
    },
  };
}
