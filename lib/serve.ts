/**
 * The platform's HTTP server: Deno.serve's HTTP engine fed by our own accept loop, so that a connection that sends
 * no complete request within `idleTimeoutMs` is closed, whether it is idle between requests or sending its headers
 * slowly. Deno.serve has no such limit (measured on Deno 2.9: a silent client kept its socket over 75 s), which
 * lets a few thousand idle sockets exhaust the process's file descriptors. One timer sweeps every connection; no
 * request pays for a timer of its own. Request bodies have their own deadline where they are read.
 *
 * Each accepted connection is served by the engine's per-connection entry point, which Deno keeps internal
 * (`Deno[Deno.internal].serveHttpOnConnection`, the function behind Deno.serve): about twice as fast as Deno's
 * legacy per-connection API (`Deno.serveHttp`), which this server used before. An idle connection is closed by
 * closing that engine's resource for it. A connection is idle from the moment its last answer has been handed to
 * the engine in full (a stream's last chunk), so a slow answer or a long stream is never cut.
 *
 * One catch, and why the Deno version is pinned: when a WebSocket takes an upgraded connection's socket, the
 * engine's loop for that connection ends and shuts its engine down, which force-closes every WebSocket that engine
 * upgraded (the client sees close 1005 right after the 101). A WebSocket made with `upgradeWebSocket` below (never
 * `Deno.upgradeWebSocket` on a request this server handed over) detaches its connection first: its open event
 * closes the connection's engine resource, so that shutdown finds nothing to close. This relies on facts of Deno
 * 2.9.6 that no API promises: the open event is delivered before the loop's end (both follow from one step of the
 * engine, the socket handed over just before the loop returns), and the engine's resource is the one created just
 * before a resource made right after it. On another Deno version, or without these internals, `serve` runs
 * Deno.serve itself (with a warning: idle and slow connections are then not closed) rather than serve WebSockets
 * that drop; it checks the engine's resource on its first connection.
 */
import { log } from "./log.ts";

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

/** The Deno release whose internals this server was written against (see the header). */
const ENGINE_DENO_VERSION = "2.9.6";

/** What Deno.serve's engine returns for one connection. */
interface EngineServer {
  finished: Promise<void>;
}

interface Internals {
  serveHttpOnConnection(
    conn: Deno.Conn,
    signal: AbortSignal | undefined,
    handler: (req: Request, info: Deno.ServeHandlerInfo<Deno.NetAddr>) => Response | Promise<Response>,
    onError: (err: unknown) => Response,
    onListen: () => void,
  ): EngineServer;
  core: {
    createCancelHandle(): number;
    close(rid: number): void;
    tryClose(rid: number): void;
    resources(): Record<string, string>;
  };
}

/** Deno's internals, or null when this Deno is not the one this server was written against. */
function internals(): Internals | null {
  const deno = Deno as unknown as Record<symbol, unknown> & { internal?: symbol };
  const found = deno.internal ? deno[deno.internal] as Partial<Internals> | undefined : undefined;
  const core = found?.core;
  if (
    Deno.version.deno !== ENGINE_DENO_VERSION || typeof found?.serveHttpOnConnection !== "function" ||
    typeof core?.createCancelHandle !== "function" || typeof core.close !== "function" ||
    typeof core.tryClose !== "function" || typeof core.resources !== "function"
  ) return null;
  return found as Internals;
}

interface Connection {
  engine: EngineServer;
  /** The engine's resource for this connection; closing it detaches an upgraded WebSocket (see the header). */
  rid: number;
  /** Requests whose answer is not yet fully written, and WebSockets not yet open; the idle clock runs only at zero. */
  active: number;
  /** When the connection last became idle. */
  idleSince: number;
  /** An answer said `Connection: close`: the connection closes once idle and flushed, even mid request body. */
  closeWhenIdle: boolean;
  /** Hands the socket to its open WebSocket: the engine's loop for this connection must not close it. */
  detach(): void;
}

/** How long a connection to close (stopping, or after `Connection: close`) may stay idle for its answer to flush. */
const STOP_LINGER_MS = 200;

/** The connection each request of a running server arrived on, for `upgradeWebSocket`. */
const arrivedOn = new WeakMap<Request, Connection>();

/**
 * Deno.upgradeWebSocket for a request that `serve` handed to its handler, whose WebSocket outlives the engine's
 * loop for its connection (see the header); Deno.upgradeWebSocket's own would be closed at once. Any other request
 * (one of a plain Deno.serve) gets Deno.upgradeWebSocket's.
 */
export function upgradeWebSocket(
  req: Request,
  options?: Deno.UpgradeWebSocketOptions,
): Deno.WebSocketUpgrade {
  const conn = arrivedOn.get(req);
  const upgrade = Deno.upgradeWebSocket(req, options);
  if (!conn) return upgrade;
  conn.active++; // the sweep must not close the connection before its WebSocket has taken the socket
  let settled = false;
  const settle = (open: boolean) => {
    if (settled) return;
    settled = true;
    conn.active--;
    if (open) conn.detach();
  };
  upgrade.socket.addEventListener("open", () => settle(true));
  upgrade.socket.addEventListener("error", () => settle(false));
  upgrade.socket.addEventListener("close", () => settle(false));
  return upgrade;
}

