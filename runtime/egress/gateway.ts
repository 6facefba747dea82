/**
 * The HTTP side of a host's egress gate. A function's worker has no network permission of its own: its fetch
 * and WebSocket send each request here (plain HTTP, the real target in `x-egress-url`), and the gateway makes
 * it with its own fetch or WebSocket through the gate's SOCKS server, which checks every connection, redirect
 * hops included. Refusals come back as `x-egress-error: refused` so that the worker can throw NotCapable.
 */
import { closed, type EgressPolicy } from "./policy.ts";
import { EGRESS_HEADERS } from "./wire.ts";

const HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
]);
const WS_HANDSHAKE = /^sec-websocket-/;
// Bodies up to this size are read before sending, so that a 307/308 redirect can send them again.
const REPLAYABLE_BYTES = 1024 * 1024;
const DECODED = new Set(["gzip", "x-gzip", "br", "deflate"]);

function failure(kind: "refused" | "failed", message: string): Response {
  return new Response(message, {
    status: kind === "refused" ? 403 : 502,
    headers: { [EGRESS_HEADERS.error]: kind, "content-type": "text/plain;charset=utf-8" },
  });
}

function forwardHeaders(req: Request, websocket: boolean): Headers {
  const out = new Headers();
  for (const [name, value] of req.headers) {
    if (HOP.has(name) || name.startsWith("x-egress-")) continue;
    if (websocket && (WS_HANDSHAKE.test(name) || name === "user-agent")) continue;
    out.append(name, value);
  }
  return out;
}

function targetOf(req: Request, websocket: boolean): URL | string {
  const raw = req.headers.get(EGRESS_HEADERS.url);
  if (!raw) return "The request names no target";
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "The target is not a URL";
  }
  const schemes = websocket ? ["ws:", "wss:"] : ["http:", "https:"];
  if (!schemes.includes(url.protocol)) return `Scheme "${url.protocol}" is not supported`;
  return url;
}

function defaultPort(url: URL): number {
  if (url.port) return Number(url.port);
  return url.protocol === "https:" || url.protocol === "wss:" ? 443 : 80;
}

async function proxyFetch(req: Request, url: URL, client: Deno.HttpClient): Promise<Response> {
  const headers = forwardHeaders(req, false);
  let body: BodyInit | null = null;
  if (req.body) {
    const length = Number(req.headers.get("content-length") ?? NaN);
    body = length <= REPLAYABLE_BYTES ? await req.arrayBuffer() : req.body;
  }
  const mode = req.headers.get(EGRESS_HEADERS.redirect);
  let upstream: Response;
  try {
    upstream = await fetch(url, {
      method: req.method,
      headers,
      body,
      redirect: mode === "manual" || mode === "error" ? mode : "follow",
      signal: req.signal,
      client,
    });
  } catch (err) {
    if (req.signal.aborted) throw err;
    // The SOCKS server refused a connection (a name, or a redirect, that leads to a closed address).
    const cause = String((err as Error).cause ?? "");
    if (cause.includes("not allowed by ruleset")) {
      return failure("refused", closed(`"${url.host}"`, "an address it leads to"));
    }
    return failure(
      "failed",
      `fetch to ${url.origin} failed: ${
        cause.replace(/^.*client error/, "client error") || (err as Error).message
      }`,
    );
  }
  const out = new Headers(upstream.headers);
  // Deno's fetch decoded the body but kept these headers: the worker must not decode it again.
  if (DECODED.has((out.get("content-encoding") ?? "").toLowerCase())) {
    out.delete("content-encoding");
    out.delete("content-length");
  }
  out.set(EGRESS_HEADERS.finalUrl, upstream.url || url.href);
  if (upstream.redirected) out.set(EGRESS_HEADERS.redirected, "1");
  return new Response(upstream.body, {
    status: upstream.status,
    statusText: upstream.statusText,
    headers: out,
  });
}

function opened(ws: WebSocket): Promise<boolean> {
  return new Promise((resolve) => {
    ws.onopen = () => resolve(true);
    ws.onerror = () => resolve(false);
    ws.onclose = () => resolve(false);
  });
}

/** Relays a WebSocket: the upstream one first, then the worker's upgrade with the protocol it chose. */
async function proxyWebSocket(req: Request, url: URL, client: Deno.HttpClient): Promise<Response> {
  const protocols = (req.headers.get("sec-websocket-protocol") ?? "").split(",").map((p) => p.trim())
    .filter(Boolean);
  const upstream = new WebSocket(url, { protocols, headers: forwardHeaders(req, true), client });
  upstream.binaryType = "arraybuffer";
  if (!(await opened(upstream))) return failure("failed", `WebSocket to ${url.origin} failed`);
  const { socket, response } = Deno.upgradeWebSocket(req, { protocol: upstream.protocol || undefined });
  socket.binaryType = "arraybuffer";
  const early: (string | ArrayBuffer)[] = [];
  upstream.onmessage = (e) => socket.readyState === WebSocket.OPEN ? socket.send(e.data) : early.push(e.data);
  socket.onopen = () => {
    for (const m of early.splice(0)) socket.send(m);
  };
  socket.onmessage = (e) => upstream.readyState === WebSocket.OPEN && upstream.send(e.data);
  const closer = (other: WebSocket) => (e: CloseEvent) => {
    if (other.readyState === WebSocket.CLOSED || other.readyState === WebSocket.CLOSING) return;
    const sendable = e.code === 1000 || (e.code >= 3000 && e.code <= 4999);
    if (sendable) other.close(e.code, e.reason);
    else other.close();
  };
  upstream.onclose = closer(socket);
  socket.onclose = closer(upstream);
  upstream.onerror = () => socket.readyState === WebSocket.OPEN && socket.close();
  socket.onerror = () => upstream.readyState === WebSocket.OPEN && upstream.close();
  return response;
}

/**
 * Serves the gateway on `listener`'s address (an HTTP server) for one function: each request is checked
 * (a clear refusal on the first hop) and made through `client`, whose every connection the SOCKS server checks.
 */
export function serveGateway(
  options: { hostname: string; port: number },
  policy: EgressPolicy,
  client: Deno.HttpClient,
): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve({ ...options, onListen() {} }, async (req) => {
    const websocket = (req.headers.get("upgrade") ?? "").toLowerCase() === "websocket";
    const url = targetOf(req, websocket);
    if (typeof url === "string") return failure("failed", url);
    // Names are resolved and checked where the connection is made (the SOCKS server): one lookup per call.
    const refusal = policy.check(url.hostname, defaultPort(url));
    if (refusal) return failure(refusal.refused ? "refused" : "failed", refusal.message);
    return websocket ? await proxyWebSocket(req, url, client) : await proxyFetch(req, url, client);
  });
}
