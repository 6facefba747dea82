import type { Queryable } from "../../db/driver.ts";
import { errors } from "../../lib/errors.ts";
import { applyReceipt, type ReceiptOutcome, type ReceiptResult } from "./store.ts";
import type { NotifySettings } from "./settings.ts";
import { verifyTwilioSignature } from "./twilio_signature.ts";

/** The route Twilio posts SMS status changes to (given as StatusCallback when a message is sent). */
export const SMS_STATUS_PATH = "/v1/notifications/providers/sms/status";

/** Twilio's message statuses and what each means for the notification. */
const OUTCOMES: Record<string, ReceiptOutcome> = {
  delivered: "delivered",
  read: "delivered", // WhatsApp: read implies delivered
  undelivered: "failed",
  failed: "failed",
  canceled: "failed", // will never be sent
};

const SID = /^[A-Za-z0-9]{2,64}$/;

/**
 * Handles a Twilio status callback for the project whose settings are given. The signature is the
 * authentication (Twilio cannot send an API key): `X-Twilio-Signature` must be Twilio's HMAC-SHA1, keyed with
 * this project's `sms.auth_token`, of this project's `sms.status_callback_url` (the URL Twilio was given and
 * signs) and the posted parameters. A missing signature is 401; a wrong one, or a project without callbacks
 * configured, 403; no notification is read or written before it passes. Then `delivered`/`read` confirm delivery,
 * `undelivered`/`failed`/`canceled` are a permanent failure (dead-lettered), and other statuses are logged only.
 */
export async function smsStatusCallback(
  db: Queryable,
  sms: NotifySettings["sms"],
  signature: string | undefined,
  params: URLSearchParams,
): Promise<ReceiptResult> {
  if (!signature) throw errors.unauthorized("Missing X-Twilio-Signature header");
  if (!sms.auth_token || !sms.status_callback_url) {
    throw errors.forbidden(
      "SMS status callbacks are not configured for this project: set sms.auth_token and sms.status_callback_url",
    );
  }
  if (!verifyTwilioSignature(sms.auth_token, signature, sms.status_callback_url, params)) {
    throw errors.forbidden("X-Twilio-Signature does not match this request");
  }
  if (sms.account_sid && params.get("AccountSid") !== sms.account_sid) {
    throw errors.forbidden("AccountSid is not the account of this project");
  }
  const sid = params.get("MessageSid") ?? params.get("SmsSid") ?? "";
  const status = (params.get("MessageStatus") ?? params.get("SmsStatus") ?? "").toLowerCase();
  if (!SID.test(sid)) throw errors.validation("MessageSid: required, letters and digits");
  if (!/^[a-z_]{1,32}$/.test(status)) throw errors.validation("MessageStatus: required");
  const code = params.get("ErrorCode");
  const outcome = OUTCOMES[status] ?? "progress";
  const reason = params.get("ErrorMessage")?.slice(0, 200);
  const result = await applyReceipt(db, {
    provider: "twilio",
    channel: "sms",
    messageId: sid,
    status,
    outcome,
    error: outcome === "failed"
      ? `Twilio reported ${status}${code ? ` (error ${code}${reason ? `: ${reason}` : ""})` : ""}`
      : null,
    details: { error_code: code && /^\d{1,10}$/.test(code) ? Number(code) : null },
  });
  if (!result) throw errors.notFound(`No SMS notification was sent as "${sid}"`);
  return result;
}
