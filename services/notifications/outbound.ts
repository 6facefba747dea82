import http from "node:http";
import http2 from "node:http2";
import https from "node:https";
import type { Readable } from "node:stream";
import { NetGuard } from "./net_guard.ts";

/** A request made by a provider. */
export interface OutboundRequest {
  method: "POST" | "GET";
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
}

/** Statuses whose answer has no body (the Response constructor refuses one). */
const NULL_BODY = new Set([204, 205, 304]);

/** How long an idle HTTP/2 session (APNs) or keep-alive socket is kept. */
const IDLE_MS = 60_000;

/** The error of an answer whose stream closed before its end (made only then: an exception's stack costs). */
const cutShort = () => new DOMException("The answer was cut short", "AbortError");

/** A node stream as a web stream, with backpressure; cancelling it destroys the source. */
function toWebStream(source: Readable): ReadableStream<Uint8Array> {
  let settled = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const settle = (err?: unknown) => {
        if (settled) return;
        settled = true;
        if (err === undefined) controller.close();
        else controller.error(err);
      };
      source.on("data", (chunk: Uint8Array) => {
        if (settled) return;
        controller.enqueue(new Uint8Array(chunk));
        if ((controller.desiredSize ?? 0) <= 0) source.pause();
      });
      source.once("end", () => settle());
      source.once("error", (err) => settle(err));
      // Closed without an end (aborted, timed out, reset): the reader must not wait forever.
      source.once("close", () => settled || settle(cutShort()));
    },
    pull() {
      source.resume();
    },
    cancel() {
      settled = true;
      source.destroy();
    },
  }, { highWaterMark: 4 });
}

/** An answer read whole: its status, a header by name, and its body (at most the bytes asked for). */
export interface HttpAnswer {
  status: number;
  headers: { get(name: string): string | null };
  body: string;
}

/** The header `name` of a node answer's raw headers (the first, case-insensitive), or null. */
function rawHeader(raw: string[], name: string): string | null {
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() === name) return raw[i + 1]!;
  }
  return null;
}

/** Refuses a status a Response could not carry (outside 200–599): a hostile receiver's answer is an error. */
function checkStatus(status: number, source: Readable): void {
  if (!Number.isInteger(status) || status < 200 || status > 599) {
    source.destroy();
    throw new Error(`The server answered an invalid HTTP status ${status}`);
  }
}

const utf8 = new TextDecoder();

/**
 * Reads a node answer's body as text, at most `maxBytes` of it: past that the answer is destroyed unread (a
 * hostile receiver that streams without end cannot grow the platform's memory).
 */
function readNode(source: Readable, maxBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    let size = 0;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      const bytes = chunks.length === 1 ? chunks[0]! : new Uint8Array(size);
      if (chunks.length > 1) {
        let at = 0;
        for (const c of chunks) {
          bytes.set(c, at);
          at += c.byteLength;
        }
      }
      resolve(utf8.decode(bytes));
    };
    source.on("data", (chunk: Uint8Array) => {
      if (done) return;
      const room = maxBytes - size;
      const part = chunk.byteLength > room ? chunk.subarray(0, room) : chunk;
      chunks.push(part);
      size += part.byteLength;
      if (size >= maxBytes) {
        finish();
        source.destroy();
      }
    });
    source.once("end", finish);
    source.once("error", (err) => done || (done = true, reject(err)));
    source.once("close", () => done || (done = true, reject(cutShort())));
  });
}

/**
 * The web Response of a node answer. A receiver may be hostile: a header `Headers` refuses is dropped, and a
 * status the Response cannot carry (outside 200–599) is an error, never an exception in a node callback.
 */
function answer(status: number, pairs: [string, string][], source: Readable): Response {
  const headers = new Headers();
  for (const [name, value] of pairs) {
    try {
      headers.append(name, value);
    } catch { /* not a valid header: dropped */ }
  }
  checkStatus(status, source);
  if (NULL_BODY.has(status)) {
    source.resume();
    return new Response(null, { status, headers });
  }
  return new Response(toWebStream(source), { status, headers });
}

/**
 * OutboundHttp makes the HTTP calls of providers and webhooks through the {@linkcode NetGuard}: every
 * connection resolves its host once, checks each address and connects to those addresses (node:http(s) and
 * node:http2 with the guard's `lookup`), so a name cannot answer a public address to the check and a private
 * one to the connection. TLS is still verified against the host name. `fetch` could not do this in Deno 2.9.6:
 * its `tcp` proxy transport pins the address but then speaks plaintext to https URLs (measured).
 */
export class OutboundHttp {
  private readonly agents: { "http:": http.Agent; "https:": https.Agent };
  private readonly sessions = new Map<string, http2.ClientHttp2Session>();

  /** `ca`: the roots to trust instead of the system's (a private CA; the tests' own certificate). */
  constructor(private readonly guard: NetGuard, private readonly ca?: string[]) {
    this.agents = {
      "http:": new http.Agent({ keepAlive: true, timeout: IDLE_MS }),
      "https:": new https.Agent({ keepAlive: true, timeout: IDLE_MS, ca }),
    };
  }

  /** An HTTP/1.1 request; redirects are not followed. Resolves when the headers arrive. */
  async fetch(url: string, init: OutboundRequest): Promise<Response> {
    return await this.request(url, init, (res, resolve, reject) => {
      const pairs: [string, string][] = [];
      const raw = res.rawHeaders;
      for (let i = 0; i + 1 < raw.length; i += 2) pairs.push([raw[i]!, raw[i + 1]!]);
      try {
        resolve(answer(res.statusCode ?? 0, pairs, res));
      } catch (err) {
        reject(err);
      }
    });
  }