/** Deno.serve as it is: every feature but the closing of idle and slow connections. */
function serveWithoutIdleLimit(options: ServeOptions, handler: ServeHandler): Server {
  log.warn("idle and slow connections are not closed on this Deno version", {
    found: Deno.version.deno,
    needed: ENGINE_DENO_VERSION,
  });
  const server = Deno.serve({
    hostname: options.hostname,
    port: options.port,
    onListen: () => {},
    onError: (err) => options.onError?.(err) ?? new Response(null, { status: 500 }),
  }, (req, info) => handler(req, { remoteAddr: info.remoteAddr }));
  const addr = server.addr as Deno.NetAddr;
  Promise.resolve(options.onListen?.(addr)).catch(() => {});
  return { addr, shutdown: () => server.shutdown(), finished: server.finished };
}

export function serve(options: ServeOptions, handler: ServeHandler): Server {
  const engine = internals();
  if (!engine) return serveWithoutIdleLimit(options, handler);
  const { serveHttpOnConnection, core } = engine;
  const listener = Deno.listen({ hostname: options.hostname, port: options.port });
  const addr = listener.addr as Deno.NetAddr;
  // Connections that may still carry a request; one whose WebSocket has opened leaves the set.
  const connections = new Set<Connection>();
  let stopping = false;
  let closedAll: (() => void) | null = null;
  let checked = false;

  const onError = (err: unknown) => options.onError?.(err) ?? new Response(null, { status: 500 });
  const forget = (conn: Connection) => {
    if (!connections.delete(conn)) return;
    if (stopping && connections.size === 0) closedAll?.();
  };
  /** Ends a connection's engine: an idle connection's socket closes; a detached one stays with its WebSocket. */
  const close = (conn: Connection) => {
    core.tryClose(conn.rid);
    forget(conn);
  };

  const sweepEvery = (ms: number) =>
    setInterval(() => {
      const now = Date.now();
      for (const conn of connections) {
        const limit = stopping || conn.closeWhenIdle ? STOP_LINGER_MS : options.idleTimeoutMs;
        if (conn.active === 0 && conn.idleSince <= now - limit) close(conn);
      }
    }, ms);
  let sweep = sweepEvery(Math.max(50, Math.min(1000, options.idleTimeoutMs / 4)));

  const serveConnection = (tcp: Deno.Conn) => {
    const conn = {
      active: 0,
      idleSince: Date.now(),
      closeWhenIdle: false,
      detach: () => close(conn),
    } as Connection;
    // The engine's own info reads the address from the request, and throws once the answer is sent.
    const info: ServeInfo = { remoteAddr: tcp.remoteAddr };
    const done = () => {
      conn.active--;
      conn.idleSince = Date.now();
    };
    const answer = (req: Request, engineInfo: Deno.ServeHandlerInfo<Deno.NetAddr>) => {
      conn.active++;
      // Settles once the whole answer has been handed to the engine (a stream's last chunk), or the client left.
      engineInfo.completed.then(done, done);
      arrivedOn.set(req, conn);
      const response = handler(req, info);
      return response instanceof Promise ? response.then(closeIfAsked) : closeIfAsked(response);
    };
    // The engine would go on reading (and discarding) a body the client keeps sending after such an answer.
    const closeIfAsked = (response: Response) => {
      if (stopping && response.status !== 101) {
        try {
          response.headers.set("connection", "close");
        } catch { /* immutable headers: closed all the same */ }
      }
      if (stopping || response.headers.get("connection")?.toLowerCase() === "close") {
        conn.closeWhenIdle = true;
      }
      return response;
    };
    conn.engine = serveHttpOnConnection(tcp, undefined, answer, onError, () => {});
    // The engine's resource is the last one it created, and nothing else ran since: the next id is ours.
    const probe = core.createCancelHandle();
    core.close(probe);
    conn.rid = probe - 1;
    if (!checked) {
      checked = true;
      if (core.resources()[conn.rid] !== "http") {
        throw new Error(
          "lib/serve.ts cannot find the engine's connection resource: Deno's internals have changed",
        );
      }
    }
    connections.add(conn);
    conn.engine.finished.catch(() => {/* a reset connection ends this connection only */}).finally(() =>
      forget(conn)
    );
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
    clearInterval(sweep);
    sweep = sweepEvery(STOP_LINGER_MS / 4);
    const allClosed = new Promise<void>((resolve) => (closedAll = resolve));
    for (const conn of connections) if (conn.active === 0) close(conn);
    if (connections.size > 0) await allClosed;
    clearInterval(sweep);
    finish();
  };

  return { addr, shutdown, finished };
}
