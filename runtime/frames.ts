/** A message between the platform and a runtime host: a JSON header and optional bytes. */
export interface Frame {
  header: Record<string, unknown>;
  body: Uint8Array | null;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Largest frame accepted from a peer (bodies are capped well below this). */
export const MAX_FRAME_BYTES = 64 * 1024 * 1024;

/** Encodes a frame as `[u32 total][u32 header length][header JSON][body]`, little-endian. */
export function encodeFrame(header: Record<string, unknown>, body: Uint8Array | null = null): Uint8Array {
  const head = encoder.encode(JSON.stringify(header));
  const out = new Uint8Array(8 + head.byteLength + (body?.byteLength ?? 0));
  writeFrame(out, 0, head, body);
  return out;
}

function writeFrame(out: Uint8Array, at: number, head: Uint8Array, body: Uint8Array | null): number {
  const bodyLength = body?.byteLength ?? 0;
  const view = new DataView(out.buffer, out.byteOffset + at, 8);
  view.setUint32(0, 4 + head.byteLength + bodyLength, true);
  view.setUint32(4, head.byteLength, true);
  out.set(head, at + 8);
  if (body) out.set(body, at + 8 + head.byteLength);
  return at + 8 + head.byteLength + bodyLength;
}

/** FrameReader reassembles frames from a byte stream delivered in arbitrary chunks. */
export class FrameReader {
  private buffer: Uint8Array = new Uint8Array(0);

  /** Adds bytes and returns every frame now complete; throws on a malformed or oversized frame. */
  push(chunk: Uint8Array): Frame[] {
    if (this.buffer.byteLength === 0) {
      this.buffer = chunk;
    } else {
      const joined = new Uint8Array(this.buffer.byteLength + chunk.byteLength);
      joined.set(this.buffer);
      joined.set(chunk, this.buffer.byteLength);
      this.buffer = joined;
    }
    const frames: Frame[] = [];
    let offset = 0;
    while (this.buffer.byteLength - offset >= 8) {
      const view = new DataView(this.buffer.buffer, this.buffer.byteOffset + offset);
      const total = view.getUint32(0, true);
      const headLength = view.getUint32(4, true);
      if (total > MAX_FRAME_BYTES || headLength > total - 4) throw new Error("Malformed frame");
      if (this.buffer.byteLength - offset < 4 + total) break;
      const headStart = offset + 8;
      const header = JSON.parse(decoder.decode(this.buffer.subarray(headStart, headStart + headLength)));
      if (typeof header !== "object" || header === null) throw new Error("Malformed frame header");
      const bodyLength = total - 4 - headLength;
      const body = bodyLength > 0
        ? this.buffer.slice(headStart + headLength, headStart + headLength + bodyLength)
        : null;
      frames.push({ header, body });
      offset += 4 + total;
    }
    this.buffer = offset === this.buffer.byteLength ? new Uint8Array(0) : this.buffer.slice(offset);
    return frames;
  }
}

/**
 * FrameWriter writes frames to a stream with as few writes as it can: the frames queued during one turn of
 * the event loop leave together in one write at the end of the turn (setImmediate: a few microseconds, where
 * a zero timeout costs milliseconds), and frames queued while a write is in flight leave with the next one.
 * Each write is a system call on both ends and, on the host, a wake-up of the worker: batching them is most of
 * the cost of a call under load.
 */
export class FrameWriter {
  private heads: Uint8Array[] = [];
  private bodies: (Uint8Array | null)[] = [];
  private size = 0;
  private busy = false;
  private scheduled = false;

  constructor(private readonly conn: Deno.Conn, private readonly onError: () => void) {}

  /** Queues one frame. */
  write(header: Record<string, unknown>, body: Uint8Array | null = null): void {
    const head = encoder.encode(JSON.stringify(header));
    this.heads.push(head);
    this.bodies.push(body);
    this.size += 8 + head.byteLength + (body?.byteLength ?? 0);
    if (!this.busy && !this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    if (this.busy || this.heads.length === 0) return;
    const chunk = new Uint8Array(this.size);
    let at = 0;
    for (let i = 0; i < this.heads.length; i++) at = writeFrame(chunk, at, this.heads[i]!, this.bodies[i]!);
    this.heads = [];
    this.bodies = [];
    this.size = 0;
    this.busy = true;
    this.writeAll(chunk).then(() => {
      this.busy = false;
      this.flush();
    }, this.onError);
  };

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
