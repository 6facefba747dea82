import { assert, assertEquals, assertMatch } from "../../tests/assert.ts";
import { smtpSink, webhookReceiver } from "../../tests/notification_fakes.ts";
import { PINNED_CERT, PINNED_KEY } from "../../tests/notification_tls.ts";
import { BlockedTargetError, NetGuard } from "./net_guard.ts";
import { OutboundHttp } from "./outbound.ts";
import { SmtpProvider } from "./providers/smtp.ts";
import type { OutboundMessage } from "./providers/provider.ts";
import { WebhookProvider } from "./providers/webhook.ts";

/** A local server on `hostname` that counts requests and tells back the Host it saw. */
function server(hostname: string, port = 0, options: { cert?: string; key?: string } = {}) {
  const seen: string[] = [];
  const srv = Deno.serve({ hostname, port, onListen: () => {}, ...options }, async (req) => {
    await req.body?.cancel();
    seen.push(req.headers.get("host") ?? new URL(req.url).host);
    return new Response(`reached ${hostname}`);
  });
  return { port: srv.addr.port, seen, close: () => srv.shutdown() };
}

/** A resolver that answers from a table, counting the questions; a list of answers is used in turn. */
function resolver(table: Record<string, string[][]>) {
  const asked = new Map<string, number>();
  const resolve = (name: string) => {
    const n = asked.get(name) ?? 0;
    asked.set(name, n + 1);
    const answers = table[name] ?? [[]];
    return Promise.resolve(answers[Math.min(n, answers.length - 1)]!);
  };
  return { resolve, asked };
}

const request = () => ({
  method: "POST" as const,
  headers: {},
  body: "{}",
  signal: AbortSignal.timeout(5000),
});

Deno.test("outbound: a name is connected at the address that was checked (DNS rebinding)", async () => {
  // Two servers on one port: 127.0.0.2 is allowed, 127.0.0.1 stands for an internal service.
  const allowed = server("127.0.0.2");
  const internal = server("127.0.0.1", allowed.port);
  // The name answers the allowed address first, the internal one after (a rebinding DNS server).
  const dns = resolver({ "rebind.test": [["127.0.0.2"], ["127.0.0.1"]] });
  const guard = new NetGuard("127.0.0.2", dns.resolve);
  const first = new OutboundHttp(guard);
  const second = new OutboundHttp(guard);
  try {
    const res = await first.fetch(`http://rebind.test:${allowed.port}/hook`, request());
    assertEquals([res.status, await res.text()], [200, "reached 127.0.0.2"]);
    assertEquals(allowed.seen, [`rebind.test:${allowed.port}`]); // the name is kept for the Host header
    assertEquals(dns.asked.get("rebind.test"), 1); // one answer, both checked and connected to
    // A new connection asks again: the internal address is refused before anything is sent.
    const refused = await second.fetch(`http://rebind.test:${allowed.port}/hook`, request()).catch((e) => e);
    assert(refused instanceof BlockedTargetError, String(refused));
    assertEquals(internal.seen, []);
  } finally {
    first.close();
    second.close();
    await Promise.all([allowed.close(), internal.close()]);
  }
});

Deno.test("outbound: names that resolve to private addresses are refused without a request", async () => {
  const local = server("127.0.0.1");
  const dns = resolver({ "evil.test": [["127.0.0.1"]], "mixed.test": [["93.184.216.34", "127.0.0.1"]] });
  const http = new OutboundHttp(new NetGuard("", dns.resolve));
  try {
    for (const host of ["evil.test", "mixed.test", "localhost", "127.0.0.1", "[::1]"]) {
      const err = await http.fetch(`http://${host}:${local.port}/`, request()).catch((e) => e);
      assert(err instanceof BlockedTargetError, `${host}: ${err}`);
      assertMatch(err.message, /private or loopback/);
    }
    const h2 = await http.fetch2(`http://evil.test:${local.port}/3/device/x`, request()).catch((e) => e);
    assert(h2 instanceof BlockedTargetError, String(h2));
    assertEquals(local.seen, []);
  } finally {
    http.close();
    await local.close();
  }
});

