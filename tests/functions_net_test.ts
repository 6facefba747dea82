import { assert, assertEquals, assertMatch } from "./assert.ts";
import { json, startPlatform } from "./harness.ts";

const fixture = (name: string) => Deno.readTextFile(new URL(`./fixtures/${name}`, import.meta.url));

/** A local HTTP service on every interface (IPv4 and IPv6): echo, a redirect, a WebSocket echo. */
function localService(): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve({ hostname: "::", port: 0, onListen() {} }, async (req) => {
    const url = new URL(req.url);
    if (url.pathname === "/ws") {
      const { socket, response } = Deno.upgradeWebSocket(req);
      socket.onmessage = (e) => socket.send(`echo ${e.data}`);
      return response;
    }
    if (url.pathname === "/redirect") {
      return new Response(null, { status: 302, headers: { location: "/echo?from=redirect" } });
    }
    return Response.json({
      path: url.pathname + url.search,
      mine: req.headers.get("x-mine"),
      body: await req.text(),
    });
  });
}

/** Answers `echo <first read>` on each connection of `listener`, then closes it. */
function echoOn<L extends Deno.Listener>(listener: L): L {
  (async () => {
    for await (const conn of listener) {
      (async () => {
        const buffer = new Uint8Array(64);
        const n = await conn.read(buffer);
        if (n) {
          await conn.write(
            new TextEncoder().encode(`echo ${new TextDecoder().decode(buffer.subarray(0, n))}`),
          );
        }
        conn.close();
      })().catch(() => {});
    }
  })().catch(() => {});
  return listener;
}

/** A raw TCP echo on every interface. */
function tcpEcho(): Deno.TcpListener {
  const listener = Deno.listen({ hostname: "::", port: 0 });
  return echoOn(listener);
}

/** A TLS echo on [::1] with the test certificate (tests/fixtures/tls, signed by the test CA). */
async function tlsEcho(): Promise<Deno.TlsListener> {
  const dir = new URL("./fixtures/tls/", import.meta.url);
  const listener = Deno.listenTls({
    hostname: "::1",
    port: 0,
    cert: await Deno.readTextFile(new URL("cert.pem", dir)),
    key: await Deno.readTextFile(new URL("key.pem", dir)),
  });
  return echoOn(listener);
}

/** The machine's own non-loopback addresses (functions may not reach them). */
function ownAddresses(): string[] {
  return Deno.networkInterfaces().map((i) => i.address.replace(/%.*$/, ""))
    .filter((a) => a !== "127.0.0.1" && a !== "::1");
}

