/**
 * The frames of the Phoenix channel protocol as realtime-js (supabase-js) speaks it. vsn 1.0.0: JSON objects
 * `{topic, event, payload, ref, join_ref}`. vsn 2.0.0: JSON arrays `[join_ref, ref, topic, event, payload]`, and
 * binary broadcast frames: kind 3 (a client's broadcast push) in, kind 4 (a broadcast) out, each with a JSON
 * payload (encoding 1) or raw bytes (encoding 0, a `Uint8Array` here).
 */

/** The protocol versions realtime-js connects with (`?vsn=`). */
export type Vsn = "1.0.0" | "2.0.0";

/** One Phoenix message. */
export interface PhoenixMessage {
  join_ref: string | null;
  ref: string | null;
  topic: string;
  event: string;
  payload: unknown;
}

/** Why a frame was refused, with what could be read of it (to address the error reply). */
export interface FrameError {
  reason: string;
  topic?: string;
  ref?: string | null;
  join_ref?: string | null;
}

/** Longest topic (`realtime:` and a 255-character channel name). */
export const MAX_TOPIC_LENGTH = 264;
const MAX_REF_LENGTH = 64;
const MAX_EVENT_LENGTH = 255;

const KIND_USER_BROADCAST_PUSH = 3;
const KIND_USER_BROADCAST = 4;
const ENCODING_BINARY = 0;
const ENCODING_JSON = 1;

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

type Decoded = { ok: true; message: PhoenixMessage } | { ok: false; error: FrameError };

/** Decodes one client frame. */
export function decodeFrame(vsn: Vsn, data: string | Uint8Array): Decoded {
  if (typeof data !== "string") {
    if (vsn === "1.0.0") return fail("Binary frames need vsn=2.0.0");
    return decodeBinary(data);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(data);
  } catch {
    return fail("Frame is not valid JSON");
  }
  if (vsn === "2.0.0") {
    if (!Array.isArray(raw) || raw.length !== 5) {
      return fail("A vsn 2.0.0 frame is a JSON array [join_ref, ref, topic, event, payload]");
    }
    const [join_ref, ref, topic, event, payload] = raw;
    return check({ join_ref, ref, topic, event, payload });
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    return fail("A vsn 1.0.0 frame is a JSON object {topic, event, payload, ref}");
  }
  const o = raw as Record<string, unknown>;
  return check({
    join_ref: o.join_ref ?? null,
    ref: o.ref,
    topic: o.topic,
    event: o.event,
    payload: o.payload,
  });
}

function fail(reason: string, partial: Omit<FrameError, "reason"> = {}): Decoded {
  return { ok: false, error: { reason, ...partial } };
}

function refOf(value: unknown): string | null | undefined {
  if (value === null || value === undefined) return null;
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  if (typeof value === "string" && value.length <= MAX_REF_LENGTH) return value;
  return undefined;
}

function check(
  m: { join_ref: unknown; ref: unknown; topic: unknown; event: unknown; payload: unknown },
): Decoded {
  const ref = refOf(m.ref);
  const join_ref = refOf(m.join_ref);
  const topic = typeof m.topic === "string" && m.topic.length <= MAX_TOPIC_LENGTH ? m.topic : undefined;
  const partial = { topic, ref: ref ?? null, join_ref: join_ref ?? null };
  if (ref === undefined || join_ref === undefined) {
    return fail(`ref and join_ref must be strings of at most ${MAX_REF_LENGTH} characters`, partial);
  }
  if (topic === undefined) {
    return fail(`topic must be a string of at most ${MAX_TOPIC_LENGTH} characters`, partial);
  }
  if (typeof m.event !== "string" || m.event.length === 0 || m.event.length > MAX_EVENT_LENGTH) {
    return fail(`event must be a string of 1-${MAX_EVENT_LENGTH} characters`, partial);
  }
  const payload = m.payload ?? {};
  if (typeof payload !== "object" || Array.isArray(payload)) {
    return fail("payload must be a JSON object", partial);
  }
  return { ok: true, message: { join_ref, ref, topic, event: m.event, payload } };
}

