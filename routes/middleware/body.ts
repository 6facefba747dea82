import { concatBytes } from "../../lib/encoding.ts";
import { AppError, errors } from "../../lib/errors.ts";

/** Limits of {@linkcode readBody}. */
export interface BodyLimits {
  /** The most bytes the body may have. */
  maxBytes: number;
  /** How long the whole body may take to arrive once the handler asks for it. */
  timeoutMs: number;
  tooLarge: () => Error;
  timedOut: () => Error;
}

/** A read in flight and when it must have ended. */
interface PendingRead {
  deadline: number;
  fail: (err: Error) => void;
  error: () => Error;
  reading?: Promise<Uint8Array>;
}

// Reads in flight. One interval, alive only while there are reads, fails those past their deadline: a timer of
// each read's own cost ~4 µs per request (set, clear and the promise it rejects), a tenth of a small invoke.
const pending = new Set<PendingRead>();
let sweeper: ReturnType<typeof setInterval> | undefined;
const SWEEP_MS = 100;

function sweep(): void {
  const now = performance.now();
  for (const read of pending) {
    if (read.deadline > now) continue;
    pending.delete(read);
    read.reading?.catch(() => {}); // it goes on until the client sends the rest or leaves; nobody awaits it now
    read.fail(read.error());
  }
  if (pending.size === 0) {
    clearInterval(sweeper);
    sweeper = undefined;
  }
}

/**
 * Reads the body of `req` whole, within `maxBytes` and before `timeoutMs` (to the nearest 100 ms; Deno.serve has
 * no read timeout of its own: a client that dribbles its body would hold the request forever). Past either limit
 * the matching error is thrown; a declared length above `maxBytes` is refused before reading.
 */
export async function readBody(req: Request, limits: BodyLimits): Promise<Uint8Array> {
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > limits.maxBytes) throw limits.tooLarge();
  // A declared length needs no look at `req.body`, which would build a stream that `bytes()` then goes without.
  const body = declared === null ? req.body : undefined;
  if (body === null) return new Uint8Array(0);
  // One promise settled by the read or, past the deadline, by the sweep (no race of two per request).
  const { promise, resolve, reject } = Promise.withResolvers<Uint8Array>();
  const read: PendingRead = {
    deadline: performance.now() + limits.timeoutMs,
    fail: reject,
    error: limits.timedOut,
  };
  pending.add(read);
  sweeper ??= setInterval(sweep, SWEEP_MS);
  read.reading = body === undefined ? req.bytes() : readChunks(body, limits);
  read.reading.then(resolve, reject);
  try {
    return await promise;
  } catch (err) {
    // Past a limit, the limit's own error; a broken chunked encoding or a reset stream is the client's fault.
    throw err instanceof AppError ? err : errors.unreadableBody();
  } finally {
    pending.delete(read);
  }
}

/** A body of undeclared length (chunked), failing as soon as it passes `maxBytes`. */
async function readChunks(body: ReadableStream<Uint8Array>, limits: BodyLimits): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > limits.maxBytes) throw limits.tooLarge();
    chunks.push(chunk);
  }
  return chunks.length === 1 ? chunks[0]! : concatBytes(chunks);
}