Deno.test("outbound: TLS is verified against the host name, not the checked address", async () => {
  const tls = server("127.0.0.1", 0, { cert: PINNED_CERT, key: PINNED_KEY });
  const dns = resolver({ "pinned.example": [["127.0.0.1"]], "other.example": [["127.0.0.1"]] });
  const guard = new NetGuard("127.0.0.1", dns.resolve);
  const trusting = new OutboundHttp(guard, [PINNED_CERT]);
  const system = new OutboundHttp(guard);
  try {
    const ok = await trusting.fetch(`https://pinned.example:${tls.port}/`, request());
    assertEquals([ok.status, await ok.text()], [200, "reached 127.0.0.1"]);
    assertEquals(tls.seen, [`pinned.example:${tls.port}`]);
    const wrongName = await trusting.fetch(`https://other.example:${tls.port}/`, request()).catch((e) => e);
    assertMatch(String(wrongName), /altnames|certificate/i);
    const untrusted = await system.fetch(`https://pinned.example:${tls.port}/`, request()).catch((e) => e);
    assertMatch(String(untrusted), /certificate|self.signed|UnknownIssuer/i);
    // HTTP/2 (APNs) over TLS, through the same guard: verified the same way.
    const h2 = await trusting.fetch2(`https://pinned.example:${tls.port}/3/device/abc`, request());
    assertEquals([h2.status, await h2.text()], [200, "reached 127.0.0.1"]);
    const h2Wrong = await trusting.fetch2(`https://other.example:${tls.port}/3/device/abc`, request())
      .catch((e) => e);
    assertMatch(String(h2Wrong), /altnames|certificate/i);
    assertEquals(tls.seen.length, 2);
  } finally {
    trusting.close();
    system.close();
    await tls.close();
  }
});

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

function message(recipient: string, channel: "webhook" | "email"): OutboundMessage {
  return {
    id: crypto.randomUUID(),
    channel,
    recipient,
    subject: "Hi",
    body: "Hello",
    event: "test.event",
    payload: { n: 1 },
    metadata: {},
    attempt: 1,
  };
}

Deno.test("outbound: a webhook to a name of a private address is refused unless allowed", async () => {
  const hook = webhookReceiver(SECRET);
  const port = new URL(hook.url).port;
  const strict = new OutboundHttp(new NetGuard(""));
  const open = new OutboundHttp(new NetGuard("127.0.0.0/8,::1"));
  try {
    const send = (http: OutboundHttp) =>
      new WebhookProvider({ secret: SECRET, timeoutMs: 5000, http })
        .send(message(`http://localhost:${port}/hook`, "webhook"), AbortSignal.timeout(5000));
    const refused = await send(strict);
    assertEquals(refused.outcome, "permanent_error");
    assertMatch(refused.error!, /private or loopback/);
    assertEquals(hook.hits.size, 0);
    const allowed = await send(open);
    assertEquals([allowed.outcome, allowed.httpStatus, allowed.confirmed], ["success", 200, true]);
    assertEquals(hook.received.length, 1);
  } finally {
    strict.close();
    open.close();
    await hook.close();
  }
});

Deno.test("outbound: SMTP connects to the checked address of its host, or is refused", async () => {
  const sink = await smtpSink();
  const dns = resolver({ "mail.test": [["127.0.0.1"]] });
  const email = (host: string) => ({
    host,
    port: sink.port,
    secure: false,
    user: null,
    pass: null,
    from: "noreply@example.com",
  });
  const providers: SmtpProvider[] = [];
  const send = (host: string, allow: string) => {
    const provider = new SmtpProvider(email(host), new NetGuard(allow, dns.resolve), 1);
    providers.push(provider);
    return provider.send(message("ada@example.com", "email"));
  };
  try {
    for (const host of ["mail.test", "localhost", "127.0.0.1"]) {
      const refused = await send(host, "");
      assertEquals(refused.outcome, "permanent_error", host);
      assertMatch(refused.error!, /private or loopback/);
    }
    assertEquals(sink.mails.length, 0);
    const sent = await send("mail.test", "127.0.0.1");
    assertEquals(sent.outcome, "success", sent.error);
    assertEquals(sink.mails.length, 1);
    assertEquals(sink.mails[0]!.to, ["ada@example.com"]);
  } finally {
    await Promise.all(providers.map((p) => p.close()));
    await sink.close();
  }
});

