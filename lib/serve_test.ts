import { assert, assertEquals, within } from "../tests/assert.ts";
import { serve, upgradeWebSocket } from "./serve.ts";

const IDLE_MS = 300;
// A liveness bound for the WebSocket tests' waits, not a timing claim: a broken test fails instead of hanging.
const LIVE_MS = 30_000;
const encoder = new TextEncoder();

/** Reads until the server closes the socket; the bound only stops a broken test from hanging. */
async function readUntilClosed(conn: Deno.Conn): Promise<{ closed: boolean; text: string }> {
  const buf = new Uint8Array(4096);
  let text = "";
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const n = await Promise.race([
      conn.read(buf).catch(() => null),
      new Promise<"wait">((r) => setTimeout(() => r("wait"), 500)),
    ]);
    if (n === null) return { closed: true, text };
    if (n !== "wait") text += new TextDecoder().decode(buf.subarray(0, n));
  }
  return { closed: false, text };
}

const start = (handler: (req: Request) => Response | Promise<Response>) =>
  serve({ hostname: "127.0.0.1", port: 0, idleTimeoutMs: IDLE_MS }, handler);

Deno.test("a client that never finishes its headers is disconnected", async () => {
  const server = start(() => new Response("ok"));
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.addr.port });
  try {
    await conn.write(encoder.encode("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nx-slow: "));
    const { closed, text } = await readUntilClosed(conn);
    assert(closed, "the connection is still open");
    assertEquals(text, "");
  } finally {
    conn.close();
    await server.shutdown();
  }
});

Deno.test("an idle keep-alive connection is closed after its answer", async () => {
  const server = start(() => new Response("ok"));
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.addr.port });
  try {
    await conn.write(encoder.encode("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
    const { closed, text } = await readUntilClosed(conn);
    assert(closed, "the connection is still open");
    assert(text.startsWith("HTTP/1.1 200 OK"), text);
    assert(text.endsWith("ok"), text);
  } finally {
    conn.close();
    await server.shutdown();
  }
});

