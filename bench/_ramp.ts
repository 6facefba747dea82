/**
 * Finds the ceiling of an asynchronous pipeline (jobs, notifications): offers an open-loop load in steps of
 * rising rate, and after each step reads how many items finished in its window, their latency and the CPU the
 * process tree used. A step is saturated when the offered rate falls short of the asked one (the enqueue path
 * is the limit), when fewer items finish than were offered (a backlog grows), or when the p50 latency passes
 * its bound. The ramp stops at the first saturated step; the ceiling is the best finishing rate of an
 * unsaturated step, and the capacity the finishing rate of the saturated one.
 */
import { treeCpuMs } from "./_proc.ts";

/** What a ramp drives: one item sent, the items finished so far, and the latency of a window's items. */
export interface RampTarget {
  /** Sends item `i`; true when it was accepted. */
  offer(i: number): Promise<boolean>;
  /** How many items have finished since the start. */
  finished(): Promise<number>;
  /** The p50 and p95 latency, in ms, of the items offered between `from` and `to`, and where their time went. */
  latency(from: Date, to: Date): Promise<{ p50: number; p95: number; stages?: string }>;
}

/** The figures of one step. */
export interface RampStep {
  asked: number;
  offeredPerSec: number;
  refused: number;
  finishedPerSec: number;
  p50: number;
  p95: number;
  stages?: string;
  /** CPU milliseconds the process tree spent per finished item during the step. */
  cpuMsPerItem: number;
  /** Why the step is saturated, or null. */
  saturated: string | null;
}

/** Options of a ramp. */
export interface RampOptions {
  /** The first asked rate (items per second); each step multiplies it by `factor`. */
  start: number;
  factor: number;
  /** The highest rate asked. */
  max: number;
  stepSecs: number;
  /** The p50 latency bound, in ms. */
  boundMs: number;
  /** The longest wait for a step's backlog to drain before the next step. */
  drainSecs: number;
}

const TICK_MS = 20;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs the ramp; prints each step as it ends. */
export async function ramp(target: RampTarget, o: RampOptions): Promise<RampStep[]> {
  const steps: RampStep[] = [];
  let sent = 0;
  for (let asked = o.start; asked <= o.max; asked = Math.round(asked * o.factor)) {
    const finished0 = await target.finished();
    const cpu0 = await treeCpuMs(Deno.pid);
    const from = new Date();
    const t0 = performance.now();
    let offered = 0;
    let refused = 0;
    const offers: Promise<void>[] = [];
    while (performance.now() - t0 < o.stepSecs * 1000) {
      // Open loop: what the clock says is due, whatever is still in flight.
      const due = Math.floor((performance.now() - t0) / 1000 * asked) - offered;
      for (let k = 0; k < due; k++) {
        offered++;
        offers.push(
          target.offer(++sent).then((ok) => {
            if (!ok) refused++;
          }, () => {
            refused++;
          }),
        );
      }
      await sleep(TICK_MS);
    }
    await Promise.all(offers);
    const windowSecs = (performance.now() - t0) / 1000;
    const to = new Date();
    const finishedInWindow = await target.finished() - finished0;
    const cpu = await treeCpuMs(Deno.pid) - cpu0;
    // Let the step's backlog drain, so its latency covers every item and the next step starts empty.
    const drainEnd = performance.now() + o.drainSecs * 1000;
    while (performance.now() < drainEnd && await target.finished() - finished0 < offered - refused) {
      await sleep(100);
    }
    const { p50, p95, stages } = await target.latency(from, to);
    const offeredPerSec = offered / windowSecs;
    const finishedPerSec = finishedInWindow / windowSecs;
    let saturated: string | null = null;
    if (refused > 0) saturated = `${refused} refused`;
    else if (offeredPerSec < asked * 0.95) saturated = "the offered rate fell short (enqueue is the limit)";
    else if (finishedPerSec < offeredPerSec * 0.95) saturated = "a backlog grew";
    else if (p50 > o.boundMs) saturated = `p50 ${p50.toFixed(1)} ms > ${o.boundMs} ms`;
    const step: RampStep = {
      asked,
      offeredPerSec,
      refused,
      finishedPerSec,
      p50,
      p95,
      stages,
      cpuMsPerItem: finishedInWindow > 0 ? cpu / finishedInWindow : 0,
      saturated,
    };
    steps.push(step);
    console.log(
      `  step ${String(asked).padStart(6)}/s: offered ${offeredPerSec.toFixed(0).padStart(6)}/s, finished ${
        finishedPerSec.toFixed(0).padStart(6)
      }/s, p50 ${p50.toFixed(1)} ms, p95 ${p95.toFixed(1)} ms, CPU ${step.cpuMsPerItem.toFixed(2)} ms/item${
        stages ? `, ${stages}` : ""
      }${saturated ? ` — saturated: ${saturated}` : ""}`,
    );
    if (saturated) break;
  }
  return steps;
}

/** The ceiling (best finishing rate of an unsaturated step) and the capacity (best finishing rate seen). */
export function ceiling(steps: RampStep[]): { ceiling: number; capacity: number; p50AtCeiling: number } {
  const ok = steps.filter((s) => !s.saturated);
  const best = ok.reduce<RampStep | null>((b, s) => !b || s.finishedPerSec > b.finishedPerSec ? s : b, null);
  return {
    ceiling: best?.finishedPerSec ?? 0,
    capacity: Math.max(0, ...steps.map((s) => s.finishedPerSec)),
    p50AtCeiling: best?.p50 ?? NaN,
  };
}
