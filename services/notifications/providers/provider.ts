import { retryAfterMs } from "../../../lib/backoff.ts";
import { BlockedTargetError } from "../net_guard.ts";

/** A notification channel. */
export type Channel = "email" | "sms" | "push" | "webhook";

/** What a provider sends: one notification, already rendered. */
export interface OutboundMessage {
  id: string;
  channel: Channel;
  recipient: string;
  subject: string | null;
  body: string | null;
  event: string | null;
  payload: unknown;
  metadata: Record<string, unknown>;
  /** 1 for the first attempt. */
  attempt: number;
}

/** How one attempt ended. */
export type Outcome = "success" | "retryable_error" | "permanent_error";

/** The provider's answer to one attempt, kept as an attempt and a provider log. */
export interface ProviderResult {
  outcome: Outcome;
  /** Which provider answered (smtp, twilio, fcm, apns, webhook). */
  provider: string;
  httpStatus?: number;
  /** The provider's answer, truncated. */
  response: string;
  /** A one-line reason when it failed. */
  error?: string;
  /** When the provider asked to wait (Retry-After). */
  retryAfterMs?: number;
  providerMessageId?: string;
  /** The recipient itself acknowledged it (a webhook's 2xx): the notification is `delivered`, not `sent`. */
  confirmed?: boolean;
  /** What was sent, without secrets (for the provider log). */
  request: Record<string, unknown>;
}

/** One transport behind the common interface. */
export interface Provider {
  readonly name: string;
  /** Sends one message; resolves with the classified answer, never throws for a provider failure. */
  send(message: OutboundMessage, signal: AbortSignal): Promise<ProviderResult>;
  /** Releases pooled connections. */
  close?(): Promise<void>;
}

/** Bytes of a provider's answer that are read at most; the rest is cancelled unread. */
export const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * Reads a provider's or webhook receiver's answer, at most `maxBytes` of it: a hostile receiver that streams an
 * endless body cannot grow the platform's memory; the rest of the stream is cancelled.
 */
export async function readBody(res: Response, maxBytes = MAX_ANSWER_BYTES): Promise<string> {
  if (!res.body) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < maxBytes) {
      const { done, value } = await reader.read();
      if (done) break;
      const room = maxBytes - size;
      const part = value.byteLength > room ? value.subarray(0, room) : value;
      chunks.push(part);
      size += part.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  return new TextDecoder().decode(bytes);
}

/** Truncates a provider answer for storage. */
export function clip(text: string, max = 2000): string {
  return text.length > max ? text.slice(0, max) + "…" : text;
}

/** Options of {@linkcode classifyHttp}. */
export interface ClassifyOptions {
  /** Statuses (other than 2xx) that are permanent. */
  permanent?: (status: number, body: string) => boolean;
}

/**
 * Classifies an HTTP answer: 2xx success; 408, 425, 429 and 5xx retryable (honouring Retry-After); other
 * statuses permanent unless `permanent` says otherwise.
 */
export function classifyHttp(
  provider: string,
  res: { status: number; headers: { get(name: string): string | null } },
  body: string,
  request: Record<string, unknown>,
  options: ClassifyOptions = {},
): ProviderResult {
  const base = { provider, httpStatus: res.status, response: clip(body), request };
  if (res.status >= 200 && res.status < 300) return { ...base, outcome: "success" };
  const retryAfter = retryAfterMs(res.headers.get("retry-after"));
  const permanent = options.permanent
    ? options.permanent(res.status, body)
    : !(res.status === 408 || res.status === 425 || res.status === 429 || res.status >= 500);
  const excerpt = body.replace(/\s+/g, " ").trim();
  return {
    ...base,
    outcome: permanent ? "permanent_error" : "retryable_error",
    error: `${provider} answered HTTP ${res.status}${excerpt ? `: ${clip(excerpt, REASON_CHARS)}` : ""}`,
    retryAfterMs: permanent ? undefined : retryAfter,
  };
}

/** Characters of an answer or error message kept in an attempt's reason. */
const REASON_CHARS = 200;

/**
 * Why a call could not be made, never empty: the first line of the error's message, or its code or name. A
 * connection tried at several addresses fails with an AggregateError whose own message is empty: its errors
 * say why.
 */
export function networkReason(err: unknown): string {
  if (err instanceof AggregateError && err.errors.length > 0) {
    return clip([...new Set(err.errors.map(networkReason))].join("; "), REASON_CHARS);
  }
  if (!(err instanceof Error)) return typeof err;
  const line = err.message.split("\n")[0]?.trim();
  const code = (err as { code?: unknown }).code;
  return clip(line || (typeof code === "string" ? code : err.name), REASON_CHARS);
}

/** The result of an exception thrown while calling a provider (network, timeout, refused target). */
export function thrownResult(
  provider: string,
  err: unknown,
  request: Record<string, unknown>,
): ProviderResult {
  if (err instanceof BlockedTargetError) {
    return { provider, outcome: "permanent_error", error: err.message, response: "", request };
  }
  const name = err instanceof Error ? err.name : "Error";
  const message = name === "TimeoutError" || name === "AbortError"
    ? `${provider} did not answer in time`
    : `${provider} could not be reached: ${networkReason(err)}`;
  return { provider, outcome: "retryable_error", error: message, response: "", request };
}

/** A permanent failure before any call (missing configuration, bad recipient). */
export function configError(provider: string, message: string): ProviderResult {
  return { provider, outcome: "permanent_error", error: message, response: "", request: {} };
}