Deno.test("outbound: an odd status is an error, not a crash; a non-ASCII header passes", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const answers = [
    "HTTP/1.1 999 Odd\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
    "HTTP/1.1 200 OK\r\nX-Bin: \u00ff\u00fe\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
  ];
  const serving = (async () => {
    for (const text of answers) {
      const conn = await listener.accept();
      const buf = new Uint8Array(4096);
      await conn.read(buf);
      await conn.write(new Uint8Array([...text].map((c) => c.charCodeAt(0))));
      conn.close();
    }
  })();
  const http = new OutboundHttp(new NetGuard("127.0.0.1"));
  const url = `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}/`;
  try {
    const odd = await http.fetch(url, request()).catch((e) => e);
    assertMatch(String(odd), /invalid HTTP status 999/);
    const binary = await http.fetch(url, request());
    assertEquals([binary.status, await binary.text()], [200, "ok"]);
  } finally {
    // The listener first: a failed call leaves the fake server waiting in accept() for a client that never comes.
    listener.close();
    http.close();
    await serving.catch(() => {});
  }
});

Deno.test("outbound: send reads an answer whole, within its bound, with its status and headers", async () => {
  const endless = () =>
    new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(new Uint8Array(16 * 1024).fill(120)); // "x", without end
      },
    });
  const srv = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    await req.body?.cancel();
    const path = new URL(req.url).pathname;
    if (path === "/endless") return new Response(endless());
    if (path === "/empty") return new Response(null, { status: 204 });
    return new Response("slow down", { status: 429, headers: { "Retry-After": "7" } });
  });
  const http = new OutboundHttp(new NetGuard("127.0.0.1"));
  const base = `http://127.0.0.1:${srv.addr.port}`;
  try {
    const capped = await http.send(`${base}/endless`, request(), 40_000);
    assertEquals([capped.status, capped.body.length, capped.body[0]], [200, 40_000, "x"]);
    const empty = await http.send(`${base}/empty`, request(), 1000);
    assertEquals([empty.status, empty.body], [204, ""]);
    const limited = await http.send(`${base}/limited`, request(), 1000);
    assertEquals([limited.status, limited.body, limited.headers.get("Retry-After")], [429, "slow down", "7"]);
    assertEquals(limited.headers.get("x-absent"), null);
    // The connection is kept for the next request after an answer read to its end.
    assertEquals((await http.send(`${base}/limited`, request(), 1000)).status, 429);
  } finally {
    http.close();
    await srv.shutdown();
  }
});

Deno.test("outbound: send refuses an odd status and a blocked target as fetch does", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const serving = (async () => {
    const conn = await listener.accept();
    await conn.read(new Uint8Array(4096));
    await conn.write(
      new TextEncoder().encode("HTTP/1.1 999 Odd\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"),
    );
    conn.close();
  })();
  const port = (listener.addr as Deno.NetAddr).port;
  const http = new OutboundHttp(new NetGuard("127.0.0.1"));
  const closed = new OutboundHttp(new NetGuard(""));
  try {
    assertMatch(String(await http.send(`http://127.0.0.1:${port}/`, request(), 1000).catch((e) => e)), /999/);
    const blocked = await closed.send(`http://127.0.0.1:${port}/`, request(), 1000).catch((e) => e);
    assert(blocked instanceof BlockedTargetError);
  } finally {
    // The listener first: a failed call leaves the fake server waiting in accept() for a client that never comes.
    listener.close();
    http.close();
    closed.close();
    await serving.catch(() => {});
  }
});
