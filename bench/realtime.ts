// Issue 6 benchmark: realtime on this machine, in one run, beside a bare Deno WebSocket hub (bench/bare_ws_server.ts)
// measured the same way. Figures: server memory per idle connection (10,000 connections, within 5% of the bare
// hub's; both servers run with --inspect so that the bench can force a full GC before reading their memory),
// broadcast fan-out to 1,000 subscribers (p50 <= 20 ms, p99 <= 100 ms), one insert delivered to 100 RLS-checked
// subscribers (p50 <= 30 ms from commit to receipt; measured from the change's commit_timestamp,
// which is the transaction's start, so the figure includes the commit itself: an upper bound), messages per second sustained. Anchor: Supabase
// Realtime publishes broadcast p50 6 ms / p95 28 ms (on a cluster, not this machine).
// Runs on PGlite, or on PostgreSQL when DATABASE_URL is set. IDLE, FANOUT, RLS_SUBSCRIBERS override the sizes.
import { makeSandbox } from "../tests/harness.ts";
import { type InspectedProcess, type MemoryUsage, spawnInspected } from "./_inspector.ts";

const IDLE = Number(Deno.env.get("IDLE") ?? 10_000);
const FANOUT = Number(Deno.env.get("FANOUT") ?? 1000);
const RLS_SUBSCRIBERS = Number(Deno.env.get("RLS_SUBSCRIBERS") ?? 100);
const ROUNDS = 30;

/** Ends the run after the memory figures (MEMORY_ONLY=1). */
class Done extends Error {}

const now = () => performance.timeOrigin + performance.now();

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

/** Epoch ms, with the microseconds, of a commit_timestamp such as 2026-01-02T03:04:05.123456Z. */
function commitTime(iso: string): number {
  const [whole, fraction = "0"] = iso.replace("Z", "").split(".");
  return Date.parse(`${whole}Z`) + Number(`0.${fraction}`) * 1000;
}

/** A minimal client: counts messages and hands each to the current listener. */
class Client {
  onEvent:
    | ((m: { payload?: { payload?: { t?: number } }; [k: string]: unknown }, at: number) => void)
    | null = null;
  private constructor(readonly socket: WebSocket) {}
  static open(url: string): Promise<Client> {
    const socket = new WebSocket(url);
    const client = new Client(socket);
    return new Promise((resolve, reject) => {
      socket.onopen = () => resolve(client);
      socket.onerror = () => reject(new Error("connect failed"));
      socket.onmessage = (e) => client.onEvent?.(JSON.parse(e.data as string), now());
    });
  }
  subscribe(message: Record<string, unknown>): Promise<void> {
    return new Promise((resolve, reject) => {
      this.onEvent = (m) => {
        if (m.type === "subscribed") resolve();
        else if (m.type === "error") reject(new Error(JSON.stringify(m)));
      };
      this.socket.send(JSON.stringify({ type: "subscribe", ...message }));
    });
  }
}

/**
 * A realtime-js-like client of /realtime/v1/websocket (vsn 2.0.0: the JSON arrays and binary broadcast frames
 * supabase-js uses by default), seen through the same interface as {@linkcode Client}: a broadcast arrives as
 * `{type: "event", payload: {payload}}`.
 */
class PhoenixClient {
  onEvent: Client["onEvent"] = null;
  private constructor(readonly socket: WebSocket) {}
  static open(url: string): Promise<PhoenixClient> {
    const socket = new WebSocket(url);
    socket.binaryType = "arraybuffer";
    const client = new PhoenixClient(socket);
    const decoder = new TextDecoder();
    return new Promise((resolve, reject) => {
      socket.onopen = () => resolve(client);
      socket.onerror = () => reject(new Error("connect failed"));
      socket.onmessage = (e) => {
        const at = now();
        if (typeof e.data !== "string") {
          // Kind 4: [4, topic len, event len, meta len, encoding, topic, event, meta, payload]
          const b = new Uint8Array(e.data as ArrayBuffer);
          const payload = JSON.parse(decoder.decode(b.subarray(5 + b[1]! + b[2]! + b[3]!)));
          return client.onEvent?.({ type: "event", payload: { payload } }, at);
        }
        const [, , , event, payload] = JSON.parse(e.data as string);
        client.onEvent?.({ type: event === "phx_reply" ? payload.status : event, payload }, at);
      };
    });
  }
  subscribe(message: Record<string, unknown>): Promise<void> {
    return new Promise((resolve, reject) => {
      this.onEvent = (m) => {
        if (m.type === "ok") resolve();
        else if (m.type === "error") reject(new Error(JSON.stringify(m)));
      };
      this.socket.send(JSON.stringify(["1", "1", `realtime:${message.channel}`, "phx_join", { config: {} }]));
    });
  }
}

