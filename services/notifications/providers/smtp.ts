import net from "node:net";

/** The part of a nodemailer transport this provider uses (nodemailer ships no types; @types/node clashes). */
interface Transporter {
  sendMail(mail: Record<string, unknown>): Promise<{ messageId: string; response?: string }>;
  close(): void;
}

/** nodemailer, loaded by the first email sent: a process that sends none saves its memory (about 15 MB). */
async function loadNodemailer(): Promise<{ createTransport(options: Record<string, unknown>): Transporter }> {
  return (await import("nodemailer")).default as unknown as {
    createTransport(options: Record<string, unknown>): Transporter;
  };
}
import type { NetGuard } from "../net_guard.ts";
import type { NotifySettings } from "../settings.ts";
import { clip, configError, type OutboundMessage, type Provider, type ProviderResult } from "./provider.ts";

/** How long opening the TCP connection may take (nodemailer's own timeouts cover the rest). */
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * SmtpProvider sends email over SMTP through one pooled nodemailer transport per settings version.
 * SMTP 4xx replies and connection errors are retryable; 5xx replies are permanent. Every connection the pool
 * opens goes through nodemailer's `getSocket` hook: the host is resolved once, checked by the guard and
 * connected to at the checked address; nodemailer then runs TLS (465 or STARTTLS) over that socket, verifying
 * the certificate against the host name.
 */
export class SmtpProvider implements Provider {
  readonly name = "smtp";
  private transport: Transporter | null = null;

  constructor(
    private readonly settings: NotifySettings["email"],
    private readonly guard: NetGuard,
    private readonly maxConnections: number,
  ) {}

  private async transporter(): Promise<Transporter> {
    const s = this.settings;
    const nodemailer = await loadNodemailer();
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
      getSocket: (
        _options: unknown,
        callback: (err: Error | null, socket?: { connection: net.Socket }) => void,
      ) =>
        this.connect(s.host!, s.port).then(
          (connection) => callback(null, { connection }),
          (err) => callback(err),
        ),
    });
    return this.transport;
  }

  /** A TCP connection to a checked address of `host` (a literal is checked here, a name by the lookup). */
  private async connect(host: string, port: number): Promise<net.Socket> {
    await this.guard.preflight(host);
    return await new Promise<net.Socket>((resolve, reject) => {
      const socket = net.connect({
        host,
        port,
        lookup: this.guard.lookup as unknown as net.LookupFunction,
      });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`Could not connect to ${host}:${port} in time`));
      }, CONNECT_TIMEOUT_MS);
      socket.once("connect", () => {
        clearTimeout(timer);
        socket.off("error", failed);
        resolve(socket);
      });
      const failed = (err: Error) => {
        clearTimeout(timer);
        socket.destroy();
        reject(err);
      };
      socket.once("error", failed);
    });
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
      const info = await (await this.transporter()).sendMail({
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
