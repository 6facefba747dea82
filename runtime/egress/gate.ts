/**
 * A host's egress gate: the SOCKS5 server that checks and makes every outbound connection of the function,
 * and the HTTP gateway its worker's fetch and WebSocket go through. Both listen on the loopback address the
 * host's flags leave open for them; the worker may connect to these two ports and nothing else.
 */
import { serveGateway } from "./gateway.ts";
import { EgressPolicy, type EgressRules } from "./policy.ts";
import { serveSocks } from "./socks.ts";
import type { EgressAddress } from "./wire.ts";

/** Starts the gate of one function on `hostname`; it runs until the host process ends. */
export function openGate(rules: EgressRules, hostname: string): EgressAddress {
  const policy = new EgressPolicy(rules);
  const listener = Deno.listen({ hostname, port: 0 });
  serveSocks(listener, policy).catch(() => {});
  const socksPort = listener.addr.port;
  const client = Deno.createHttpClient({
    proxy: { transport: "socks5", url: `socks5h://${hostname}:${socksPort}` },
  });
  const gateway = serveGateway({ hostname, port: 0 }, policy, client);
  return { hostname, gatewayPort: gateway.addr.port, socksPort };
}
