/** Options of {@linkcode backoffMs}. */
export interface BackoffOptions {
  /** Delay before the first retry, in milliseconds. */
  baseMs: number;
  /** Longest delay, in milliseconds. */
  capMs: number;
  /** A number in [0, 1); defaults to Math.random (injectable for tests). */
  random?: () => number;
}

/**
 * The delay before retry number `attempt` (1 = first retry): exponential from `baseMs`, capped, with "equal
 * jitter" (half fixed, half random) so that retries of a burst spread out without ever retrying at once.
 */
export function backoffMs(attempt: number, options: BackoffOptions): number {
  const exp = Math.min(options.capMs, options.baseMs * 2 ** Math.max(0, attempt - 1));
  const random = options.random ?? Math.random;
  return Math.round(exp / 2 + random() * (exp / 2));
}

/** Parses a `Retry-After` header (seconds or an HTTP date) into milliseconds; undefined when absent or bad. */
export function retryAfterMs(header: string | null | undefined, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