  /**
   * An HTTP/1.1 request read whole: what {@linkcode OutboundHttp.fetch} and reading at most `maxBytes` of the
   * body do, without building a web Response and stream for an answer read at once (a provider's hot path).
   */
  async send(url: string, init: OutboundRequest, maxBytes: number): Promise<HttpAnswer> {
    return await this.request(url, init, (res, resolve, reject) => {
      const status = res.statusCode ?? 0;
      try {
        checkStatus(status, res);
      } catch (err) {
        return reject(err);
      }
      const raw = res.rawHeaders;
      const headers = { get: (name: string) => rawHeader(raw, name.toLowerCase()) };
      if (NULL_BODY.has(status)) {
        res.resume();
        return resolve({ status, headers, body: "" });
      }
      readNode(res, maxBytes).then((body) => resolve({ status, headers, body }), reject);
    });
  }

  /** Makes the request through the guard; `answered` settles the result from the answer's head. */
  private async request<T>(
    url: string,
    init: OutboundRequest,
    answered: (
      res: http.IncomingMessage,
      resolve: (value: T) => void,
      reject: (err: unknown) => void,
    ) => void,
  ): Promise<T> {
    const target = NetGuard.parseUrl(url);
    await this.guard.preflight(target.hostname);
    init.signal.throwIfAborted();
    const body = init.body === undefined ? undefined : new TextEncoder().encode(init.body);
    const headers = { ...init.headers, ...(body ? { "content-length": String(body.byteLength) } : {}) };
    const https_ = target.protocol === "https:";
    const transport = https_ ? https : http;
    return await new Promise<T>((resolve, reject) => {
      // The URL's parts, as node would take them from the URL (an IPv6 literal without its brackets).
      const req = transport.request({
        protocol: target.protocol,
        hostname: target.hostname.startsWith("[") ? target.hostname.slice(1, -1) : target.hostname,
        port: target.port || (https_ ? 443 : 80),
        path: target.pathname + target.search,
        ...(target.username || target.password
          ? { auth: `${decodeURIComponent(target.username)}:${decodeURIComponent(target.password)}` }
          : {}),
        method: init.method,
        headers,
        agent: this.agents[https_ ? "https:" : "http:"],
        lookup: this.guard.lookup as unknown as http.RequestOptions["lookup"],
        signal: init.signal,
      }, (res) => answered(res, resolve, reject));
      req.once("error", reject);
      req.end(body);
    });
  }

  private async session(origin: string, partition: string): Promise<http2.ClientHttp2Session> {
    const key = `${partition} ${origin}`;
    const open = this.sessions.get(key);
    if (open && !open.closed && !open.destroyed) return open;
    const target = new URL(origin);
    // Resolved and checked before connecting, so a refusal is the guard's own error; the session can only
    // connect to these addresses.
    const addresses = await this.guard.resolve(target.hostname);
    const pinned = (_host: string, options: { all?: boolean }, cb: (...args: unknown[]) => void) => {
      const all = addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
      if (options?.all) cb(null, all);
      else cb(null, all[0]!.address, all[0]!.family);
    };
    const session = http2.connect(origin, {
      lookup: pinned,
      ...(this.ca ? { ca: this.ca } : {}),
    } as unknown as http2.SecureClientSessionOptions);
    session.setTimeout(IDLE_MS, () => session.close());
    const forget = () => {
      if (this.sessions.get(key) === session) this.sessions.delete(key);
    };
    session.once("close", forget);
    session.once("goaway", forget);
    session.on("error", forget);
    this.sessions.set(key, session);
    return session;
  }

  /**
   * An HTTP/2 request (APNs speaks only HTTP/2). Sessions are kept per origin and `partition` and reused; a
   * partition keeps one sender's connection to itself (APNs ties a connection to its provider token).
   */
  async fetch2(url: string, init: OutboundRequest, partition = ""): Promise<Response> {
    const target = NetGuard.parseUrl(url);
    init.signal.throwIfAborted();
    const session = await this.session(target.origin, partition);
    return await new Promise<Response>((resolve, reject) => {
      const stream = session.request({
        ":method": init.method,
        ":path": target.pathname + target.search,
        ...init.headers,
      });
      const abort = () => {
        stream.close(http2.constants.NGHTTP2_CANCEL);
        reject(init.signal.reason);
      };
      const failed = (err: Error) => reject(err);
      init.signal.addEventListener("abort", abort, { once: true });
      session.once("error", failed);
      stream.once("close", () => {
        init.signal.removeEventListener("abort", abort);
        session.off("error", failed);
        reject(new DOMException("The stream closed before an answer", "AbortError")); // no-op once answered
      });
      stream.once("error", failed);
      stream.once("response", (h) => {
        session.off("error", failed);
        const pairs: [string, string][] = [];
        for (const [k, v] of Object.entries(h)) {
          if (k.startsWith(":") || v === undefined) continue;
          for (const one of Array.isArray(v) ? v : [v]) pairs.push([k, String(one)]);
        }
        try {
          resolve(answer(Number(h[":status"] ?? 0), pairs, stream));
        } catch (err) {
          reject(err);
        }
      });
      stream.end(init.body);
    });
  }

  /** Closes the HTTP/2 sessions of a partition (its sender is gone). */
  closePartition(partition: string): void {
    for (const [key, session] of this.sessions) {
      if (key.startsWith(`${partition} `)) {
        this.sessions.delete(key);
        session.close();
      }
    }
  }

  /** Closes keep-alive sockets and HTTP/2 sessions. */
  close(): void {
    this.agents["http:"].destroy();
    this.agents["https:"].destroy();
    for (const session of this.sessions.values()) session.destroy();
    this.sessions.clear();
  }
}