/** Kind 3: [3, join_ref len, ref len, topic len, event len, meta len, encoding, join_ref, ref, topic, event, meta, payload]. */
function decodeBinary(bytes: Uint8Array): Decoded {
  const HEADER = 7;
  if (bytes.length < HEADER) return fail("Binary frame is too short");
  if (bytes[0] !== KIND_USER_BROADCAST_PUSH) {
    return fail(`Unknown binary frame kind ${bytes[0]}: only 3 (broadcast push) is accepted`);
  }
  const lengths = [bytes[1]!, bytes[2]!, bytes[3]!, bytes[4]!, bytes[5]!];
  const encoding = bytes[6]!;
  let offset = HEADER;
  const fields: string[] = [];
  for (const length of lengths) {
    if (offset + length > bytes.length) return fail("Binary frame is shorter than its header says");
    try {
      fields.push(decoder.decode(bytes.subarray(offset, offset + length)));
    } catch {
      return fail("Binary frame header is not UTF-8");
    }
    offset += length;
  }
  const [join_ref, ref, topic, event, meta] = fields as [string, string, string, string, string];
  const partial = { topic, ref: ref || null, join_ref: join_ref || null };
  if (encoding !== ENCODING_JSON && encoding !== ENCODING_BINARY) {
    return fail(`Unknown payload encoding ${encoding}`, partial);
  }
  let payload: unknown;
  let metadata: unknown = {};
  try {
    // A copy: the socket's buffer is not kept alive by a broadcast that outlives it.
    payload = encoding === ENCODING_BINARY
      ? bytes.slice(offset)
      : JSON.parse(decoder.decode(bytes.subarray(offset)));
    if (meta) metadata = JSON.parse(meta);
  } catch {
    return fail("Binary broadcast payload or metadata is not valid UTF-8 JSON", partial);
  }
  if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata)) {
    return fail("Binary broadcast metadata must be a JSON object", partial);
  }
  return check({
    join_ref: join_ref || null,
    ref: ref || null,
    topic,
    event: "broadcast",
    payload: { ...metadata, type: "broadcast", event, payload },
  });
}

/** Encodes a server message as text. */
export function encodeMessage(vsn: Vsn, m: PhoenixMessage): string {
  if (vsn === "2.0.0") return JSON.stringify([m.join_ref, m.ref, m.topic, m.event, m.payload]);
  return JSON.stringify({
    topic: m.topic,
    event: m.event,
    payload: m.payload,
    ref: m.ref,
    join_ref: m.join_ref,
  });
}

/**
 * Kind 4 (vsn 2.0.0): [4, topic len, event len, meta len, encoding, topic, event, meta, payload]. A `Uint8Array`
 * payload goes as raw bytes (encoding 0), anything else as JSON (encoding 1); `meta` (a replayed message's
 * `{replayed, id}`) as JSON. Null when the topic, the event or the meta is longer than a one-byte length allows.
 * The frame is a whole ArrayBuffer, which a WebSocket sends with less work than a view.
 */
export function encodeUserBroadcast(
  topic: string,
  event: string,
  payload: unknown,
  meta?: Record<string, unknown>,
): ArrayBuffer | null {
  const t = encoder.encode(topic);
  const e = encoder.encode(event);
  const m = meta ? encoder.encode(JSON.stringify(meta)) : new Uint8Array(0);
  if (t.length > 255 || e.length > 255 || m.length > 255) return null;
  const binary = payload instanceof Uint8Array;
  const body = binary ? payload : encoder.encode(JSON.stringify(payload ?? {}));
  const out = new Uint8Array(5 + t.length + e.length + m.length + body.length);
  out.set([KIND_USER_BROADCAST, t.length, e.length, m.length, binary ? ENCODING_BINARY : ENCODING_JSON]);
  out.set(t, 5);
  out.set(e, 5 + t.length);
  out.set(m, 5 + t.length + e.length);
  out.set(body, 5 + t.length + e.length + m.length);
  return out.buffer;
}
