import { slotOf, SLOTS } from "./duration_histogram.ts";

/** The calls of one function in one UTC minute, as row of `platform.function_invocation_rollups`. */
export class Rollup {
  count = 0;
  errors = 0;
  timeouts = 0;
  oom = 0;
  sumMs = 0;
  minMs = Infinity;
  maxMs = -Infinity;
  readonly hist = new Int32Array(SLOTS);

  constructor(readonly functionId: string, public functionName: string, readonly minute: number) {}

  /** Counts one call; allocates nothing. */
  add(outcome: string, durationMs: number): void {
    this.count++;
    if (outcome !== "ok") {
      this.errors++;
      if (outcome === "timeout") this.timeouts++;
      else if (outcome === "oom") this.oom++;
    }
    this.sumMs += durationMs;
    if (durationMs < this.minMs) this.minMs = durationMs;
    if (durationMs > this.maxMs) this.maxMs = durationMs;
    this.hist[slotOf(durationMs)]!++;
  }

  /** Adds another rollup of the same function and minute. */
  merge(other: Rollup): void {
    this.count += other.count;
    this.errors += other.errors;
    this.timeouts += other.timeouts;
    this.oom += other.oom;
    this.sumMs += other.sumMs;
    this.minMs = Math.min(this.minMs, other.minMs);
    this.maxMs = Math.max(this.maxMs, other.maxMs);
    for (let i = 0; i < SLOTS; i++) this.hist[i]! += other.hist[i]!;
  }

  /** The histogram as an array literal without its trailing empty slots (the upsert pads with zeros). */
  histLiteral(): string {
    let end = SLOTS;
    while (end > 1 && this.hist[end - 1] === 0) end--;
    return `{${this.hist.subarray(0, end).join(",")}}`;
  }
}
