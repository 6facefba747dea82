/**
 * Frontend messages of the PostgreSQL protocol (v3), written into one growing buffer: a whole pipeline becomes
 * one Uint8Array without an allocation per message. PGlite's own serializer allocates and copies at every
 * message, which cost more than a third of the engine's own time for a small read.
 * Parameters and results travel in the text format.
 */
export class WireWriter {
  private buf: Uint8Array;
  private view: DataView;
  private pos = 0;
  private static readonly encoder = new TextEncoder();

  constructor(capacity = 1024) {
    this.buf = new Uint8Array(capacity);
    this.view = new DataView(this.buf.buffer);
  }

  /** Parse: prepares `text` as the statement `name` ("" for the unnamed one); parameter types are inferred. */
  parse(name: string, text: string): this {
    const start = this.begin(0x50);
    this.cstring(name).cstring(text).int16(0);
    return this.end(start);
  }

  /** Bind: the unnamed portal of statement `name`, with `values` as text (null for SQL NULL). */
  bind(name: string, values: (string | null)[]): this {
    const start = this.begin(0x42);
    this.cstring("").cstring(name).int16(0).int16(values.length);
    for (const v of values) {
      if (v === null) {
        this.int32(-1);
        continue;
      }
      const at = this.pos;
      this.int32(0);
      const n = this.string(v);
      this.view.setInt32(at, n);
    }
    this.int16(0);
    return this.end(start);
  }

  /** Describe the unnamed portal: its RowDescription (or NoData) comes back. */
  describePortal(): this {
    const start = this.begin(0x44);
    this.byte(0x50).cstring("");
    return this.end(start);
  }

  /** Execute the unnamed portal, all rows. */
  execute(): this {
    const start = this.begin(0x45);
    this.cstring("").int32(0);
    return this.end(start);
  }

  /** Close the prepared statement `name`. */
  closeStatement(name: string): this {
    const start = this.begin(0x43);
    this.byte(0x53).cstring(name);
    return this.end(start);
  }

  /** Query: `text` in the simple protocol. */
  query(text: string): this {
    const start = this.begin(0x51);
    this.cstring(text);
    return this.end(start);
  }

  /** Sync: ends the batch (and an implicit transaction); the server answers ReadyForQuery. */
  sync(): this {
    return this.end(this.begin(0x53));
  }

  /** The messages written so far. */
  bytes(): Uint8Array {
    return this.buf.subarray(0, this.pos);
  }

  private begin(code: number): number {
    this.ensure(5);
    this.buf[this.pos] = code;
    const start = this.pos + 1;
    this.pos += 5;
    return start;
  }

  private end(start: number): this {
    this.view.setInt32(start, this.pos - start);
    return this;
  }

  private byte(b: number): this {
    this.ensure(1);
    this.buf[this.pos++] = b;
    return this;
  }

  private int16(n: number): this {
    this.ensure(2);
    this.view.setInt16(this.pos, n);
    this.pos += 2;
    return this;
  }

  private int32(n: number): this {
    this.ensure(4);
    this.view.setInt32(this.pos, n);
    this.pos += 4;
    return this;
  }

  /** Writes `s` as UTF-8 and returns its length in bytes. */
  private string(s: string): number {
    this.ensure(s.length * 3);
    const { written } = WireWriter.encoder.encodeInto(s, this.buf.subarray(this.pos));
    this.pos += written;
    return written;
  }

  /** A NUL-terminated string: one that holds a NUL would end early, so it is refused. */
  private cstring(s: string): this {
    if (s.includes("\0")) throw new TypeError("a protocol string cannot hold a NUL character");
    this.string(s);
    return this.byte(0);
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const grown = new Uint8Array(Math.max(this.buf.length * 2, this.pos + n));
    grown.set(this.buf.subarray(0, this.pos));
    this.buf = grown;
    this.view = new DataView(grown.buffer);
  }
}
