import nodemailerModule from "nodemailer";

/** The part of a nodemailer transport this provider uses (nodemailer ships no types; @types/node clashes). */
interface Transporter {
  sendMail(mail: Record<string, unknown>): Promise<{ messageId: string; response?: string }>;
  close(): void;
}
const nodemailer = nodemailerModule as unknown as {
  createTransport(options: Record<string, unknown>): Transporter;
};
import type { NetGuard } from "../net_guard.ts";
import type { NotifySettings } from "../settings.ts";
import { clip, configError, type OutboundMessage, type Provider, type ProviderResult } from "./provider.ts";

/**
 * SmtpProvider sends email over SMTP through one pooled nodemailer transport per settings version.
 * SMTP 4xx replies and connection errors are retryable; 5xx replies are permanent.
 */
export class SmtpProvider implements Provider {
  readonly name = "smtp";
  private transport: Transporter | null = null;

  constructor(
    private readonly settings: NotifySettings["email"],
    private readonly guard: NetGuard,
    private readonly maxConnections: number,
  ) {}

  private transporter(): Transporter {
    const s = this.settings;
    this.transport ??= nodemailer.createTransport({
      pool: true,
      maxConnections: this.maxConnections,
      host: s.host!,
      port: s.port,
      secure: s.secure,
      auth: s.user ? { user: s.user, pass: s.pass ?? "" } : undefined,
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 15_000,
    });
    return this.transport;
  }

  async send(message: OutboundMessage): Promise<ProviderResult> {
    const s = this.settings;
    if (!s.host || !s.from) {
      return configError(this.name, "Email is not configured: set email.host and email.from");
    }
    const request = {
      host: s.host,
      port: s.port,
      to: message.recipient,
      from: s.from,
      subject: message.subject,
    };
    try {
      await this.guard.check(s.host);
      const info = await this.transporter().sendMail({
        from: s.from,
        to: message.recipient,
        subject: message.subject ?? "",
        text: message.body ?? "",
        messageId: `<${message.id}@notifications>`,
        headers: { "x-notification-id": message.id },
      });
      return {
        provider: this.name,
        outcome: "success",
        response: clip(String(info.response ?? "")),
        providerMessageId: info.messageId,
        request,
      };
    } catch (err) {
      const e = err as { responseCode?: number; response?: string; message?: string; name?: string };
      const code = typeof e.responseCode === "number" ? e.responseCode : undefined;
      const permanent = e.name === "BlockedTargetError" || (code !== undefined && code >= 500);
      return {
        provider: this.name,
        outcome: permanent ? "permanent_error" : "retryable_error",
        httpStatus: code,
        response: clip(e.response ?? ""),
        error: code
          ? `SMTP answered ${code}`
          : `SMTP failed: ${(e.message ?? "error").split("\n")[0]!.slice(0, 200)}`,
        request,
      };
    }
  }

  close(): Promise<void> {
    this.transport?.close();
    this.transport = null;
    return Promise.resolve();
  }
}
