/** What a function's worker and its host's egress gate agree on (this file is loaded into the worker). */

/** The name a worker's fetch and WebSocket use for the gateway; `.invalid` never resolves (RFC 6761). */
export const EGRESS_NAME = "egress.invalid";

/** Header names of the worker ↔ gateway exchange. */
export const EGRESS_HEADERS = {
  url: "x-egress-url",
  redirect: "x-egress-redirect",
  error: "x-egress-error",
  finalUrl: "x-egress-final-url",
  redirected: "x-egress-redirected",
} as const;

/** Where a host's egress gate listens: its HTTP gateway and its SOCKS5 server, on one loopback address. */
export interface EgressAddress {
  hostname: string;
  gatewayPort: number;
  socksPort: number;
}

/** The net permission of a worker whose host runs a gate: the gate, and nothing else. */
export function workerNetPermission(gate: EgressAddress): string[] {
  return [`${EGRESS_NAME}:80`, `${gate.hostname}:${gate.gatewayPort}`, `${gate.hostname}:${gate.socksPort}`];
}

/** Reads exactly `n` bytes of the SOCKS5 exchange; `closed` is the error when the other side closes first. */
export async function readExactly(conn: Deno.Conn, n: number, closed: () => Error): Promise<Uint8Array> {
  const out = new Uint8Array(n);
  let at = 0;
  while (at < n) {
    const got = await conn.read(out.subarray(at));
    if (got === null) throw closed();
    at += got;
  }
  return out;
}
