import { concatBytes } from "../lib/encoding.ts";

/** A message between the platform and a runtime host: a JSON header (a message of protocol.ts) and optional bytes. */
interface Frame<H> {
  header: H;
  body: Uint8Array | null;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Largest frame accepted from a peer (bodies are capped well below this). */
const MAX_FRAME_BYTES = 64 * 1024 * 1024;

/** The header type of a frame that carries several frames (one JSON header to encode and parse, not many). */
const BATCH = "batch";
/** Frames one batch frame carries at most (a peer that sends more is malformed). */
const MAX_BATCH_FRAMES = 4096;
/** Bodies one batch frame carries at most; a larger body travels in a frame of its own. */
const BATCH_BYTES = 4 * 1024 * 1024;

/** Encodes a frame as `[u32 total][u32 header length][header JSON][body]`, little-endian. */
export function encodeFrame(header: object, body: Uint8Array | null = null): Uint8Array {
  const head = encoder.encode(JSON.stringify(header));
  const bodyLength = body?.byteLength ?? 0;
  const out = new Uint8Array(8 + head.byteLength + bodyLength);
  const view = new DataView(out.buffer);
  view.setUint32(0, 4 + head.byteLength + bodyLength, true);
  view.setUint32(4, head.byteLength, true);
  out.set(head, 8);
  if (body) out.set(body, 8 + head.byteLength);
  return out;
}

/**
 * FrameReader reassembles frames from a byte stream delivered in arbitrary chunks. `H` is the type of the headers
 * the peer sends: the reader checks only that each is an object (a receiver that does not trust its peer uses
 * protocol.ts's Received).
 */
export class FrameReader<H extends object = Record<string, unknown>> {
  // Bytes not yet parsed are buffer[start, end). Appending copies only the new chunk (the buffer grows by
  // doubling), so a large frame arriving in many reads costs linear time, not a copy of all so far per read.
  private buffer: Uint8Array = new Uint8Array(0);
  private start = 0;
  private end = 0;

  /** `maxFrameBytes`: the largest frame this peer may send (a larger one is malformed). */
  constructor(private readonly maxFrameBytes = MAX_FRAME_BYTES) {}

  /**
   * Adds bytes and returns every frame now complete; throws on a malformed or oversized frame. The chunk becomes
   * the reader's (bodies are views into it): the caller must not change it afterwards.
   */
  push(chunk: Uint8Array): Frame<H>[] {
    this.append(chunk);
    const frames: Frame<H>[] = [];
    while (this.end - this.start >= 8) {
      const offset = this.start;
      const view = new DataView(this.buffer.buffer, this.buffer.byteOffset + offset);
      const total = view.getUint32(0, true);
      const headLength = view.getUint32(4, true);
      if (total > this.maxFrameBytes || headLength > total - 4) throw new Error("Malformed frame");
      if (this.end - offset < 4 + total) break;
      const headStart = offset + 8;
      const header = JSON.parse(decoder.decode(this.buffer.subarray(headStart, headStart + headLength)));
      if (typeof header !== "object" || header === null) throw new Error("Malformed frame header");
      const bodyStart = headStart + headLength;
      const bodyEnd = offset + 4 + total;
      if (header.t === BATCH) this.unbatch(header, bodyStart, bodyEnd, frames);
      else {
        const body = bodyEnd > bodyStart ? this.buffer.subarray(bodyStart, bodyEnd) : null;
        frames.push({ header, body });
      }
      this.start = bodyEnd;
    }
    if (this.start === this.end) {
      this.buffer = new Uint8Array(0);
      this.start = this.end = 0;
    }
    return frames;
  }

  // Parsed frames keep views into the bytes before `start`: new bytes are only ever written after `end`, or
  // into a new buffer.
  private append(chunk: Uint8Array): void {
    if (this.end === 0) {
      this.buffer = chunk;
      this.end = chunk.byteLength;
      return;
    }
    if (this.buffer.byteLength - this.end < chunk.byteLength) {
      const pending = this.end - this.start;
      const grown = new Uint8Array(Math.max(2 * (pending + chunk.byteLength), 64 * 1024));
      grown.set(this.buffer.subarray(this.start, this.end));
      this.buffer = grown;
      this.start = 0;
      this.end = pending;
    }
    this.buffer.set(chunk, this.end);
    this.end += chunk.byteLength;
  }

