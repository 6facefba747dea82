import { createHmac } from "node:crypto";
import { exportPKCS8, exportSPKI, generateKeyPair, importSPKI, jwtVerify } from "jose";
import { SMTPServer } from "smtp-server";
import { Webhook } from "standardwebhooks";
import { concatBytes } from "../lib/encoding.ts";

/** A local HTTP server started by a test, on 127.0.0.1 and port 0. */
export interface FakeServer {
  url: string;
  close(): Promise<void>;
}

function serve(handler: (req: Request) => Promise<Response> | Response): FakeServer & { port: number } {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, handler);
  const port = (server.addr as Deno.NetAddr).port;
  return { url: `http://127.0.0.1:${port}`, port, close: () => server.shutdown() };
}

/** One webhook the receiver accepted, its signature verified. */
export interface ReceivedWebhook {
  id: string;
  path: string;
  body: { type: string; timestamp: string; data: unknown };
}

/** A signed request as it arrived, whatever it was answered. */
export interface ArrivedWebhook {
  id: string;
  path: string;
  data: unknown;
  /** The status it was answered (0 while it is held). */
  status: number;
}

/**
 * A webhook receiver that verifies Standard Webhooks signatures with `secret`. `script[path]` lists the
 * statuses to answer in turn (the last one repeats); default 200. Unsigned or badly signed requests get 401
 * and are counted in `rejected`. `delays[path]` makes that path answer after so many milliseconds. `arrived`
 * lists every signed request when it arrives (before any delay), `received` the ones answered 2xx.
 */
export function webhookReceiver(
  secret: string,
  script: Record<string, number[]> = {},
  delays: Record<string, number> = {},
) {
  const verifier = new Webhook(secret);
  const received: ReceivedWebhook[] = [];
  const arrived: ArrivedWebhook[] = [];
  const hits = new Map<string, number>();
  const active = new Map<string, number>();
  /** The most requests of a path seen in flight at once. */
  const peak = new Map<string, number>();
  let rejected = 0;
  const server = serve(async (req) => {
    const path = new URL(req.url).pathname;
    const text = await req.text();
    try {
      verifier.verify(text, Object.fromEntries(req.headers));
    } catch {
      rejected++;
      return new Response("bad signature", { status: 401 });
    }
    const arrival: ArrivedWebhook = {
      id: req.headers.get("webhook-id")!,
      path,
      data: JSON.parse(text).data,
      status: 0,
    };
    arrived.push(arrival);
    active.set(path, (active.get(path) ?? 0) + 1);
    peak.set(path, Math.max(peak.get(path) ?? 0, active.get(path)!));
    if (delays[path]) await new Promise((r) => setTimeout(r, delays[path]));
    active.set(path, active.get(path)! - 1);
    const n = hits.get(path) ?? 0;
    hits.set(path, n + 1);
    const statuses = script[path] ?? [200];
    const status = statuses[Math.min(n, statuses.length - 1)]!;
    arrival.status = status;
    if (status >= 200 && status < 300) {
      received.push({ id: req.headers.get("webhook-id")!, path, body: JSON.parse(text) });
    }
    return new Response(status >= 300 ? "nope" : "ok", {
      status,
      headers: status === 503 ? { "retry-after": "0" } : status === 429 ? { "retry-after": "1" } : {},
    });
  });
  return {
    ...server,
    received,
    arrived,
    active,
    hits,
    peak,
    get rejected() {
      return rejected;
    },
  };
}

/** An email received by the SMTP sink. */
export interface ReceivedMail {
  from: string;
  to: string[];
  raw: string;
}

