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
 * own: a client that dribbles its body would hold the request forever). Past either limit the matching error is
 * thrown; a declared length above `maxBytes` is refused before reading.
 */
export async function readBody(req: Request, limits: BodyLimits): Promise<Uint8Array> {
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > limits.maxBytes) throw limits.tooLarge();
  if (req.body === null) return new Uint8Array(0);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(limits.timedOut()), limits.timeoutMs);
  });
  const reading = declared !== null ? req.bytes() : readChunks(req.body, limits);
  reading.catch(() => {}); // after a timeout the read goes on until the client sends the rest or leaves
  try {
    return await Promise.race([reading, late]);
  } finally {
    clearTimeout(timer);
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
