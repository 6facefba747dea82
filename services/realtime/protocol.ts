import { z } from "zod";

/** Channel names: 1-255 printable characters without spaces. */
export const CHANNEL_NAME = /^[A-Za-z0-9_\-:.@/]{1,255}$/;

const ref = z.union([z.string().max(100), z.number()]).optional();
const channel = z.string().regex(CHANNEL_NAME, "must be 1-255 letters, digits or _-:.@/");

const PostgresChange = z.strictObject({
  event: z.enum(["INSERT", "UPDATE", "DELETE", "*"]).default("*"),
  schema: z.string().max(63).default("public"),
  table: z.string().min(1).max(63),
  filter: z.string().max(1024).optional(),
});

/** The messages a client sends (docs/realtime.md), discriminated by `type`. */
export const ClientMessage = z.discriminatedUnion("type", [
  z.strictObject({
    type: z.literal("subscribe"),
    ref,
    channel,
    postgres_changes: z.array(PostgresChange).max(20).optional(),
    presence: z.strictObject({ key: z.string().min(1).max(255) }).optional(),
    broadcast: z.strictObject({ self: z.boolean().optional(), ack: z.boolean().optional() }).optional(),
  }),
  z.strictObject({ type: z.literal("unsubscribe"), ref, channel }),
  z.strictObject({
    type: z.literal("broadcast"),
    ref,
    channel,
    event: z.string().min(1).max(255),
    payload: z.unknown().optional(),
  }),
  z.strictObject({
    type: z.literal("presence_update"),
    ref,
    channel,
    state: z.record(z.string(), z.unknown()),
  }),
  z.strictObject({ type: z.literal("ping"), ref }),
  z.strictObject({ type: z.literal("access_token"), ref, token: z.string().min(1).max(8192) }),
]);

/** A validated client message. */
export type ClientMessage = z.infer<typeof ClientMessage>;
/** The `postgres_changes` part of a subscription. */
export type PostgresChangeSpec = z.infer<typeof PostgresChange>;

/** A protocol error sent as `{type: "error", code, message, ref?}`. */
export interface ProtocolError {
  code: string;
  message: string;
}

const TYPES = new Set(["subscribe", "unsubscribe", "broadcast", "presence_update", "ping", "access_token"]);

/** Parses one text frame into a client message, or the error to send back (with the `ref` when readable). */
export function parseClientMessage(
  text: string,
): { ok: true; message: ClientMessage } | { ok: false; error: ProtocolError; ref?: string | number } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { ok: false, error: { code: "VALIDATION_ERROR", message: "Message is not valid JSON" } };
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    return { ok: false, error: { code: "VALIDATION_ERROR", message: "Message must be a JSON object" } };
  }
  const obj = raw as Record<string, unknown>;
  const ref = typeof obj.ref === "string" || typeof obj.ref === "number" ? obj.ref : undefined;
  if (typeof obj.type !== "string" || !TYPES.has(obj.type)) {
    const shown = typeof obj.type === "string" ? `"${obj.type.slice(0, 50)}"` : "missing";
    return {
      ok: false,
      ref,
      error: {
        code: "VALIDATION_ERROR",
        message: `Unknown message type ${shown}: expected one of ${[...TYPES].join(", ")}`,
      },
    };
  }
  const parsed = ClientMessage.safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => {
      const path = i.path.map(String).join(".");
      return path ? `${path}: ${i.message}` : i.message;
    });
    return {
      ok: false,
      ref,
      error: { code: "VALIDATION_ERROR", message: `Invalid ${obj.type} message: ${issues.join("; ")}` },
    };
  }
  return { ok: true, message: parsed.data };
}