Deno.test("functions: the egress gate refuses IPv6, mapped and NAT64 ways to private hosts; no way around it", async (t) => {
  // The operator opened ::1: a function may reach it, but never the platform's own port there.
  const p = await startPlatform({ FUNCTIONS_ALLOW_PRIVATE_NET: "::1", FUNCTIONS_TIMEOUT_MARGIN_MS: "2000" });
  const service = localService();
  const tcp = tcpEcho();
  const tls = await tlsEcho();
  // The platform served on a real port, which the runtime is told about as main.ts does.
  const platformServer = Deno.serve({ hostname: "::", port: 0, onListen() {} }, p.handler);
  p.platform.functions.listeningOn(platformServer.addr.port);
  const port = service.addr.port;
  const platformPort = platformServer.addr.port;
  const deploy = async (name: string, code: string, allowNet: string[]) => {
    const r = await json(
      await p.fetch("/v1/functions", {
        method: "POST",
        headers: { apikey: p.secretKey },
        json: { name, runtime: "deno", code, permissions: { allow_net: allowNet, timeout_secs: 20 } },
      }),
    );
    assert(r.status === 201 || r.status === 200, JSON.stringify(r.body));
  };
  const invoke = async (name: string, body: unknown) => {
    const r = await json(
      await p.fetch(`/v1/functions/${name}/invoke`, {
        method: "POST",
        headers: { apikey: p.publicKey },
        json: { body },
      }),
    );
    assertEquals(r.status, 200, JSON.stringify(r.body));
    return r.body.data.body;
  };
  try {
    await deploy("client", await fixture("net_client.ts"), ["*"]);
    await deploy("probe", await fixture("net_probe.ts"), ["*"]);
    await deploy("escape", await fixture("net_escape_probe.ts"), ["*"]);
    await deploy("tls", await fixture("tls_client.ts"), ["*"]);

    await t.step(
      "an opened IPv6 address is reached by fetch (body, redirect), WebSocket and Deno.connect",
      async () => {
        const origin = `http://[::1]:${port}`;
        const r = await invoke("client", { origin, tcp: { hostname: "::1", port: tcp.addr.port } });
        assertEquals(r.posted.status, 200);
        assertEquals(JSON.parse(r.posted.body), { path: "/echo?q=1", mine: "1", body: "ping" });
        assertEquals(r.posted.url, `${origin}/echo?q=1`);
        assertEquals(r.redirected.status, 200);
        assert(r.redirected.redirected);
        assertEquals(r.redirected.url, `${origin}/echo?from=redirect`);
        assertEquals(r.ws, { message: "echo hello", url: `ws://[::1]:${port}/ws` });
        assertEquals(r.tcp, "echo raw");
      },
    );

    await t.step(
      'with allow_net "*": loopback, mapped, unique-local, link-local, NAT64 and own addresses are refused',
      async () => {
        const own = ownAddresses().map((a) => a.includes(":") ? `[${a}]` : a);
        const urls = [
          `http://[::1]:${platformPort}/v1/health`,
          `http://localhost:${port}/`,
          `http://[::ffff:127.0.0.1]:${port}/`,
          `http://[::ffff:7f00:1]:${platformPort}/v1/health`,
          `http://[::ffff:127.0.0.1]:5432/`,
          `http://[::127.0.0.1]:${port}/`,
          `http://[fd00::1]:${port}/`,
          "http://[fc00::1]/",
          `http://[fe80::1]:${port}/`,
          `http://[64:ff9b::7f00:1]:${port}/`,
          "http://[64:ff9b::a00:1]/",
          "http://[2002:a00:1::1]/",
          "http://[ff02::1]/",
          ...own.map((a) => `http://${a}:${port}/`),
          ...own.map((a) => `http://${a}:${platformPort}/v1/health`),
        ];
        const connect = [
          ["::1", platformPort],
          ["::ffff:127.0.0.1", 5432],
          ["::ffff:127.0.0.1", tcp.addr.port],
          ["64:ff9b::7f00:1", tcp.addr.port],
          ["fd00::1", 5432],
          ["fe80::1", 22],
          ...ownAddresses().map((a) => [a, tcp.addr.port]),
        ];
        const r = await invoke("probe", { urls, connect });
        for (const url of urls) assertEquals(r[url], "refused", url);
        for (const [host, port] of connect) assertEquals(r[`${host}:${port}`], "refused", `${host}:${port}`);
      },
    );

    await t.step(
      "Deno.connectTls through the gate: TLS end to end, the certificate checked by the function",
      async () => {
        const ca = await Deno.readTextFile(new URL("./fixtures/tls/ca.pem", import.meta.url));
        const r = await invoke("tls", { hostname: "::1", port: tls.addr.port, ca });
        assertEquals(r.trusted, "echo tls");
        assertMatch(r.untrusted, /^failed .*(certificate|UnknownIssuer)/i);
      },
    );

    await t.step("a public IPv6 literal is not refused by the policy (it is attempted)", async () => {
      const url = "http://[2606:4700:4700::1111]:9/";
      const r = await invoke("probe", { urls: [url], connect: [["2606:4700:4700::1111", 9]] });
      assert(r[url] !== "refused", r[url]);
      assert(r["2606:4700:4700::1111:9"] !== "refused", r["2606:4700:4700::1111:9"]);
    });

    await t.step(
      "Node modules, internal ops, nested workers, UDP, EventSource and DNS have no network",
      async () => {
        const around = [
          "nodeNet",
          "nodeHttp",
          "internalOps",
          "nestedWorker",
          "nodeWorkerThread",
          "udp",
          "eventSource",
        ];
        // ::1 is open to the gate (WebSocket and Deno.connectTls go through it); around the gate it is out of reach.
        const opened = await invoke("escape", { host: "::1", port });
        for (const way of [...around, "resolveDns"]) {
          assert(!String(opened[way]).startsWith("reached"), `::1 ${way}: ${opened[way]}`);
        }
        const closed = await invoke("escape", { host: "127.0.0.1", port });
        for (const [way, result] of Object.entries(closed)) {
          assert(!String(result).startsWith("reached"), `127.0.0.1 ${way}: ${result}`);
        }
        for (const r of [opened, closed]) {
          for (
            const way of ["nodeNet", "nodeHttp", "nestedWorker", "nodeWorkerThread", "udp", "resolveDns"]
          ) {
            assertEquals(r[way], "refused", way);
          }
        }
        assertEquals(closed.connectTls, "refused", "through the gate: refused by the policy");
      },
    );

    await t.step("the platform is fine", async () => {
      const health = await fetch(`http://127.0.0.1:${platformPort}/v1/health`);
      assertEquals(health.status, 200);
      await health.body?.cancel();
      assertMatch(JSON.stringify(await invoke("probe", { urls: [] })), /\{\}/);
    });
  } finally {
    await platformServer.shutdown();
    await service.shutdown();
    tcp.close();
    tls.close();
    await p.close();
  }
});
