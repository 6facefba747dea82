/**
 * Runs `fn` with a signal that aborts when `signal` does, or after `ms` with a `TimeoutError` (as
 * `AbortSignal.timeout` would), and releases its timer and listener as soon as `fn` settles. A call made many
 * times a second (a notification's send) then holds nothing once done: `AbortSignal.timeout` and
 * `AbortSignal.any` keep a timer and signals alive until the timeout fires, whether or not the call ended.
 *
 * @example
 * ```ts
 * const res = await withDeadline(null, 15_000, (signal) => fetch("https://example.com", { signal }));
 * ```
 */
export async function withDeadline<T>(
  signal: AbortSignal | null,
  ms: number,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException("Signal timed out.", "TimeoutError")), ms);
  const follow = () => controller.abort(signal!.reason);
  if (signal?.aborted) follow();
  else signal?.addEventListener("abort", follow, { once: true });
  try {
    return await fn(controller.signal);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", follow);
  }
}

/** `work`'s value, or `fallback` once `ms` have passed (`work` goes on; its timer is released either way). */
export async function valueWithin<T>(work: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<T>((resolve) => timer = setTimeout(() => resolve(fallback), ms));
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