/** A local SMTP sink (`smtp-server`, no TLS, no auth) that keeps every message. */
export async function smtpSink() {
  const mails: ReceivedMail[] = [];
  const server = new SMTPServer({
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Uint8Array[] = [];
      (async () => {
        for await (const chunk of stream as AsyncIterable<Uint8Array>) chunks.push(chunk);
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: new TextDecoder().decode(concatBytes(chunks)),
        });
        callback();
      })().catch(callback);
    },
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => resolve((server.server.address() as { port: number }).port));
  });
  return {
    port,
    mails,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * Twilio's request signature, written here from Twilio's documentation (not the platform's code): base64
 * HMAC-SHA1 with the auth token over the URL followed by the POST parameters sorted by name, name + value.
 */
export function signTwilio(token: string, url: string, params: URLSearchParams): string {
  const data = [...params].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .reduce((acc, [k, v]) => acc + k + v, url);
  return createHmac("sha1", token).update(data).digest("base64");
}

/** One message the fake Twilio accepted. */
export interface TwilioMessage {
  sid: string;
  to: string;
  from: string;
  body: string;
  statusCallback: string | null;
}

/**
 * A Twilio-compatible SMS API that checks Basic auth and the form fields. `report(sid, status)` then does what
 * Twilio does when a message's status changes: it POSTs the form-encoded callback to the message's
 * StatusCallback URL over HTTP, signed with `X-Twilio-Signature`.
 */
export function fakeTwilio(sid: string, token: string) {
  const messages: TwilioMessage[] = [];
  const server = serve(async (req) => {
    const url = new URL(req.url);
    if (req.method !== "POST" || url.pathname !== `/2010-04-01/Accounts/${sid}/Messages.json`) {
      return Response.json({ code: 20404, message: "not found" }, { status: 404 });
    }
    if (req.headers.get("authorization") !== `Basic ${btoa(`${sid}:${token}`)}`) {
      return Response.json({ code: 20003, message: "Authenticate" }, { status: 401 });
    }
    const form = new URLSearchParams(await req.text());
    const to = form.get("To") ?? "";
    if (to === "+15550000000") {
      return Response.json({ code: 21211, message: "Invalid 'To'" }, { status: 400 });
    }
    const messageSid = `SM${String(messages.length + 1).padStart(32, "0")}`;
    messages.push({
      sid: messageSid,
      to,
      from: form.get("From") ?? "",
      body: form.get("Body") ?? "",
      statusCallback: form.get("StatusCallback"),
    });
    return Response.json({ sid: messageSid, status: "queued" }, { status: 201 });
  });
  /** The callback Twilio would send for `messageSid` reaching `status`, as URL, form and signature. */
  const callback = (messageSid: string, status: string, extra: Record<string, string> = {}) => {
    const message = messages.find((m) => m.sid === messageSid);
    if (!message?.statusCallback) throw new Error(`Message ${messageSid} has no StatusCallback`);
    const params = new URLSearchParams({
      AccountSid: sid,
      ApiVersion: "2010-04-01",
      From: message.from,
      MessageSid: messageSid,
      MessageStatus: status,
      SmsSid: messageSid,
      SmsStatus: status,
      To: message.to,
      ...extra,
    });
    return {
      url: message.statusCallback,
      params,
      signature: signTwilio(token, message.statusCallback, params),
    };
  };
  /** Posts a callback as Twilio does; `tamper` changes the request after signing (for negative tests). */
  const report = async (
    messageSid: string,
    status: string,
    options: {
      extra?: Record<string, string>;
      tamper?: (params: URLSearchParams) => void;
      signature?: string;
    } = {},
  ) => {
    const { url, params, signature } = callback(messageSid, status, options.extra);
    options.tamper?.(params);
    const headers: Record<string, string> = {
      "content-type": "application/x-www-form-urlencoded; charset=utf-8",
      "user-agent": "TwilioProxy/1.1",
      "i-twilio-idempotency-token": crypto.randomUUID(),
    };
    const sig = options.signature ?? signature;
    if (sig) headers["x-twilio-signature"] = sig;
    const res = await fetch(url, { method: "POST", headers, body: params.toString() });
    return { status: res.status, body: await res.json() };
  };
  return { ...server, messages, callback, report };
}

/** A fake FCM: a token endpoint verifying the service-account JWT, and messages:send checking the token. */
export async function fakeFcm(projectId: string) {
  const { publicKey, privateKey } = await generateKeyPair("RS256", { extractable: true });
  const clientEmail = "sender@test-project.iam.gserviceaccount.com";
  const serviceAccount = {
    client_email: clientEmail,
    private_key: await exportPKCS8(privateKey),
    project_id: projectId,
  };
  const verifyKey = await importSPKI(await exportSPKI(publicKey), "RS256");
  const state = { tokensIssued: 0, sends: [] as { token: string; title?: string; body: string }[] };
  let base = "";
  const server = serve(async (req) => {
    const url = new URL(req.url);
    if (url.pathname === "/token") {
      const form = new URLSearchParams(await req.text());
      if (form.get("grant_type") !== "urn:ietf:params:oauth:grant-type:jwt-bearer") {
        return Response.json({ error: "unsupported_grant_type" }, { status: 400 });
      }
      try {
        const { payload } = await jwtVerify(form.get("assertion") ?? "", verifyKey, {
          issuer: clientEmail,
          audience: `${base}/token`,
        });
        if (payload.scope !== "https://www.googleapis.com/auth/firebase.messaging") throw new Error("scope");
      } catch {
        return Response.json({ error: "invalid_grant" }, { status: 400 });
      }
      state.tokensIssued++;
      return Response.json({
        access_token: `ya29.${state.tokensIssued}`,
        expires_in: 3600,
        token_type: "Bearer",
      });
    }
    if (url.pathname === `/v1/projects/${projectId}/messages:send`) {
      if (!/^Bearer ya29\.\d+$/.test(req.headers.get("authorization") ?? "")) {
        return Response.json({ error: { status: "UNAUTHENTICATED" } }, { status: 401 });
      }
      const { message } = await req.json();
      if (message.token === "unregistered-token") {
        return Response.json({ error: { status: "NOT_FOUND", details: [{ errorCode: "UNREGISTERED" }] } }, {
          status: 404,
        });
      }
      state.sends.push({
        token: message.token,
        title: message.notification?.title,
        body: message.notification?.body,
      });
      return Response.json({ name: `projects/${projectId}/messages/${state.sends.length}` });
    }
    return new Response("not found", { status: 404 });
  });
  base = server.url;
  return { ...server, serviceAccount, state };
}

/** A fake APNs checking the ES256 provider token (kid, iss) and answering BadDeviceToken for "bad…" tokens. */
export async function fakeApns(teamId: string, keyId: string, topic: string) {
  const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
  const privatePem = await exportPKCS8(privateKey);
  const pushes: { token: string; alert: unknown }[] = [];
  const tokensSeen = new Set<string>();
  const server = serve(async (req) => {
    const match = new URL(req.url).pathname.match(/^\/3\/device\/([^/]+)$/);
    if (!match) return new Response("", { status: 404 });
    const auth = req.headers.get("authorization") ?? "";
    const jwt = auth.replace(/^bearer /, "");
    try {
      const { protectedHeader } = await jwtVerify(jwt, publicKey, { issuer: teamId });
      if (protectedHeader.kid !== keyId || protectedHeader.alg !== "ES256") throw new Error("header");
    } catch {
      return Response.json({ reason: "InvalidProviderToken" }, { status: 403 });
    }
    tokensSeen.add(jwt);
    if (req.headers.get("apns-topic") !== topic) {
      return Response.json({ reason: "BadTopic" }, { status: 400 });
    }
    const device = decodeURIComponent(match[1]!);
    if (device.startsWith("bad")) return Response.json({ reason: "BadDeviceToken" }, { status: 400 });
    const body = await req.json();
    pushes.push({ token: device, alert: body.aps?.alert });
    return new Response(null, { status: 200, headers: { "apns-id": req.headers.get("apns-id") ?? "" } });
  });
  return { ...server, privatePem, pushes, tokensSeen };
}
