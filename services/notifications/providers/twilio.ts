import type { NotifySettings } from "../settings.ts";
import { withDeadline } from "../../../lib/deadline.ts";
import type { OutboundHttp } from "../outbound.ts";
import {
  classifyHttp,
  configError,
  MAX_ANSWER_BYTES,
  type OutboundMessage,
  type Provider,
  type ProviderResult,
  thrownResult,
} from "./provider.ts";

/**
 * TwilioProvider sends SMS through a Twilio-compatible HTTP API:
 * `POST {base_url}/2010-04-01/Accounts/{sid}/Messages.json` with Basic auth and a form body. With
 * `sms.status_callback_url` set, the form carries `StatusCallback` and Twilio reports delivery there.
 */
export class TwilioProvider implements Provider {
  readonly name = "twilio";

  constructor(private readonly settings: NotifySettings["sms"], private readonly http: OutboundHttp) {}

  async send(message: OutboundMessage, signal: AbortSignal): Promise<ProviderResult> {
    const { base_url, account_sid, auth_token, from, status_callback_url } = this.settings;
    if (!account_sid || !auth_token || !from) {
      return configError(
        this.name,
        "SMS is not configured: set sms.account_sid, sms.auth_token and sms.from",
      );
    }
    const url = `${base_url.replace(/\/$/, "")}/2010-04-01/Accounts/${
      encodeURIComponent(account_sid)
    }/Messages.json`;
    const form = new URLSearchParams({ To: message.recipient, From: from, Body: message.body ?? "" });
    // Twilio then POSTs each status change of the message there, signed (routes: sms status callback).
    if (status_callback_url) form.set("StatusCallback", status_callback_url);
    const request = { url, to: message.recipient, from, status_callback: status_callback_url !== null };
    try {
      const res = await withDeadline(signal, 15_000, (deadline) =>
        this.http.send(url, {
          method: "POST",
          headers: {
            authorization: `Basic ${btoa(`${account_sid}:${auth_token}`)}`,
            "content-type": "application/x-www-form-urlencoded",
          },
          body: form.toString(),
          signal: deadline,
        }, MAX_ANSWER_BYTES));
      const result = classifyHttp(this.name, res, res.body, request);
      if (result.outcome === "success") {
        try {
          result.providerMessageId = String(JSON.parse(res.body).sid ?? "") || undefined;
        } catch { /* not JSON: keep the raw answer */ }
      }
      return result;
    } catch (err) {
      return thrownResult(this.name, err, request);
    }
  }
}
