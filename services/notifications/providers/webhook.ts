import { Webhook } from "standardwebhooks";
import { withDeadline } from "../../../lib/deadline.ts";
import type { OutboundHttp } from "../outbound.ts";
import {
  classifyHttp,
  MAX_ANSWER_BYTES,
  type OutboundMessage,
  type Provider,
  type ProviderResult,
  thrownResult,
} from "./provider.ts";

/** Options of {@linkcode WebhookProvider}. */
export interface WebhookOptions {
  /** A `whsec_…` secret; without one the request is sent unsigned. */
  secret: string | null;
  timeoutMs: number;
  http: OutboundHttp;
}

/**
 * WebhookProvider POSTs `{type, timestamp, data}` to the recipient URL, signed per Standard Webhooks
 * (`webhook-id`, `webhook-timestamp`, `webhook-signature`). Redirects are not followed. A 410 stops retries.
 * A 2xx is a delivery confirmation (the receiver is the final recipient), so the notification is `delivered`.
 */
export class WebhookProvider implements Provider {
  readonly name = "webhook";
  private readonly signer: Webhook | null;

  constructor(private readonly options: WebhookOptions) {
    this.signer = options.secret ? new Webhook(options.secret) : null;
  }

  async send(message: OutboundMessage, signal: AbortSignal): Promise<ProviderResult> {
    const timestamp = new Date();
    const body = JSON.stringify({
      type: message.event ?? "notification",
      timestamp: timestamp.toISOString(),
      data: message.payload ?? message.body ?? null,
    });
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "user-agent": "platform-notifications/1",
      "webhook-id": message.id,
      "webhook-timestamp": String(Math.floor(timestamp.getTime() / 1000)),
    };
    if (this.signer) headers["webhook-signature"] = this.signer.sign(message.id, timestamp, body);
    const request = {
      url: message.recipient,
      event: message.event,
      signed: this.signer !== null,
      bytes: body.length,
    };
    try {
      const res = await withDeadline(
        signal,
        this.options.timeoutMs,
        (deadline) =>
          this.options.http.send(message.recipient, {
            method: "POST",
            headers,
            body,
            signal: deadline,
          }, MAX_ANSWER_BYTES),
      );
      // Standard Webhooks: any non-2xx is retried, except 410 Gone which stops retries for this message.
      const result = classifyHttp(this.name, res, res.body, request, {
        permanent: (status) => status === 410,
      });
      // The receiver is the final recipient: its 2xx is the delivery confirmation.
      if (result.outcome === "success") result.confirmed = true;
      return result;
    } catch (err) {
      return thrownResult(this.name, err, request);
    }
  }
}
