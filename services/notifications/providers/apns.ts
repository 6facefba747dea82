import { importPKCS8, SignJWT } from "jose";
import type { OutboundHttp } from "../outbound.ts";
import type { NotifySettings } from "../settings.ts";
import {
  classifyHttp,
  configError,
  type OutboundMessage,
  type Provider,
  type ProviderResult,
  readBody,
  thrownResult,
} from "./provider.ts";

/** Apple: refresh the provider token no more than once every 20 minutes and no less than once an hour. */
const TOKEN_LIFETIME_MS = 50 * 60 * 1000;

/** APNs reasons that will never succeed for this device or payload. */
const PERMANENT_REASONS = new Set([
  "BadDeviceToken",
  "DeviceTokenNotForTopic",
  "Unregistered",
  "BadTopic",
  "TopicDisallowed",
  "PayloadTooLarge",
  "BadMessageId",
  "BadCertificate",
  "MissingTopic",
]);

/**
 * ApnsProvider sends over HTTP/2 (all APNs speaks) to `{base_url}/3/device/{token}` with an ES256 provider token (`kid` = key id,
 * `iss` = team id), cached for 50 minutes. `BadDeviceToken`, `Unregistered` and the like are permanent;
 * `ExpiredProviderToken` renews the token and retries; 429 and 5xx retry.
 */
export class ApnsProvider implements Provider {
  readonly name = "apns";
  private token: { value: string; issued: number } | null = null;
  /** This sender's own HTTP/2 connection: APNs ties a connection to the provider token used on it. */
  private readonly partition = `apns-${crypto.randomUUID()}`;

  constructor(
    private readonly settings: NotifySettings["push"]["apns"],
    private readonly http: OutboundHttp,
  ) {}

  private async providerToken(): Promise<string> {
    if (this.token && Date.now() - this.token.issued < TOKEN_LIFETIME_MS) return this.token.value;
    const { team_id, key_id, private_key } = this.settings;
    const key = await importPKCS8(private_key!, "ES256");
    const issued = Date.now();
    const value = await new SignJWT({})
      .setProtectedHeader({ alg: "ES256", kid: key_id! })
      .setIssuer(team_id!)
      .setIssuedAt(Math.floor(issued / 1000))
      .sign(key);
    this.token = { value, issued };
    return value;
  }

  async send(message: OutboundMessage, signal: AbortSignal): Promise<ProviderResult> {
    const { base_url, team_id, key_id, private_key, topic } = this.settings;
    if (!team_id || !key_id || !private_key || !topic) {
      return configError(
        this.name,
        "APNs is not configured: set push.apns team_id, key_id, private_key and topic",
      );
    }
    const url = `${base_url.replace(/\/$/, "")}/3/device/${encodeURIComponent(message.recipient)}`;
    const request = { url: `${base_url}/3/device/…${message.recipient.slice(-8)}`, topic };
    try {
      const res = await this.http.fetch2(url, {
        method: "POST",
        headers: {
          authorization: `bearer ${await this.providerToken()}`,
          "apns-topic": topic,
          "apns-push-type": "alert",
          "apns-id": message.id,
          "content-type": "application/json",
        },
        body: JSON.stringify({
          ...message.metadata,
          aps: { alert: { title: message.subject ?? undefined, body: message.body ?? "" } },
        }),
        signal: AbortSignal.any([signal, AbortSignal.timeout(15_000)]),
      }, this.partition);
      const text = await readBody(res);
      let reason = "";
      try {
        reason = String(JSON.parse(text).reason ?? "");
      } catch { /* empty body on success */ }
      if (reason === "ExpiredProviderToken" || reason === "InvalidProviderToken") this.token = null;
      const result = classifyHttp(this.name, res, text, request, {
        permanent: (status) =>
          PERMANENT_REASONS.has(reason) ||
          (status >= 400 && status < 500 && status !== 403 && status !== 429 && status !== 408),
      });
      if (reason) result.error = `APNs answered HTTP ${res.status} ${reason}`;
      if (result.outcome === "success") result.providerMessageId = res.headers.get("apns-id") ?? message.id;
      return result;
    } catch (err) {
      return thrownResult(this.name, err, request);
    }
  }

  close(): Promise<void> {
    this.http.closePartition(this.partition);
    return Promise.resolve();
  }
}
