/**
 * The platform's HTTP server: Deno's HTTP engine fed by our own accept loop, so that a connection that sends no
 * complete request within `idleTimeoutMs` is closed, whether it is idle between requests or sending its headers
 * slowly. Deno.serve has no such limit (measured on Deno 2.9: a silent client kept its socket over 75 s), which
 * lets a few thousand idle sockets exhaust the process's file descriptors. One timer sweeps every connection; no
 * request pays for a timer of its own. Request bodies have their own deadline where they are read.
 */
export interface ServeInfo {
  remoteAddr: Deno.Addr;
}

export type ServeHandler = (req: Request, info: ServeInfo) => Response | Promise<Response>;

export interface ServeOptions {
  hostname: string;
  port: number;
  /** Longest a connection may wait for its next request's headers, whether idle or sending them slowly. */
  idleTimeoutMs: number;
  onListen?: (addr: Deno.NetAddr) => void | Promise<void>;
  /** The answer when the handler throws (a bare 500 otherwise). */
  onError?: (err: unknown) => Response;
}

export interface Server {
  addr: Deno.NetAddr;
  /** Stops accepting, closes idle connections and resolves once every request in flight has been answered. */
  shutdown(): Promise<void>;
  /** Resolves when a shutdown has completed. */
  finished: Promise<void>;
}

/** Deno's per-connection HTTP API (`Deno.serveHttp`): still in the runtime, no longer in its type library. */
interface RequestEvent {
  readonly request: Request;
  respondWith(response: Response): Promise<void>;
}
interface HttpConn {
  nextRequest(): Promise<RequestEvent | null>;
  close(): void;
}
const serveHttp = (Deno as unknown as { serveHttp(conn: Deno.Conn): HttpConn }).serveHttp;

interface Connection {
  http: HttpConn;
  /** Requests being answered; the idle clock runs only at zero. */
  active: number;
  /** When the connection last became idle. */
  idleSince: number;
}

/** While stopping, how long a connection that went idle may stay open for its last answer to be flushed. */
const STOP_LINGER_MS = 200;

export function serve(options: ServeOptions, handler: ServeHandler): Server {
  const listener = Deno.listen({ hostname: options.hostname, port: options.port });
  const addr = listener.addr as Deno.NetAddr;
  // Connections that may still carry a request; an upgraded one belongs to its WebSocket and leaves the set.
  const connections = new Set<Connection>();
  let stopping = false;
  let closedAll: (() => void) | null = null;

  const forget = (conn: Connection) => {
    if (!connections.delete(conn)) return;
    try {
      conn.http.close();
    } catch { /* already closed by the client */ }
    if (stopping && connections.size === 0) closedAll?.();
  };

  const sweep = setInterval(() => {
    const expired = Date.now() - (stopping ? STOP_LINGER_MS : options.idleTimeoutMs);
    for (const conn of connections) if (conn.active === 0 && conn.idleSince <= expired) forget(conn);
  }, Math.max(50, Math.min(1000, options.idleTimeoutMs / 4)));

  /** Answers one request; true when it upgraded the connection (a 101), which then carries no more requests. */
  const answer = async (conn: Connection, event: RequestEvent, info: ServeInfo, upgrade: boolean) => {
    conn.active++;
    let response: Response | undefined;
    try {
      try {
        response = await handler(event.request, info);
      } catch (err) {
        response = options.onError?.(err) ?? new Response(null, { status: 500 });
      }
      if (stopping && !upgrade) {
        try {
          response.headers.set("connection", "close"); // the engine closes the socket once this is written
        } catch { /* immutable headers: the linger sweep closes it */ }
      }
      await event.respondWith(response);
    } catch {
      // The client went away before the answer was written: nothing to tell anyone.
    } finally {
      conn.active--;
      conn.idleSince = Date.now();
      if (upgrade) connections.delete(conn);
    }
    return upgrade && response?.status === 101;
  };

  const serveConnection = async (tcp: Deno.Conn) => {
    const conn: Connection = { http: serveHttp(tcp), active: 0, idleSince: Date.now() };
    connections.add(conn);
    const info = { remoteAddr: tcp.remoteAddr };
    try {
      for (let event; (event = await conn.http.nextRequest());) {
        const upgrade = event.request.headers.has("upgrade");
        const answered = answer(conn, event, info, upgrade);
        // After a 101 the socket belongs to its WebSocket: asking for a next request would leave this loop, its
        // connection record and a pending promise held for as long as the WebSocket lives.
        if (upgrade && await answered) return;
      }
    } catch {
      // A malformed request or a reset connection ends this connection only.
    } finally {
      if (conn.active === 0) forget(conn);
    }
  };

  const accepting = (async () => {
    await options.onListen?.(addr);
    while (!stopping) {
      let tcp: Deno.Conn;
      try {
        tcp = await listener.accept();
      } catch {
        if (stopping) break;
        // Out of file descriptors, or a connection reset before it was accepted: never stop serving.
        await new Promise((r) => setTimeout(r, 20));
        continue;
      }
      (tcp as Deno.TcpConn).setNoDelay(true);
      serveConnection(tcp);
    }
  })();

  const { promise: finished, resolve: finish } = Promise.withResolvers<void>();
  const shutdown = async () => {
    if (stopping) return await finished;
    stopping = true;
    listener.close();
    await accepting;
    const allClosed = new Promise<void>((resolve) => (closedAll = resolve));
    for (const conn of connections) if (conn.active === 0) forget(conn);
    if (connections.size > 0) await allClosed;
    clearInterval(sweep);
    finish();
  };

  return { addr, shutdown, finished };
}