  /** Splits a batch frame: its header lists the frames' headers and body sizes, its body their bodies. */
  private unbatch(header: Record<string, unknown>, start: number, end: number, out: Frame<H>[]): void {
    const { frames, sizes } = header as { frames?: unknown; sizes?: unknown };
    if (
      !Array.isArray(frames) || !Array.isArray(sizes) || frames.length !== sizes.length ||
      frames.length > MAX_BATCH_FRAMES
    ) {
      throw new Error("Malformed batch frame");
    }
    let at = start;
    for (let i = 0; i < frames.length; i++) {
      const h = frames[i];
      const size = sizes[i];
      if (typeof h !== "object" || h === null || !Number.isInteger(size) || size < 0 || at + size > end) {
        throw new Error("Malformed batch frame");
      }
      // A view, not a copy: the chunk read is the reader's own (readChunks copies it out of its buffer).
      out.push({ header: h, body: size > 0 ? this.buffer.subarray(at, at + size) : null });
      at += size;
    }
    if (at !== end) throw new Error("Malformed batch frame");
  }
}

/**
 * FrameWriter writes frames to a stream with as few writes as it can: the frames queued during one turn of
 * the event loop leave together in one write at the end of the turn (setImmediate: a few microseconds, where
 * a zero timeout costs milliseconds), as one batch frame, and frames queued while a write is in flight leave
 * with the next one.
 * Each write is a system call on both ends and, on the host, a wake-up of the worker: batching them is most of
 * the cost of a call under load.
 */
export class FrameWriter<H extends object = Record<string, unknown>> {
  private headers: H[] = [];
  private bodies: (Uint8Array | null)[] = [];
  private busy = false;
  private scheduled = false;

  constructor(private readonly conn: Deno.Conn, private readonly onError: () => void) {}

  /** Queues one frame (`header` and `body` must not change afterwards: they are encoded at the flush). */
  write(header: H, body: Uint8Array | null = null): void {
    this.headers.push(header);
    this.bodies.push(body);
    if (!this.busy && !this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    if (this.busy || this.headers.length === 0) return;
    const parts = this.encode(this.headers, this.bodies);
    this.headers = [];
    this.bodies = [];
    const chunk = parts.length === 1 ? parts[0]! : concatBytes(parts);
    this.busy = true;
    this.writeAll(chunk).then(() => {
      this.busy = false;
      this.flush();
    }, this.onError);
  };

  /** Encodes the queued frames: one frame alone, several as batch frames of at most BATCH_BYTES of bodies. */
  private encode(headers: H[], bodies: (Uint8Array | null)[]): Uint8Array[] {
    if (headers.length === 1) return [encodeFrame(headers[0]!, bodies[0]!)];
    const out: Uint8Array[] = [];
    let from = 0;
    while (from < headers.length) {
      let to = from;
      let size = 0;
      while (
        to < headers.length && to - from < MAX_BATCH_FRAMES &&
        (to === from || size + (bodies[to]?.byteLength ?? 0) <= BATCH_BYTES)
      ) {
        size += bodies[to]?.byteLength ?? 0;
        to++;
      }
      if (to - from === 1) out.push(encodeFrame(headers[from]!, bodies[from]!));
      else {
        const group = bodies.slice(from, to);
        const head = encoder.encode(JSON.stringify({
          t: BATCH,
          frames: headers.slice(from, to),
          sizes: group.map((b) => b?.byteLength ?? 0),
        }));
        const frame = new Uint8Array(8 + head.byteLength + size);
        const view = new DataView(frame.buffer);
        view.setUint32(0, 4 + head.byteLength + size, true);
        view.setUint32(4, head.byteLength, true);
        frame.set(head, 8);
        let at = 8 + head.byteLength;
        for (const b of group) {
          if (!b) continue;
          frame.set(b, at);
          at += b.byteLength;
        }
        out.push(frame);
      }
      from = to;
    }
    return out;
  }

  private async writeAll(chunk: Uint8Array): Promise<void> {
    let offset = 0;
    while (offset < chunk.byteLength) offset += await this.conn.write(chunk.subarray(offset));
  }

  /** Closes the connection. */
  close(): void {
    try {
      this.conn.close();
    } catch { /* already closed */ }
  }
}

/** Yields the chunks read from a connection until it closes (direct reads: cheaper than its stream). */
export async function* readChunks(conn: Deno.Conn): AsyncGenerator<Uint8Array> {
  const buffer = new Uint8Array(256 * 1024);
  for (;;) {
    let n: number | null;
    try {
      n = await conn.read(buffer);
    } catch {
      return;
    }
    if (n === null) return;
    yield buffer.slice(0, n);
  }
}
