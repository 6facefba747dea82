import nodeAssert from "node:assert/strict";

/** Asserts that a value is truthy. */
export function assert(value: unknown, message?: string): asserts value {
  nodeAssert.ok(value, message);
}

/** Asserts deep, strict equality. */
export function assertEquals<T>(actual: unknown, expected: T, message?: string): asserts actual is T {
  nodeAssert.deepStrictEqual(actual, expected, message);
}

/** Asserts that two values differ. */
export function assertNotEquals(actual: unknown, expected: unknown, message?: string): void {
  nodeAssert.notDeepStrictEqual(actual, expected, message);
}

/** Asserts that a string matches a pattern. */
export function assertMatch(actual: string, pattern: RegExp, message?: string): void {
  nodeAssert.match(actual, pattern, message);
}

/** Asserts that a string does not match a pattern. */
export function assertNotMatch(actual: string, pattern: RegExp, message?: string): void {
  nodeAssert.doesNotMatch(actual, pattern, message);
}

/** Asserts that a promise rejects, optionally with a message matching `pattern`. */
export async function assertRejects(fn: () => Promise<unknown>, pattern?: RegExp): Promise<void> {
  await nodeAssert.rejects(fn, (err: Error) => !pattern || pattern.test(err.message));
}

/**
 * Waits for `promise`, failing with `what` if it has not settled within `ms`. A liveness bound, not a timing
 * claim: it turns a wait that would hang the suite into a failure that says which wait it was.
 */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Still waiting after ${ms / 1000} s: ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}
