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
  const bodyLength = body?.byteLength ?? 0;
  const out = new Uint8Array(8 + head.byteLength + bodyLength);
  const view = new DataView(out.buffer);
  view.setUint32(0, 4 + head.byteLength + bodyLength, true);
  view.setUint32(4, head.byteLength, true);
  out.set(head, 8);
  if (body) out.set(body, 8 + head.byteLength);
  return out;
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
 * FrameWriter writes frames to a stream without one write per frame under load: a frame is written at once
 * when the stream is idle; frames that arrive while a write is in flight are joined into the next write.
 */
export class FrameWriter {
  private queue: Uint8Array[] = [];
  private busy = false;

  constructor(private readonly conn: Deno.Conn, private readonly onError: () => void) {}

  /** Queues one frame. */
  write(header: Record<string, unknown>, body: Uint8Array | null = null): void {
    this.queue.push(encodeFrame(header, body));
    if (!this.busy) this.flush();
  }

  private flush(): void {
    const frames = this.queue;
    this.queue = [];
    let chunk: Uint8Array;
    if (frames.length === 1) chunk = frames[0]!;
    else {
      chunk = new Uint8Array(frames.reduce((n, f) => n + f.byteLength, 0));
      let at = 0;
      for (const f of frames) {
        chunk.set(f, at);
        at += f.byteLength;
      }
    }
    this.busy = true;
    this.writeAll(chunk).then(() => {
      this.busy = false;
      if (this.queue.length > 0) this.flush();
    }, this.onError);
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
