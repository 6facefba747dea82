import { slotOf, SLOTS } from "./duration_histogram.ts";

/** The calls of one function in one UTC minute, as row of `platform.function_invocation_rollups`. */
export class Rollup {
  count = 0;
  errors = 0;
  timeouts = 0;
  oom = 0;
  // Calls by the class of their HTTP status; a call without one (null) or outside 100..599 is in none.
  status1xx = 0;
  status2xx = 0;
  status3xx = 0;
  status4xx = 0;
  status5xx = 0;
  sumMs = 0;
  minMs = Infinity;
  maxMs = -Infinity;
  readonly hist = new Int32Array(SLOTS);

  constructor(readonly functionId: string, public functionName: string, readonly minute: number) {}

  /** Counts one call; allocates nothing. */
  add(outcome: string, durationMs: number, status: number | null): void {
    this.count++;
    if (outcome !== "ok") {
      this.errors++;
      if (outcome === "timeout") this.timeouts++;
      else if (outcome === "oom") this.oom++;
    }
    if (status !== null && status >= 100) {
      if (status < 200) this.status1xx++;
      else if (status < 300) this.status2xx++;
      else if (status < 400) this.status3xx++;
      else if (status < 500) this.status4xx++;
      else if (status < 600) this.status5xx++;
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
    this.status1xx += other.status1xx;
    this.status2xx += other.status2xx;
    this.status3xx += other.status3xx;
    this.status4xx += other.status4xx;
    this.status5xx += other.status5xx;
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
