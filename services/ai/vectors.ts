/** Scales a vector to unit length (a zero vector stays zero), so that a dot product is the cosine. */
export function normalize(values: ArrayLike<number>): Float32Array {
  const out = Float32Array.from(values);
  let sum = 0;
  for (let i = 0; i < out.length; i++) sum += out[i]! * out[i]!;
  const norm = Math.sqrt(sum);
  if (norm > 0) { for (let i = 0; i < out.length; i++) out[i]! /= norm; }
  return out;
}

/** The dot product of two vectors of the same length: their cosine when both are unit vectors. */
export function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) sum += a[i]! * b[i]!;
  return sum;
}

/** A vector as pgvector's text form `[x,y,…]`. */
export function toPgVector(v: ArrayLike<number>): string {
  return `[${Array.from(v).join(",")}]`;
}

/** A vector as a PostgreSQL array literal `{x,y,…}` for a `real[]` parameter. */
export function toPgArray(v: ArrayLike<number>): string {
  return `{${Array.from(v).join(",")}}`;
}
