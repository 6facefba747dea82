/// <reference no-default-lib="true" />
/// <reference lib="deno.worker" />
/**
 * The network of a function's worker: its only net permission is its host's egress gate, so fetch,
 * WebSocket, Deno.connect and Deno.connectTls are replaced, before the user module loads, by versions that
 * go through the gate. These are conveniences, not the fence: code that reaches Deno's own functions another
 * way still has no permission but the gate's two ports, and the gate checks every connection it makes.
 */
import { EGRESS_HEADERS, EGRESS_NAME, type EgressAddress, readExactly } from "./wire.ts";

const NULL_BODY = new Set([204, 205, 304]);
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const gateClosed = () => new Deno.errors.ConnectionReset("The egress gate closed the connection");

async function readReason(conn: Deno.Conn): Promise<string> {
  const buffer = new Uint8Array(512);
  let text = "";
  for (let i = 0; i < 4; i++) {
    const n = await conn.read(buffer).catch(() => null);
    if (n === null) break;
    text += decoder.decode(buffer.subarray(0, n), { stream: true });
  }
  return text;
}

/** Asks the gate's SOCKS5 server for a connection to host:port; throws as Deno.connect would. */
async function socksConnect(conn: Deno.Conn, host: string, port: number): Promise<void> {
  const name = encoder.encode(host.replace(/^\[|\]$/g, ""));
  if (name.length === 0 || name.length > 255) throw new TypeError(`Invalid host "${host}"`);
  const request = new Uint8Array([5, 1, 0, 5, 1, 0, 3, name.length, ...name, port >> 8, port & 0xff]);
  let at = 0;
  while (at < request.length) at += await conn.write(request.subarray(at));
  const head = await readExactly(conn, 12, gateClosed); // method choice (2 bytes), then the reply (10 bytes)
  const code = head[3];
  if (head[1] === 0 && code === 0) return;
  const reason = (await readReason(conn)) || `Connection to "${host}:${port}" failed`;
  if (code === 2) throw new Deno.errors.NotCapable(reason);
  if (code === 5) throw new Deno.errors.ConnectionRefused(reason);
  throw new Error(reason);
}

function toWebSocketUrl(url: string | URL): URL {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new DOMException(`Invalid URL "${url}"`, "SyntaxError");
  }
  if (target.protocol === "http:") target.protocol = "ws:";
  else if (target.protocol === "https:") target.protocol = "wss:";
  if (target.protocol !== "ws:" && target.protocol !== "wss:") {
    throw new DOMException(`Only ws: and wss: URLs are supported, not "${target.protocol}"`, "SyntaxError");
  }
  if (target.hash) throw new DOMException("A WebSocket URL has no fragment", "SyntaxError");
  return target;
}

/** Replaces the worker's network functions by versions that go through the gate at `gate`. */
export function installEgress(gate: EgressAddress): void {
  const rawFetch = globalThis.fetch;
  const RawWebSocket = globalThis.WebSocket;
  const rawConnect = Deno.connect;
  const rawStartTls = Deno.startTls;
  const client = Deno.createHttpClient({
    proxy: { transport: "tcp", hostname: gate.hostname, port: gate.gatewayPort },
  });
  const gatewayUrl = `http://${EGRESS_NAME}/`;

  async function fetchThroughGate(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
    const req = new Request(input, init);
    const scheme = new URL(req.url).protocol;
    if (scheme !== "http:" && scheme !== "https:") return await rawFetch(req); // data:, blob: need no network
    const headers = new Headers(req.headers);
    headers.set(EGRESS_HEADERS.url, req.url);
    headers.set(EGRESS_HEADERS.redirect, req.redirect);
    // A body known in full travels with its length (some servers refuse chunked uploads); a stream streams.
    const streamed = init?.body instanceof ReadableStream ||
      (init?.body === undefined && input instanceof Request);
    const body = req.body === null ? null : streamed ? req.body : await req.arrayBuffer();
    const res = await rawFetch(gatewayUrl, {
      method: req.method,
      headers,
      body,
      signal: req.signal,
      redirect: "manual",
      client,
    });
    const error = res.headers.get(EGRESS_HEADERS.error);
    if (error) {
      const message = await res.text();
      throw error === "refused" ? new Deno.errors.NotCapable(message) : new TypeError(message);
    }
    const out = new Headers();
    for (const [k, v] of res.headers) if (!k.startsWith("x-egress-")) out.append(k, v);
    const response = new Response(NULL_BODY.has(res.status) ? null : res.body, {
      status: res.status,
      statusText: res.statusText,
      headers: out,
    });
    Object.defineProperties(response, {
      url: { value: res.headers.get(EGRESS_HEADERS.finalUrl) ?? req.url },
      redirected: { value: res.headers.get(EGRESS_HEADERS.redirected) === "1" },
    });
    return response;
  }

  function gatedArgs(url: string | URL, protocolsOrOptions?: string | string[] | WebSocketOptions) {
    const target = toWebSocketUrl(url);
    const options: WebSocketOptions =
      typeof protocolsOrOptions === "object" && !Array.isArray(protocolsOrOptions)
        ? protocolsOrOptions
        : { protocols: protocolsOrOptions };
    const headers = new Headers(options.headers);
    headers.set(EGRESS_HEADERS.url, target.href);
    return [target.href, { protocols: options.protocols, headers, client }] as const;
  }

  class GatedWebSocket extends RawWebSocket {
    #target: string;
    constructor(url: string | URL, protocolsOrOptions?: string | string[] | WebSocketOptions) {
      const [target, options] = gatedArgs(url, protocolsOrOptions);
      super(`ws://${EGRESS_NAME}/`, options);
      this.#target = target;
    }
    override get url(): string {
      return this.#target;
    }
  }

  async function connectThroughGate(options: Deno.ConnectOptions): Promise<Deno.TcpConn> {
    const transport = (options as { transport?: string }).transport;
    if (transport !== undefined && transport !== "tcp") {
      return await rawConnect(options as Deno.ConnectOptions); // unix, vsock: no permission, Deno refuses
    }
    const hostname = options.hostname ?? "127.0.0.1";
    const port = options.port;
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new TypeError(`Invalid port "${port}"`);
    const conn = await rawConnect({ hostname: gate.hostname, port: gate.socksPort, signal: options.signal });
    try {
      await socksConnect(conn, hostname, port);
    } catch (err) {
      conn.close();
      throw err;
    }
    Object.defineProperty(conn, "remoteAddr", { value: { transport: "tcp", hostname, port } });
    return conn;
  }

  async function connectTlsThroughGate(options: Deno.ConnectTlsOptions): Promise<Deno.TlsConn> {
    if ((options as { cert?: string; key?: string }).cert || (options as { key?: string }).key) {
      throw new TypeError("Client certificates are not supported in functions");
    }
    const hostname = options.hostname ?? "127.0.0.1";
    const conn = await connectThroughGate({ hostname, port: options.port });
    return await rawStartTls(conn, {
      hostname,
      caCerts: options.caCerts,
      alpnProtocols: options.alpnProtocols,
      unsafelyDisableHostnameVerification: options.unsafelyDisableHostnameVerification,
    });
  }

  const define = (target: object, name: string, value: unknown) =>
    Object.defineProperty(target, name, { value, writable: false, configurable: false });
  define(globalThis, "fetch", fetchThroughGate);
  define(globalThis, "WebSocket", GatedWebSocket);
  define(Deno, "connect", connectThroughGate);
  define(Deno, "connectTls", connectTlsThroughGate);
}