/** Sends a broadcast in the platform's protocol or, for a Phoenix client, as realtime-js does (a kind 3 frame). */
function sendBroadcast(sender: Client | PhoenixClient, event: string, payload: unknown): void {
  if (sender instanceof Client) {
    sender.socket.send(JSON.stringify({ type: "broadcast", channel: "fan", event, payload }));
    return;
  }
  const enc = new TextEncoder();
  const parts = ["1", "", "realtime:fan", event, ""].map((x) => enc.encode(x));
  const body = enc.encode(JSON.stringify(payload));
  const out = new Uint8Array(7 + parts.reduce((n, p) => n + p.length, 0) + body.length);
  out.set([3, ...parts.map((p) => p.length), 1]);
  let offset = 7;
  for (const p of [...parts, body]) {
    out.set(p, offset);
    offset += p.length;
  }
  sender.socket.send(out);
}

async function openMany(
  url: string,
  n: number,
  subscribe?: Record<string, unknown>,
): Promise<(Client | PhoenixClient)[]> {
  const out: (Client | PhoenixClient)[] = [];
  const Kind = url.includes("/realtime/v1/websocket") ? PhoenixClient : Client;
  for (let i = 0; i < n; i += 100) {
    const batch = await Promise.all(Array.from({ length: Math.min(100, n - i) }, () => Kind.open(url)));
    if (subscribe) await Promise.all(batch.map((c) => c.subscribe(subscribe)));
    out.push(...batch);
  }
  return out;
}

function closeAll(clients: (Client | PhoenixClient)[]): void {
  for (const c of clients) c.socket.close();
}

async function settle(ms = 1500): Promise<void> {
  await new Promise((r) => setTimeout(r, ms));
}

/** A server's memory per idle connection, in KB, each figure the growth of one measure divided by IDLE. */
interface PerConnection {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  /** RSS outside V8's heap: Deno's Rust side (HTTP and WebSocket state, buffers) and the allocator's slack. */
  native: number;
}

/**
 * Memory per idle connection of a server process: its memory after a full GC with IDLE subscribed sockets open,
 * minus the same before they opened. Measured cold (RSS does not shrink after a close, so a warm-up would hide
 * the cost): an upper bound that includes the heap's growth steps.
 */
async function idleMemory(url: string, server: InspectedProcess): Promise<PerConnection> {
  const measure = async () => {
    await server.inspector.gc();
    return await server.inspector.memory();
  };
  await settle(500);
  const before = await measure();
  const clients = await openMany(url, IDLE, { channel: "idle" });
  await settle();
  const after = await measure();
  closeAll(clients);
  await settle();
  const per = (k: keyof MemoryUsage) => (after[k] - before[k]) / 1024 / IDLE;
  return {
    rss: per("rss"),
    heapUsed: per("heapUsed"),
    heapTotal: per("heapTotal"),
    external: per("external"),
    native: per("rss") - per("heapTotal"),
  };
}

/** The limit on open files: the bench holds IDLE client sockets at once, each server as many. */
function checkFileLimit(): void {
  const limits = Deno.readTextFileSync("/proc/self/limits");
  const soft = Number(limits.match(/Max open files\s+(\d+)/)?.[1] ?? Infinity);
  if (soft < IDLE + 1000) {
    throw new Error(`IDLE=${IDLE} needs more than ${IDLE + 1000} open files, ulimit -n is ${soft}: raise it`);
  }
}

/** What one fan-out run measured. */
interface Fanout {
  latencies: number[];
  perSecond: number;
}

/** Broadcast fan-out latencies (ms) to `FANOUT` subscribers, `ROUNDS` broadcasts one after another. */
async function fanout(url: string): Promise<Fanout> {
  const subs = await openMany(url, FANOUT, { channel: "fan" });
  const sender = (await openMany(url, 1, { channel: "fan" }))[0]!;
  const latencies: number[] = [];
  const round = (count: number, record: boolean) =>
    new Promise<void>((resolve) => {
      let got = 0;
      for (const s of subs) {
        s.onEvent = (m, at) => {
          if (m.type !== "event") return;
          if (record) latencies.push(at - (m.payload?.payload?.t ?? at));
          if (++got === FANOUT * count) resolve();
        };
      }
    });
  for (let i = 0; i < 3; i++) { // warm up
    const done = round(1, false);
    sendBroadcast(sender, "w", { t: now() });
    await done;
  }
  for (let i = 0; i < ROUNDS; i++) {
    const done = round(1, true);
    sendBroadcast(sender, "b", { t: now() });
    await done;
  }
  // Sustained: 200 broadcasts sent at once, delivered to every subscriber.
  const burst = 200;
  const done = round(burst, false);
  const start = now();
  for (let i = 0; i < burst; i++) {
    sendBroadcast(sender, "s", { t: 0 });
  }
  await done;
  const perSecond = (burst * FANOUT) / ((now() - start) / 1000);
  closeAll([...subs, sender]);
  await settle(500);
  return { latencies, perSecond };
}

