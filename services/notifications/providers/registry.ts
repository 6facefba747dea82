import type { NetGuard } from "../net_guard.ts";
import { OutboundHttp } from "../outbound.ts";
import type { NotifySettings } from "../settings.ts";
import { ApnsProvider } from "./apns.ts";
import { FcmProvider } from "./fcm.ts";
import { configError, type OutboundMessage, type Provider, type ProviderResult } from "./provider.ts";
import { SmtpProvider } from "./smtp.ts";
import { TwilioProvider } from "./twilio.ts";
import { WebhookProvider } from "./webhook.ts";

/** The providers of one project, built from one version of its settings. */
class ProjectProviders {
  readonly smtp: SmtpProvider;
  readonly twilio: TwilioProvider;
  readonly fcm: FcmProvider;
  readonly apns: ApnsProvider;
  readonly webhook: WebhookProvider;

  constructor(
    readonly settings: NotifySettings,
    guard: NetGuard,
    http: OutboundHttp,
    smtpConnections: number,
  ) {
    this.smtp = new SmtpProvider(settings.email, guard, smtpConnections);
    this.twilio = new TwilioProvider(settings.sms, http);
    this.fcm = new FcmProvider(settings.push.fcm, http);
    this.apns = new ApnsProvider(settings.push.apns, http);
    this.webhook = new WebhookProvider({
      secret: settings.webhook.secret,
      timeoutMs: settings.webhook.timeout_ms,
      http,
    });
  }

  /** Picks the provider of a message; push recipients may be prefixed `fcm:` or `apns:`. */
  route(message: OutboundMessage): { provider: Provider; message: OutboundMessage } | ProviderResult {
    switch (message.channel) {
      case "email":
        return { provider: this.smtp, message };
      case "sms":
        return { provider: this.twilio, message };
      case "webhook":
        return { provider: this.webhook, message };
      case "push": {
        const match = message.recipient.match(/^(fcm|apns):(.+)$/);
        if (match) {
          const provider = match[1] === "fcm" ? this.fcm : this.apns;
          return { provider, message: { ...message, recipient: match[2]! } };
        }
        if (this.settings.push.fcm.service_account) return { provider: this.fcm, message };
        if (this.settings.push.apns.private_key) return { provider: this.apns, message };
        return configError("push", "Push is not configured: set push.fcm or push.apns in the settings");
      }
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.smtp.close(), this.apns.close()]);
  }
}

/**
 * ProviderRegistry keeps the providers of each project, rebuilt when its settings change, so that pooled SMTP
 * connections and FCM/APNs tokens live across messages.
 */
export class ProviderRegistry {
  private readonly byProject = new Map<string, ProjectProviders>();
  /** Keep-alive connections and HTTP/2 sessions, shared by every project (each connection checked). */
  private readonly http: OutboundHttp;

  constructor(private readonly guard: NetGuard, private readonly smtpConnections: number) {
    this.http = new OutboundHttp(guard);
  }

  /** The providers of `ref` for these settings. */
  for(ref: string, settings: NotifySettings): ProjectProviders {
    const current = this.byProject.get(ref);
    if (current && current.settings.version === settings.version) return current;
    if (current) void current.close();
    const next = new ProjectProviders(settings, this.guard, this.http, this.smtpConnections);
    this.byProject.set(ref, next);
    return next;
  }

  /** Closes every pooled connection. */
  async close(): Promise<void> {
    const all = [...this.byProject.values()];
    this.byProject.clear();
    await Promise.all(all.map((p) => p.close()));
    this.http.close();
  }
}
