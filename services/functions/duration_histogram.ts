/**
 * The duration histogram of invocation rollups: log-spaced slots, ratio 1.1.
 *
 * BOUNDS[k] = BOUNDS[k-1] * 1.1 from BOUNDS[0] = 0.01 ms, by repeated float8 multiplication (bit-identical in
 * JavaScript and in PostgreSQL, whose migration 0100 computes the same bounds with a recursive query and slots
 * durations with `width_bucket`). Slot 0 holds durations below 0.01 ms, slot k (1..190) holds
 * [BOUNDS[k-1], BOUNDS[k]), slot 191 holds BOUNDS[190] (about 727 s) and above; calls end by 301 s at most.
 * A percentile is read at the geometric middle of its slot, so it is within sqrt(1.1) - 1 < 4.9% of the exact
 * value for durations from 0.01 ms up, and it is clamped to the minimum and maximum actually seen.
 */
const RATIO = 1.1;
const LOWEST_MS = 0.01;
const BOUND_COUNT = 191;

/** Lower bounds of slots 1..191 (ms). */
export const BOUNDS: Float64Array = (() => {
  const bounds = new Float64Array(BOUND_COUNT);
  bounds[0] = LOWEST_MS;
  for (let k = 1; k < BOUND_COUNT; k++) bounds[k] = bounds[k - 1]! * RATIO;
  return bounds;
})();

/** Slots of a histogram. */
export const SLOTS = BOUND_COUNT + 1;

/** Worst relative error of a percentile between 0.01 ms and BOUNDS[190]. */
export const RELATIVE_ERROR = Math.sqrt(RATIO) - 1;

/** The slot of a duration, as PostgreSQL's `width_bucket(duration, BOUNDS)`. */
export function slotOf(durationMs: number): number {
  if (!(durationMs >= LOWEST_MS)) return 0; // below the first bound (and NaN, never recorded)
  let lo = 1; // BOUNDS[lo - 1] <= durationMs
  let hi = SLOTS; // durationMs < BOUNDS[hi - 1], or hi = SLOTS
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1;
    if (durationMs >= BOUNDS[mid - 1]!) lo = mid;
    else hi = mid;
  }
  return lo;
}

/** The value a slot stands for: 0 below 0.01 ms, the geometric middle of a bounded slot, the top's lower bound. */
function slotValue(slot: number): number {
  if (slot === 0) return 0;
  if (slot === SLOTS - 1) return BOUNDS[slot - 1]!;
  return Math.sqrt(BOUNDS[slot - 1]! * BOUNDS[slot]!);
}

/** The value of the order statistic `rank` (0-based) of a histogram. */
function rankValue(hist: ArrayLike<number>, rank: number): number {
  let seen = 0;
  for (let slot = 0; slot < hist.length; slot++) {
    seen += hist[slot]!;
    if (rank < seen) return slotValue(slot);
  }
  return slotValue(hist.length - 1);
}

/**
 * The `q` percentile (0..1) of `count` durations in `hist` with the same interpolation as `percentile_cont`,
 * each order statistic read at its slot's middle, clamped to [minMs, maxMs]. Null when there are none.
 */
export function percentile(
  hist: ArrayLike<number>,
  count: number,
  q: number,
  minMs: number,
  maxMs: number,
): number | null {
  if (count <= 0) return null;
  const rank = q * (count - 1);
  const below = Math.floor(rank);
  const low = rankValue(hist, below);
  const high = rank > below ? rankValue(hist, below + 1) : low;
  const value = low + (rank - below) * (high - low);
  return Math.min(maxMs, Math.max(minMs, value));
}
