// Number helpers shared by the histogram and recorder tests.

/** The largest double below `x` (x > 0). */
export function below(x: number): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  view.setBigUint64(0, view.getBigUint64(0) - 1n);
  return view.getFloat64(0);
}

/** What `percentile_cont(q)` answers for ascending `sorted` values. */
export function exactPercentile(sorted: number[], q: number): number {
  const rank = q * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.min(lo + 1, sorted.length - 1);
  return sorted[lo]! + (rank - lo) * (sorted[hi]! - sorted[lo]!);
}
