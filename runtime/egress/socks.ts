/**
 * The SOCKS5 side of a host's egress gate (RFC 1928, CONNECT only, no authentication). Every outbound
 * connection of a function passes here: the raw connections of its worker (Deno.connect, Deno.connectTls) and
 * the connections of the gate's HTTP gateway (each hop of a fetch, each WebSocket). The host and port are
 * checked against the function's policy, the name is resolved once, every address checked, and the connection
 * made to a checked address: a name cannot be re-resolved elsewhere between the check and the connect.
 */
import type { EgressPolicy } from "./policy.ts";
import { readExactly } from "./wire.ts";

const VERSION = 5;
const REPLY = {
  ok: 0,
  failure: 1,
  notAllowed: 2,
  hostUnreachable: 4,
  refused: 5,
  badCommand: 7,
  badAddress: 8,
};
const HANDSHAKE_MS = 10_000;
// Connections one function may hold open through its gate (each holds two 16 KiB buffers in the host).
const MAX_TUNNELS = 1024;
const CONNECT_MS = 10_000;
const decoder = new TextDecoder();
const handshakeClosed = () => new Error("closed during the SOCKS handshake");

/** Reads the CONNECT request; returns the host (name or address text) and port, or the reply code to refuse. */
async function readRequest(conn: Deno.Conn): Promise<{ host: string; port: number } | { code: number }> {
  const [version, methods] = await readExactly(conn, 2, handshakeClosed);
  if (version !== VERSION) throw new Error("not SOCKS5");
  const offered = await readExactly(conn, methods!, handshakeClosed);
  if (!offered.includes(0)) {
    await conn.write(new Uint8Array([VERSION, 0xff]));
    throw new Error("no acceptable method");
  }
  await conn.write(new Uint8Array([VERSION, 0]));
  const [, command, , type] = await readExactly(conn, 4, handshakeClosed);
  let host: string;
  if (type === 1) host = [...await readExactly(conn, 4, handshakeClosed)].join(".");
  else if (type === 3) {
    host = decoder.decode(
      await readExactly(conn, (await readExactly(conn, 1, handshakeClosed))[0]!, handshakeClosed),
    );
  } else if (type === 4) {
    const b = await readExactly(conn, 16, handshakeClosed);
    const groups = [];
    for (let i = 0; i < 16; i += 2) groups.push(((b[i]! << 8) | b[i + 1]!).toString(16));
    host = groups.join(":");
  } else return { code: REPLY.badAddress };
  const p = await readExactly(conn, 2, handshakeClosed);
  if (command !== 1) return { code: REPLY.badCommand };
  return { host, port: (p[0]! << 8) | p[1]! };
}

/**
 * Answers with a reply code. A refusal carries its reason after the reply, as UTF-8 text up to the close:
 * standard clients ignore it, the worker's Deno.connect shows it.
 */
async function reply(conn: Deno.Conn, code: number, reason = ""): Promise<void> {
  const head = new Uint8Array([VERSION, code, 0, 1, 0, 0, 0, 0, 0, 0]);
  const text = new TextEncoder().encode(reason.slice(0, 400));
  const out = new Uint8Array(head.length + text.length);
  out.set(head);
  out.set(text, head.length);
  let at = 0;
  while (at < out.length) at += await conn.write(out.subarray(at));
}

async function pump(from: Deno.Conn, to: Deno.Conn): Promise<void> {
  const buffer = new Uint8Array(16 * 1024);
  try {
    for (;;) {
      const n = await from.read(buffer);
      if (n === null) break;
      let at = 0;
      while (at < n) at += await to.write(buffer.subarray(at, n));
    }
  } catch { /* either side closed */ }
  try {
    await (to as Deno.TcpConn).closeWrite();
  } catch { /* already closed */ }
}

async function connectFirst(addresses: string[], port: number): Promise<Deno.TcpConn | null> {
  for (const hostname of addresses) {
    try {
      return await Deno.connect({ hostname, port, signal: AbortSignal.timeout(CONNECT_MS) });
    } catch { /* try the next address */ }
  }
  return null;
}

async function serveOne(conn: Deno.Conn, policy: EgressPolicy): Promise<void> {
  const timer = setTimeout(() => conn.close(), HANDSHAKE_MS);
  let request;
  try {
    request = await readRequest(conn);
  } finally {
    clearTimeout(timer);
  }
  if ("code" in request) return await reply(conn, request.code, "Only CONNECT to an address or a name");
  const resolution = await policy.resolve(request.host, request.port);
  if (!resolution.ok) {
    return await reply(
      conn,
      resolution.refused ? REPLY.notAllowed : REPLY.hostUnreachable,
      resolution.message,
    );
  }
  const upstream = await connectFirst(resolution.addresses, request.port);
  if (!upstream) {
    return await reply(conn, REPLY.refused, `Connection to "${request.host}:${request.port}" failed`);
  }
  try {
    await reply(conn, REPLY.ok);
  } catch (err) {
    upstream.close();
    throw err;
  }
  await Promise.all([pump(conn, upstream), pump(upstream, conn)]);
  upstream.close();
}

/** Serves SOCKS5 CONNECT requests on `listener` under `policy` until the listener closes. */
export async function serveSocks(listener: Deno.Listener, policy: EgressPolicy): Promise<void> {
  let open = 0;
  for await (const conn of listener) {
    if (open >= MAX_TUNNELS) {
      conn.close();
      continue;
    }
    open++;
    serveOne(conn, policy).catch(() => {}).finally(() => {
      open--;
      try {
        conn.close();
      } catch { /* already closed */ }
    });
  }
}
