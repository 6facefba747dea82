/**
 * Backend messages of the PostgreSQL protocol (v3), read from the bytes a batch produced: the few a pipeline
 * needs, each as a small plain object. PGlite's own reader builds an object per message through class private
 * fields: it took about a sixth of the engine thread's time on a small read.
 */

/** An error the database reported, with the fields of its ErrorResponse under their usual names. */
export class DatabaseError extends Error {
  severity?: string;
  code?: string;
  detail?: string;
  hint?: string;
  position?: string;
  internalPosition?: string;
  internalQuery?: string;
  where?: string;
  schema?: string;
  table?: string;
  column?: string;
  dataType?: string;
  constraint?: string;
  file?: string;
  line?: string;
  routine?: string;

  constructor(fields: Record<string, string>) {
    super(fields.M ?? "Database error");
    this.name = "DatabaseError";
    const named: [keyof DatabaseError, string][] = [
      ["severity", "S"],
      ["code", "C"],
      ["detail", "D"],
      ["hint", "H"],
      ["position", "P"],
      ["internalPosition", "p"],
      ["internalQuery", "q"],
      ["where", "W"],
      ["schema", "s"],
      ["table", "t"],
      ["column", "c"],
      ["dataType", "d"],
      ["constraint", "n"],
      ["file", "F"],
      ["line", "L"],
      ["routine", "R"],
    ];
    for (const [key, code] of named) {
      if (fields[code] !== undefined) (this as Record<string, unknown>)[key] = fields[code];
    }
  }
}

/** The messages a pipeline reads; the others (BindComplete, NoData, notices, …) are skipped. */
export type BackendMessage =
  | { type: "parseComplete" }
  | { type: "rowDescription"; fields: { name: string; typeOid: number }[] }
  | { type: "dataRow"; values: (string | null)[] }
  | { type: "commandComplete" }
  | { type: "error"; error: DatabaseError }
  | { type: "notification"; channel: string; payload: string }
  | { type: "readyForQuery"; status: string };

// ignoreBOM: a value that starts with U+FEFF keeps it (a CSV handler's BOM); the default decoder drops it.
const decoder = new TextDecoder("utf-8", { ignoreBOM: true });

/** Reads the complete messages of `bytes`, in order. */
export function readBackend(bytes: Uint8Array): BackendMessage[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: BackendMessage[] = [];
  let pos = 0;
  const text = (from: number, to: number) => decoder.decode(bytes.subarray(from, to));
  /** A NUL-terminated string at `pos`, which moves past it. */
  const cstring = () => {
    const end = bytes.indexOf(0, pos);
    const s = text(pos, end);
    pos = end + 1;
    return s;
  };
  while (pos + 5 <= bytes.length) {
    const code = bytes[pos]!;
    const end = pos + 1 + view.getInt32(pos + 1);
    if (end > bytes.length) break;
    pos += 5;
    switch (code) {
      case 0x31: // ParseComplete
        out.push({ type: "parseComplete" });
        break;
      case 0x54: { // RowDescription
        const n = view.getInt16(pos);
        pos += 2;
        const fields = new Array<{ name: string; typeOid: number }>(n);
        for (let i = 0; i < n; i++) {
          const name = cstring();
          fields[i] = { name, typeOid: view.getInt32(pos + 6) };
          pos += 18;
        }
        out.push({ type: "rowDescription", fields });
        break;
      }
      case 0x44: { // DataRow
        const n = view.getInt16(pos);
        pos += 2;
        const values = new Array<string | null>(n);
        for (let i = 0; i < n; i++) {
          const len = view.getInt32(pos);
          pos += 4;
          if (len < 0) values[i] = null;
          else {
            values[i] = text(pos, pos + len);
            pos += len;
          }
        }
        out.push({ type: "dataRow", values });
        break;
      }
      case 0x43: // CommandComplete
      case 0x49: // EmptyQueryResponse: a statement that was empty, done as well
        out.push({ type: "commandComplete" });
        break;
      case 0x45: { // ErrorResponse
        const fields: Record<string, string> = {};
        while (pos < end && bytes[pos] !== 0) {
          const key = String.fromCharCode(bytes[pos++]!);
          fields[key] = cstring();
        }
        out.push({ type: "error", error: new DatabaseError(fields) });
        break;
      }
      case 0x41: { // NotificationResponse: pid, channel, payload
        pos += 4;
        const channel = cstring();
        out.push({ type: "notification", channel, payload: cstring() });
        break;
      }
      case 0x5a: // ReadyForQuery
        out.push({ type: "readyForQuery", status: String.fromCharCode(bytes[pos]!) });
        break;
    }
    pos = end;
  }
  return out;
}
