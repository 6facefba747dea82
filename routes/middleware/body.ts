import { concatBytes } from "../../services/encoding.ts";

/** Limits of {@linkcode readBody}. */
export interface BodyLimits {
  /** The most bytes the body may have. */
  maxBytes: number;
  /** How long the whole body may take to arrive once the handler asks for it. */
  timeoutMs: number;
  tooLarge: () => Error;
  timedOut: () => Error;
}

/**
 * Reads the body of `req` whole, within `maxBytes` and before `timeoutMs` (Deno.serve has no read timeout of its
 * own: a client that dribbles its body would hold the request forever). Past either limit the read is cancelled
 * and the matching error thrown.
 */
export async function readBody(req: Request, limits: BodyLimits): Promise<Uint8Array> {
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > limits.maxBytes) throw limits.tooLarge();
  const body = req.body;
  if (body === null) return new Uint8Array(0);
  const reader = body.getReader();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    reader.cancel().catch(() => {});
  }, limits.timeoutMs);
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > limits.maxBytes) {
        reader.cancel().catch(() => {});
        throw limits.tooLarge();
      }
      chunks.push(value);
    }
  } catch (err) {
    if (timedOut) throw limits.timedOut();
    throw err;
  } finally {
    clearTimeout(timer);
  }
  if (timedOut) throw limits.timedOut();
  return chunks.length === 1 ? chunks[0]! : concatBytes(chunks);
}