checkFileLimit();
const sandbox = await makeSandbox();
const main = new URL("../main.ts", import.meta.url).pathname;
const platform = await spawnInspected(
  ["--allow-all", "--unstable-kv", "--unstable-worker-options", "--unstable-no-legacy-abort", main],
  {
    ...sandbox.env,
    PORT: "0",
    HOSTNAME: "127.0.0.1",
    LOG_LEVEL: "info",
    REALTIME_MAX_BUFFER_BYTES: String(8 * 1024 * 1024),
  },
  (line) => line.match(/"msg":"listening","port":(\d+)/)?.[1],
);
const bare = await spawnInspected(
  ["--allow-net", new URL("./bare_ws_server.ts", import.meta.url).pathname],
  {},
  (line) => line.match(/^listening (\d+)/)?.[1],
);
try {
  const platformUrl = `http://127.0.0.1:${platform.port}`;
  const bareUrl = `ws://127.0.0.1:${bare.port}/`;
  const wsUrl = (q: Record<string, string>) =>
    `ws://127.0.0.1:${platform.port}/v1/realtime/ws?${new URLSearchParams(q)}`;
  const platUrl = wsUrl({ apikey: sandbox.publicKey });

  console.log(`realtime bench on ${sandbox.env.DATABASE_URL ? "PostgreSQL" : "PGlite"}, 2 shared cores`);
  const bareMem = await idleMemory(bareUrl, bare);
  const platMem = await idleMemory(platUrl, platform);
  const kb = (m: PerConnection) =>
    Object.fromEntries(Object.entries(m).map(([k, v]) => [k, Number(v.toFixed(2))]));
  console.log(`memory per idle connection, KB (${IDLE} subscribed sockets, after a full GC):`);
  console.table({ bare: kb(bareMem), platform: kb(platMem) });
  console.log(
    `memory per connection platform/bare: ${(platMem.rss / bareMem.rss).toFixed(3)}x RSS ` +
      `(target <= 1.05x), ${(platMem.heapUsed - bareMem.heapUsed).toFixed(2)} KB more JS heap used`,
  );
  if (Deno.env.get("MEMORY_ONLY")) throw new Done();
  const bareFan = await fanout(bareUrl);
  // The Phoenix mount (supabase-js's protocol, vsn 2.0.0) on the same hub, measured the same way. The two
  // protocols run in the order platform, Phoenix, Phoenix, platform and each pools its two runs, so that
  // neither gains from going first or last.
  const phoenixUrl =
    `ws://127.0.0.1:${platform.port}/realtime/v1/websocket?apikey=${sandbox.publicKey}&vsn=2.0.0`;
  const pooled = (a: Fanout, b: Fanout): Fanout => ({
    latencies: [...a.latencies, ...b.latencies],
    perSecond: (a.perSecond + b.perSecond) / 2,
  });
  const platFirst = await fanout(platUrl);
  const phxFirst = await fanout(phoenixUrl);
  const phxFan = pooled(phxFirst, await fanout(phoenixUrl));
  const platFan = pooled(platFirst, await fanout(platUrl));

  // One insert to RLS_SUBSCRIBERS subscribers, each a different user: as many RLS checks as subscribers
  // (the worst case of the batching, which groups subscribers by role and claims).
  const sql = (query: string, params?: unknown[]) =>
    fetch(`${platformUrl}/v1/sql`, {
      method: "POST",
      headers: { apikey: sandbox.secretKey, "content-type": "application/json" },
      body: JSON.stringify(params ? { query, params } : { query }),
    }).then(async (r) => {
      if (r.status !== 200) throw new Error(await r.text());
      return (await r.json()).data;
    });
  await sql(`create table public.feed (id bigserial primary key, author uuid, body text);
    alter table public.feed enable row level security;
    create policy signed_in on public.feed for select to authenticated using (auth.uid() is not null);
    select realtime.enable('public.feed');`);
  const tokens: string[] = [];
  for (let i = 0; i < RLS_SUBSCRIBERS; i++) {
    const res = await fetch(`${platformUrl}/v1/auth/signup`, {
      method: "POST",
      headers: { apikey: sandbox.publicKey, "content-type": "application/json" },
      body: JSON.stringify({ email: `user${i}@example.com`, password: "bench-password" }),
    }).then((r) => r.json());
    tokens.push(res.data.session.access_token);
  }
  const rlsSubs: Client[] = [];
  for (const token of tokens) {
    const c = await Client.open(wsUrl({ apikey: sandbox.publicKey, access_token: token }));
    await c.subscribe({ channel: "feed", postgres_changes: [{ event: "INSERT", table: "feed" }] });
    rlsSubs.push(c);
  }
  const measureInserts = async (subs: Client[]) => {
    const latencies: number[] = [];
    const fromRequest: number[] = [];
    const lasts: number[] = [];
    for (let i = 0; i < ROUNDS + 3; i++) {
      let got = 0;
      let last = 0;
      const sent = now();
      const done = new Promise<void>((resolve) => {
        for (const c of subs) {
          c.onEvent = (m, at) => {
            if (m.type !== "event") return;
            const committed = commitTime((m.payload as { commit_timestamp: string }).commit_timestamp);
            if (i >= 3) latencies.push(at - committed);
            if (i >= 3) fromRequest.push(at - sent);
            last = Math.max(last, at - committed);
            if (++got === subs.length) resolve();
          };
        }
      });
      await sql("insert into public.feed (body) values ($1)", [`post ${i}`]);
      await done;
      if (i >= 3) lasts.push(last);
    }
    return { latencies, lasts, fromRequest };
  };
  // Baseline: the same insert to one service_role subscriber (one check, no policy to pass).
  const one = await Client.open(wsUrl({ apikey: sandbox.secretKey }));
  await one.subscribe({ channel: "feed", postgres_changes: [{ event: "INSERT", table: "feed" }] });
  const single = await measureInserts([one]);
  closeAll([one]);
  const { latencies: rlsLatencies, lasts: lastLatencies, fromRequest } = await measureInserts(rlsSubs);
  closeAll(rlsSubs);

  const f = (n: number) => Number(n.toFixed(2));
  console.table({
    [`broadcast to ${FANOUT}: p50 ms`]: {
      bare: f(percentile(bareFan.latencies, 50)),
      platform: f(percentile(platFan.latencies, 50)),
      phoenix: f(percentile(phxFan.latencies, 50)),
      target: "<= 20",
      supabase: 6,
    },
    [`broadcast to ${FANOUT}: p95 ms`]: {
      bare: f(percentile(bareFan.latencies, 95)),
      platform: f(percentile(platFan.latencies, 95)),
      phoenix: f(percentile(phxFan.latencies, 95)),
      target: "",
      supabase: 28,
    },
    [`broadcast to ${FANOUT}: p99 ms`]: {
      bare: f(percentile(bareFan.latencies, 99)),
      platform: f(percentile(platFan.latencies, 99)),
      phoenix: f(percentile(phxFan.latencies, 99)),
      target: "<= 100",
    },
    "messages delivered per second (burst)": {
      bare: Math.round(bareFan.perSecond),
      platform: Math.round(platFan.perSecond),
      phoenix: Math.round(phxFan.perSecond),
    },
    [`tx start -> ${RLS_SUBSCRIBERS} RLS-checked users: p50 ms`]: {
      platform: f(percentile(rlsLatencies, 50)),
      target: "<= 30",
    },
    [`tx start -> last of ${RLS_SUBSCRIBERS}: p50 ms`]: { platform: f(percentile(lastLatencies, 50)) },
    "tx start -> 1 service_role subscriber: p50 ms": { platform: f(percentile(single.latencies, 50)) },
    [`HTTP insert request -> ${RLS_SUBSCRIBERS} users: p50 ms`]: { platform: f(percentile(fromRequest, 50)) },
  });
  console.log(
    `ratios platform/bare: memory ${(platMem.rss / bareMem.rss).toFixed(2)}x, broadcast p50 ${
      (percentile(platFan.latencies, 50) / percentile(bareFan.latencies, 50)).toFixed(2)
    }x, throughput ${(platFan.perSecond / bareFan.perSecond * 100).toFixed(1)}%`,
  );
  const ratio = (p: number) => percentile(phxFan.latencies, p) / percentile(platFan.latencies, p);
  console.log(
    `ratios phoenix mount/platform protocol (target <= 1.10): broadcast p50 ${ratio(50).toFixed(2)}x, ` +
      `p99 ${ratio(99).toFixed(2)}x, throughput ${(phxFan.perSecond / platFan.perSecond * 100).toFixed(1)}%`,
  );
} catch (err) {
  if (!(err instanceof Done)) throw err;
} finally {
  await bare.stop();
  await platform.stop();
  await sandbox.destroy();
}