Deno.test("a request answered slower than the idle timeout is not cut, nor a stream", async () => {
  const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const server = start(async (req) => {
    if (new URL(req.url).pathname === "/slow") {
      await wait(IDLE_MS * 4);
      return new Response("late");
    }
    const body = new ReadableStream({
      async start(controller) {
        for (let i = 0; i < 4; i++) {
          controller.enqueue(encoder.encode(`${i}`));
          await wait(IDLE_MS);
        }
        controller.close();
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  });
  try {
    const base = `http://127.0.0.1:${server.addr.port}`;
    assertEquals(await (await fetch(`${base}/slow`)).text(), "late");
    assertEquals(await (await fetch(`${base}/stream`)).text(), "0123");
  } finally {
    await server.shutdown();
  }
});

Deno.test("a WebSocket outlives the idle timeout and its connection's HTTP loop, both ways", async () => {
  const server = start((req) => {
    const { socket, response } = upgradeWebSocket(req);
    socket.onopen = () => setTimeout(() => socket.send("unprompted"), IDLE_MS * 3);
    socket.onmessage = (e) => socket.send(`echo ${e.data}`);
    return response;
  });
  const ws = new WebSocket(`ws://127.0.0.1:${server.addr.port}/`);
  const received: string[] = [];
  let arrived = () => {};
  ws.onmessage = (e) => {
    received.push(e.data);
    arrived();
  };
  ws.onclose = (e) => {
    received.push(`closed ${e.code}`);
    arrived();
  };
  const next = () => new Promise<string>((resolve) => (arrived = () => resolve(received.shift()!)));
  try {
    await within(
      new Promise((resolve, reject) => {
        ws.onopen = resolve;
        ws.onerror = reject;
      }),
      LIVE_MS,
      "the WebSocket's open",
    );
    assertEquals(await within(next(), LIVE_MS, "the unprompted message"), "unprompted");
    for (let i = 0; i < 3; i++) {
      await new Promise((r) => setTimeout(r, IDLE_MS * 2));
      const answer = next();
      ws.send(`hi ${i}`);
      assertEquals(await within(answer, LIVE_MS, `the echo of hi ${i}`), `echo hi ${i}`);
    }
    assertEquals(ws.readyState, WebSocket.OPEN);
  } finally {
    if (ws.readyState !== WebSocket.CLOSED) {
      const closed = new Promise((r) => ws.addEventListener("close", r));
      ws.close();
      await within(closed, LIVE_MS, "the WebSocket's close");
    }
    await server.shutdown();
  }
});

Deno.test("WebSockets and plain requests share the server; requests before and after an upgrade are answered", async () => {
  const server = start((req) => {
    if (req.headers.get("upgrade") !== "websocket") return new Response("plain");
    const { socket, response } = upgradeWebSocket(req);
    socket.onmessage = (e) => socket.send(`echo ${e.data}`);
    return response;
  });
  const base = `127.0.0.1:${server.addr.port}`;
  const sockets = Array.from({ length: 5 }, () => new WebSocket(`ws://${base}/`));
  const opened = Promise.all(sockets.map((ws) =>
    new Promise((resolve, reject) => {
      ws.onopen = resolve;
      ws.onerror = reject;
    })
  ));
  try {
    assertEquals(await (await fetch(`http://${base}/`)).text(), "plain");
    await within(opened, LIVE_MS, "the five WebSockets' open");
    await new Promise((r) => setTimeout(r, IDLE_MS * 2));
    assertEquals(await (await fetch(`http://${base}/`)).text(), "plain");
    const echoes = await within(
      Promise.all(sockets.map((ws, i) => {
        if (ws.readyState !== WebSocket.OPEN) return `closed before message ${i}`;
        const answer = new Promise<string>((resolve) => {
          ws.onmessage = (e) => resolve(e.data);
          ws.onclose = (e) => resolve(`closed ${e.code}`);
        });
        ws.send(`${i}`);
        return answer;
      })),
      LIVE_MS,
      "the five echoes",
    );
    assertEquals(echoes, ["echo 0", "echo 1", "echo 2", "echo 3", "echo 4"]);
  } finally {
    await within(
      Promise.all(sockets.map((ws) => {
        if (ws.readyState === WebSocket.CLOSED) return;
        const closed = new Promise((r) => ws.addEventListener("close", r));
        ws.close();
        return closed;
      })),
      LIVE_MS,
      "the five WebSockets' close",
    );
    await server.shutdown();
  }
});

Deno.test("shutdown waits for the request in flight, then refuses new connections", async () => {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const server = serve({ hostname: "127.0.0.1", port: 0, idleTimeoutMs: 30_000 }, async () => {
    await held;
    return new Response("done");
  });
  const base = `http://127.0.0.1:${server.addr.port}`;
  const inFlight = fetch(base).then((r) => r.text());
  await new Promise((r) => setTimeout(r, 100));
  let stopped = false;
  const stopping = server.shutdown().then(() => (stopped = true));
  await new Promise((r) => setTimeout(r, 100));
  assert(!stopped, "shutdown did not wait for the request in flight");
  release();
  assertEquals(await within(inFlight, 30_000, "the request in flight"), "done");
  await within(stopping, 30_000, "the shutdown once the request is answered");
  const refused = await fetch(base).then(() => false, () => true);
  assert(refused, "a new connection was accepted after shutdown");
});

Deno.test("a handler that throws is answered by onError and the connection serves on", async () => {
  const server = serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeoutMs: 30_000,
    onError: () => new Response("sorry", { status: 500 }),
  }, (req) => {
    if (new URL(req.url).pathname === "/boom") throw new Error("boom");
    return new Response("fine");
  });
  try {
    const base = `http://127.0.0.1:${server.addr.port}`;
    const boom = await fetch(`${base}/boom`);
    assertEquals([boom.status, await boom.text()], [500, "sorry"]);
    assertEquals(await (await fetch(`${base}/ok`)).text(), "fine");
  } finally {
    await server.shutdown();
  }
});

Deno.test("an answer with Connection: close ends the connection while the client still sends its body", async () => {
  // An idle timeout far longer than the test: the answer's Connection: close is what closes the connection.
  const server = serve(
    { hostname: "127.0.0.1", port: 0, idleTimeoutMs: 60_000 },
    () => new Response("too slow", { status: 408, headers: { connection: "close" } }),
  );
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.addr.port });
  try {
    await conn.write(encoder.encode("POST / HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-length: 100000\r\n\r\n{"));
    let stop = false;
    const dribbling = (async () => {
      while (!stop) {
        await new Promise((r) => setTimeout(r, 50));
        await conn.write(encoder.encode(" ")).catch(() => (stop = true));
      }
    })();
    const { closed, text } = await readUntilClosed(conn);
    stop = true;
    await dribbling;
    assert(closed, "the connection is still open");
    assert(text.startsWith("HTTP/1.1 408"), text);
  } finally {
    conn.close();
    await server.shutdown();
  }
});

Deno.test("the platform's routes upgrade WebSockets only through lib/serve.ts's upgradeWebSocket", async () => {
  // Deno.upgradeWebSocket on a request this server handed over makes a WebSocket the engine closes at once.
  const offenders: string[] = [];
  const root = new URL("../", import.meta.url);
  const walk = async (dir: URL) => {
    for await (const entry of Deno.readDir(dir)) {
      const url = new URL(entry.name + (entry.isDirectory ? "/" : ""), dir);
      if (entry.isDirectory) await walk(url);
      else if (entry.name.endsWith(".ts") && !entry.name.endsWith("_test.ts")) {
        if ((await Deno.readTextFile(url)).includes("Deno.upgradeWebSocket(")) offenders.push(url.pathname);
      }
    }
  };
  for (const dir of ["routes/", "services/", "workers/"]) await walk(new URL(dir, root));
  assertEquals(offenders, []);
});
