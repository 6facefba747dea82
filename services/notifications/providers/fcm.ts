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

const SCOPE = "https://www.googleapis.com/auth/firebase.messaging";

/**
 * FcmProvider sends through FCM HTTP v1. It signs a service-account JWT (RS256), exchanges it at the token
 * URL for an OAuth access token, caches that token until a minute before it expires, and POSTs to
 * `{base_url}/v1/projects/{project_id}/messages:send`. UNREGISTERED / INVALID_ARGUMENT are permanent.
 */
export class FcmProvider implements Provider {
  readonly name = "fcm";
  private token: { value: string; expires: number } | null = null;
  private pending: Promise<string> | null = null;

  constructor(
    private readonly settings: NotifySettings["push"]["fcm"],
    private readonly http: OutboundHttp,
  ) {}

  private tokenUrl(): string {
    const s = this.settings;
    return s.token_url ?? s.service_account?.token_uri ?? "https://oauth2.googleapis.com/token";
  }

  private accessToken(signal: AbortSignal): Promise<string> {
    if (this.token && this.token.expires > Date.now()) return Promise.resolve(this.token.value);
    this.pending ??= this.fetchToken(signal).finally(() => (this.pending = null));
    return this.pending;
  }

  private async fetchToken(signal: AbortSignal): Promise<string> {
    const account = this.settings.service_account!;
    const url = this.tokenUrl();
    const key = await importPKCS8(account.private_key, "RS256");
    const now = Math.floor(Date.now() / 1000);
    const assertion = await new SignJWT({ scope: SCOPE })
      .setProtectedHeader({ alg: "RS256", typ: "JWT" })
      .setIssuer(account.client_email)
      .setSubject(account.client_email)
      .setAudience(url)
      .setIssuedAt(now)
      .setExpirationTime(now + 3600)
      .sign(key);
    const res = await this.http.fetch(url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion })
        .toString(),
      signal: AbortSignal.any([signal, AbortSignal.timeout(15_000)]),
    });
    const text = await readBody(res);
    if (!res.ok) throw new TokenError(res.status, text);
    const body = JSON.parse(text) as { access_token?: string; expires_in?: number };
    if (!body.access_token) throw new TokenError(res.status, "no access_token in the answer");
    const lifetime = Math.max(60, Number(body.expires_in ?? 3600));
    this.token = { value: body.access_token, expires: Date.now() + (lifetime - 60) * 1000 };
    return body.access_token;
  }

  async send(message: OutboundMessage, signal: AbortSignal): Promise<ProviderResult> {
    const account = this.settings.service_account;
    if (!account) return configError(this.name, "FCM is not configured: set push.fcm.service_account");
    const url = `${this.settings.base_url.replace(/\/$/, "")}/v1/projects/${
      encodeURIComponent(account.project_id)
    }/messages:send`;
    const data = Object.fromEntries(
      Object.entries(message.metadata).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]),
    );
    const payload = {
      message: {
        token: message.recipient,
        notification: { title: message.subject ?? undefined, body: message.body ?? "" },
        data: Object.keys(data).length > 0 ? data : undefined,
      },
    };
    const request = { url, token_suffix: message.recipient.slice(-8) };
    try {
      let token: string;
      try {
        token = await this.accessToken(signal);
      } catch (err) {
        if (err instanceof TokenError) {
          const permanent = err.status >= 400 && err.status < 500 && err.status !== 429;
          return {
            provider: this.name,
            outcome: permanent ? "permanent_error" : "retryable_error",
            httpStatus: err.status,
            error: `FCM token endpoint answered HTTP ${err.status}`,
            response: err.body.slice(0, 2000),
            request: { url: this.tokenUrl() },
          };
        }
        throw err;
      }
      const res = await this.http.fetch(url, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify(payload),
        signal: AbortSignal.any([signal, AbortSignal.timeout(15_000)]),
      });
      const text = await readBody(res);
      if (res.status === 401) this.token = null; // the token was revoked: fetch a new one on the retry
      const result = classifyHttp(this.name, res, text, request, {
        permanent: (status) => status !== 401 && status !== 408 && status !== 429 && status < 500,
      });
      if (result.outcome === "success") {
        try {
          result.providerMessageId = String(JSON.parse(text).name ?? "") || undefined;
        } catch { /* keep the raw answer */ }
      }
      return result;
    } catch (err) {
      return thrownResult(this.name, err, request);
    }
  }
}

class TokenError extends Error {
  constructor(readonly status: number, readonly body: string) {
    super(`token endpoint answered HTTP ${status}`);
  }
}
