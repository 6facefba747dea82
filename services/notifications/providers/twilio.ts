import type { NotifySettings } from "../settings.ts";
import type { NetGuard } from "../net_guard.ts";
import {
  classifyHttp,
  configError,
  type OutboundMessage,
  type Provider,
  type ProviderResult,
  readBody,
  thrownResult,
} from "./provider.ts";

/**
 * TwilioProvider sends SMS through a Twilio-compatible HTTP API:
 * `POST {base_url}/2010-04-01/Accounts/{sid}/Messages.json` with Basic auth and a form body.
 */
export class TwilioProvider implements Provider {
  readonly name = "twilio";

  constructor(private readonly settings: NotifySettings["sms"], private readonly guard: NetGuard) {}

  async send(message: OutboundMessage, signal: AbortSignal): Promise<ProviderResult> {
    const { base_url, account_sid, auth_token, from } = this.settings;
    if (!account_sid || !auth_token || !from) {
      return configError(
        this.name,
        "SMS is not configured: set sms.account_sid, sms.auth_token and sms.from",
      );
    }
    const url = `${base_url.replace(/\/$/, "")}/2010-04-01/Accounts/${
      encodeURIComponent(account_sid)
    }/Messages.json`;
    const request = { url, to: message.recipient, from };
    try {
      await this.guard.checkUrl(url);
      const res = await fetch(url, {
        method: "POST",
        headers: {
          authorization: `Basic ${btoa(`${account_sid}:${auth_token}`)}`,
          "content-type": "application/x-www-form-urlencoded",
        },
        body: new URLSearchParams({ To: message.recipient, From: from, Body: message.body ?? "" }),
        redirect: "manual",
        signal: AbortSignal.any([signal, AbortSignal.timeout(15_000)]),
      });
      const text = await readBody(res);
      const result = classifyHttp(this.name, res, text, request);
      if (result.outcome === "success") {
        try {
          result.providerMessageId = String(JSON.parse(text).sid ?? "") || undefined;
        } catch { /* not JSON: keep the raw answer */ }
      }
      return result;
    } catch (err) {
      return thrownResult(this.name, err, request);
    }
  }
}
