import { join } from "node:path";
import { CallRing } from "./call_ring.ts";
import { CpuBudget } from "./cpu_budget.ts";
import { FrameReader, FrameWriter, readChunks } from "./frames.ts";
import { droppedLinesText, LOG_BURST, LOG_LINES_PER_SECOND, LogBudget } from "./log_budget.ts";
import { processUsage } from "./proc_usage.ts";
import {
  cpuLimitText,
  HEADER_NAME,
  HEADER_VALUE,
  type HeaderList,
  type HostToPlatform,
  type InitMessage,
  type LogLevel,
  MAX_LOG_LINE,
  MAX_RESPONSE_BYTES,
  type Outcome,
  type PlatformToHost,
  type PlatformToWorker,
  type Received,
  timeLimitText,
  type WorkerToPlatform,
} from "./protocol.ts";

/** One call handed to a host. */
export interface HostRequest {
  method: string;
  url: string;
  headers: HeaderList;
  body: Uint8Array | null;
  /** The caller takes the answer's body as a stream (the worker may still send it whole). */
  stream?: boolean;
}

/** How a call that failed ended. */
export type HostFailure = { outcome: Exclude<Outcome, "ok">; message: string; logs: string[] };

/** How a streamed answer ended: complete, given up by its reader (`cancelled`), or cut by a failure. */
export type StreamEnd = { outcome: "ok"; cancelled: boolean } | HostFailure;

/**
 * What a call gave: an answer, or a failure with its outcome. A streamed answer's body is a stream, and `ended`
 * tells how it ended (a failure past the headers errors the stream).
 */
export type HostResult =
  | { outcome: "ok"; status: number; headers: HeaderList; body: Uint8Array; logs: string[] }
  | {
    outcome: "ok";
    status: number;
    headers: HeaderList;
    body: ReadableStream<Uint8Array>;
    ended: Promise<StreamEnd>;
    logs: string[];
  }
  | HostFailure;

/** Options of {@linkcode HostProcess.spawn}. */
interface HostSpawnOptions {
  id: string;
  /** V8 heap cap of the process (the memory_mb of the functions it may serve). */
  memoryMb: number;
  /** Deno flags for the network (from net_policy.ts). */
  netFlags: string[];
  /** Directory for the host's Unix socket. */
  socketDir: string;
  /** Called once when the process is gone, until {@linkcode HostProcess.assign} replaces it. */
  onExit(host: HostProcess): void;
}

/** Receives the console lines and raw stdout/stderr lines of the function a host serves. */
type HostLogSink = (level: LogLevel, text: string) => void;

const RUNTIME_DIR = new URL(".", import.meta.url).pathname.replace(/\/$/, "");
const HOST_MAIN = join(RUNTIME_DIR, "host.ts");
// The modules a host loads into its worker (one of them, the byte encodings, shared with the platform): the only
// files it may read, so that a function can import nothing else.
const WORKER_FILES = [
  "worker.ts",
  "frames.ts",
  "protocol.ts",
  "log_budget.ts",
  "wasm/wagi.ts",
  "wasm/wasi.ts",
  "egress/worker_net.ts",
  "egress/wire.ts",
  "../lib/encoding.ts",
].map((f) => join(RUNTIME_DIR, f));
const SPAWN_TIMEOUT_MS = 15_000;

/** The environment of a host: where Deno keeps its cache, nothing of the platform's own. */
function hostEnv(): Record<string, string> {
  const env: Record<string, string> = { NO_COLOR: "1" };
  for (const name of ["DENO_DIR", "HOME", "XDG_CACHE_HOME", "PATH"]) {
    const value = Deno.env.get(name);
    if (value) env[name] = value;
  }
  return env;
}

/** Adds the host's own socket to its net permission (Deno checks Unix sockets as `unix:<path>`). */
function withSocket(flags: string[], socket: string): string[] {
  if (flags.includes("--allow-net")) return flags;
  const list = flags.find((f) => f.startsWith("--allow-net="));
  if (!list) return [...flags, `--allow-net=unix:${socket}`];
  return flags.map((f) => f === list ? `--allow-net=unix:${socket},${f.slice("--allow-net=".length)}` : f);
}

/** The connection of one worker of the host: the calls sent on it are answered on it, or lost with it. */
interface WorkerChannel {
  generation: number;
  writer: FrameWriter<PlatformToWorker>;
  /** "loading" until the worker loaded the function; then "ready", or why the function cannot run. */
  state: "loading" | "ready" | { error: string };
}

interface Call {
  id: number;
  resolve: (r: HostResult) => void;
  deadline: number;
  /** The worker the call was sent to; null while it waits for a worker. */
  channel: WorkerChannel | null;
  /** What to send; null once sent or settled. */
  req: HostRequest | null;
  /** The caller takes a streamed answer. */
  streams: boolean;
  /** The answer being streamed, once its headers came. */
  body: AnswerStream | null;
}

/**
 * The platform's end of a streamed answer: the chunks the worker sent, handed to the reader as it pulls them
 * (each one acknowledged then, which lets the worker send as much more), so that at most STREAM_WINDOW_BYTES
 * wait here whatever the reader's pace.
 */
class AnswerStream {
  readonly stream: ReadableStream<Uint8Array>;
  readonly ended: Promise<StreamEnd>;
  private readonly queue: Uint8Array[] = [];
  private wake: (() => void) | null = null;
  private end: StreamEnd | null = null;
  private controller!: ReadableStreamDefaultController<Uint8Array>;
  private readonly finish: (end: StreamEnd) => void;
  /** Bytes received so far. */
  received = 0;

  constructor(first: Uint8Array | null, ack: (bytes: number) => void, cancel: () => void) {
    const { promise, resolve } = Promise.withResolvers<StreamEnd>();
    this.ended = promise;
    this.finish = resolve;
    if (first) this.push(first);
    this.stream = new ReadableStream<Uint8Array>({
      start: (controller) => void (this.controller = controller),
      pull: async (controller) => {
        while (this.queue.length === 0 && this.end === null) {
          await new Promise<void>((r) => this.wake = r);
          this.wake = null;
        }
        const next = this.queue.shift();
        if (next) {
          controller.enqueue(next);
          ack(next.byteLength);
        } else if (this.end?.outcome === "ok") controller.close();
      },
      cancel: () => {
        if (this.end !== null) return;
        this.close({ outcome: "ok", cancelled: true });
        cancel();
      },
    }, { highWaterMark: 0 });
  }

  push(bytes: Uint8Array): void {
    this.received += bytes.byteLength;
    this.queue.push(bytes);
    this.wake?.();
  }

  /** Ends the stream: complete (the reader gets what is queued, then the end), or cut by a failure. */
  close(end: StreamEnd): void {
    if (this.end !== null) return;
    this.end = end;
    if (end.outcome !== "ok") {
      this.queue.length = 0;
      try {
        this.controller.error(new Error(end.message));
      } catch { /* closed */ }
    }
    this.wake?.();
    this.finish(end);
  }
}

const settled = () => {};

const LOG_LEVELS = new Set(["debug", "info", "warn", "error"]);
// Log lines one call may carry in its answer (wasm stderr); more are dropped.
const MAX_CALL_LOG_LINES = 1_000;
// How long the calls of a closed worker connection wait for the cause (the host's word, the process's exit).
const ORPHAN_GRACE_MS = 1_500;
// The largest frame a worker may send: its largest answer and room for its header (a batch carries less).
const MAX_WORKER_FRAME_BYTES = MAX_RESPONSE_BYTES + 2 * 1024 * 1024;
// How often the platform looks at a host's calls' deadlines, CPU time and memory (not per call: off the hot path).
const SAMPLE_MS = 100;
// CPU time a host has to load its function (its worker, the module and its top-level code) besides its calls'.
const LOAD_CPU_MS = 1_000;
// Private memory of a host's own (the Deno runtime, its worker, V8's young generation) on top of memory_mb:
// past both, the host is stopped (measured: 20 MB at rest, 37 MB after 2,000 calls, 92 MB for a function that
// churns garbage at memory_mb 16).
const RUNTIME_MEMORY_MB = 128;

/**
 * HostProcess is the platform's handle on one runtime host child process: it spawns it with the function's
 * permissions and heap cap, listens on a private Unix socket for its control connection and for the connection
 * of each worker the host starts, sends calls to the current worker and resolves their results, and turns the
 * loss of a worker or the death of the process (out of memory, crash, kill) into failures of the calls they held.
 * Everything a worker connection says is the function's word: it settles only the calls sent on it.
 */
export class HostProcess {
  inFlight = 0;
  /** The function version this host serves (null while it is a spare). */
  init: InitMessage | null = null;
  lastUsed = Date.now();
  private nextId = 1;
  private readonly calls = new CallRing<Call>();
  /** Calls waiting for a worker to be ready. */
  private waiting: number[] = [];
  private channel: WorkerChannel | null = null;
  private readonly channels = new Map<number, WorkerChannel>();
  /** The highest worker generation seen, in a hello or in the host's news of a lost worker. */
  private lastGeneration = 0;
  /** Samples the host while it serves a function (every SAMPLE_MS). */
  private meter: ReturnType<typeof setInterval> | null = null;
  private budget: CpuBudget | null = null;
  /** CPU time of the process when last sampled (ms). */
  private cpuSeen = 0;
  private control: FrameWriter<PlatformToHost> | null = null;
  private stderrTail = "";
  private exited = false;
  /** Why the platform stopped the process, if it did. */
  private killedFor: "timeout" | "cpu" | "memory" | null = null;
  private stderrDone: Promise<void> = Promise.resolve();
  private logSink: HostLogSink = () => {};
  // The worker keeps to its budget itself; this one, twice as wide, holds a worker that does not.
  private readonly logBudget = new LogBudget(2 * LOG_LINES_PER_SECOND, 2 * LOG_BURST);
  private exitSink: (host: HostProcess) => void;

  private constructor(
    readonly id: string,
    readonly memoryMb: number,
    private readonly child: Deno.ChildProcess,
    private readonly listener: Deno.Listener,
    private readonly socket: string,
    onExit: (host: HostProcess) => void,
  ) {
    this.exitSink = onExit;
  }

  /** Gives the host its function version; from now on its logs and its exit go to the given sinks. */
  assign(init: InitMessage, onLog: HostLogSink, onExit: (host: HostProcess) => void): void {
    this.init = init;
    this.logSink = onLog;
    this.exitSink = onExit;
    this.lastUsed = Date.now();
    // From now on the process runs the function's code: what it uses is the function's.
    this.budget = new CpuBudget(init.cpuMs, LOAD_CPU_MS);
    this.cpuSeen = processUsage(this.child.pid)?.cpuMs ?? 0;
    this.meter = setInterval(() => this.sample(), SAMPLE_MS);
    this.control!.write(init);
  }

  /**
   * Stops the process for certain (SIGKILL) when a call is past its deadline, when it used more CPU time than
   * its calls brought (runtime/cpu_budget.ts), or more private memory than memory_mb and the runtime's own:
   * ArrayBuffers, wasm memories and threads count, which V8's heap limit does not see.
   */
  private sample(): void {
    if (this.exited) return this.stopMeter(); // assigned as it died
    const now = Date.now();
    if (this.calls.some((call) => call.deadline < now)) return this.stop("timeout");
    const usage = processUsage(this.child.pid);
    if (usage === null) return; // gone: onExit follows
    const used = usage.cpuMs - this.cpuSeen;
    this.cpuSeen = usage.cpuMs;
    if (!this.budget!.spend(used)) return this.stop("cpu");
    if (usage.privateMb > this.memoryMb + RUNTIME_MEMORY_MB) this.stop("memory");
  }

  private stopMeter(): void {
    if (this.meter !== null) clearInterval(this.meter);
    this.meter = null;
  }

  private stop(reason: "timeout" | "cpu" | "memory"): void {
    this.killedFor ??= reason;
    this.kill();
  }

  /** Starts a host process and waits until it connected; it runs nothing before {@linkcode assign}. */
  static async spawn(options: HostSpawnOptions): Promise<HostProcess> {
    const socket = join(options.socketDir, `${options.id}.sock`);
    const listener = Deno.listen({ transport: "unix", path: socket });
    const args = [
      "run",
      "--quiet",
      "--no-prompt",
      "--no-config",
      "--no-lock",
      "--no-remote",
      "--no-npm",
      "--unstable-worker-options",
      // The function's own thread collects its garbage: no helper threads of its host compete for the cores
      // with the platform and the other hosts (measured: less CPU per call in all).
      `--v8-flags=--max-old-space-size=${options.memoryMb},--single-threaded-gc`,
      `--allow-read=${WORKER_FILES.join(",")},${socket}`,
      `--allow-write=${socket}`,
      ...withSocket(options.netFlags, socket),
      HOST_MAIN,
      socket,
    ];
    const child = new Deno.Command(Deno.execPath(), {
      args,
      clearEnv: true,
      env: hostEnv(),
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const host = new HostProcess(options.id, options.memoryMb, child, listener, socket, options.onExit);
    host.pumpOutput(child.stdout, "info", false);
    host.stderrDone = host.pumpOutput(child.stderr, "error", true);
    // Classify the exit once stderr is drained (it says "out of memory"), waiting at most a moment. The meter
    // stops at once: the process id is free for another process now.
    child.status.then(() => {
      host.stopMeter();
      return Promise.race([host.stderrDone, new Promise((r) => setTimeout(r, 1000))]);
    }).then(() => host.onExit());
    try {
      const conn = await new Promise<Deno.Conn>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error("Runtime host did not connect in time")),
          SPAWN_TIMEOUT_MS,
        );
        child.status.then(() => reject(new Error(`Runtime host exited at start: ${host.stderrTail.trim()}`)));
        listener.accept().then(resolve, reject).finally(() => clearTimeout(timer));
      });
      host.attachControl(conn);
      host.acceptWorkers();
      return host;
    } catch (err) {
      host.kill();
      throw err;
    }
  }

  private pumpOutput(
    stream: ReadableStream<Uint8Array>,
    level: "info" | "error",
    keepTail: boolean,
  ): Promise<void> {
    return (async () => {
      let buffered = "";
      for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
        if (keepTail) this.stderrTail = (this.stderrTail + chunk).slice(-4096);
        buffered += chunk;
        const lines = buffered.split("\n");
        buffered = lines.pop()!.slice(-8192);
        for (const line of lines) if (line.trim()) this.budgetedLog(level, line.slice(0, 8192));
      }
      if (buffered.trim()) this.budgetedLog(level, buffered);
    })().catch(() => {});
  }

  /** A line of the function's (console or process output) to its log, within the host's log budget. */
  private budgetedLog(level: LogLevel, text: string): void {
    if (!this.logBudget.take()) return;
    const dropped = this.logBudget.report();
    if (dropped > 0) this.logSink("warn", droppedLinesText(dropped));
    this.logSink(level, text);
  }

  /** The host's own connection: the function to run goes out on it, news of lost workers comes back. */
  private attachControl(conn: Deno.Conn): void {
    this.control = new FrameWriter<PlatformToHost>(conn, () => this.kill());
    (async () => {
      const reader = new FrameReader<Received<HostToPlatform>>();
      for await (const chunk of readChunks(conn)) {
        for (const { header } of reader.push(chunk)) {
          if (header.t === "lost") this.onLost(header);
        }
      }
    })().catch(() => this.kill());
  }

  /** Takes each connection of a worker the host started (after the host's own). */
  private acceptWorkers(): void {
    (async () => {
      for await (const conn of this.listener) this.attachWorker(conn);
    })().catch(() => {});
  }

  private attachWorker(conn: Deno.Conn): void {
    const channel: WorkerChannel = {
      generation: 0,
      writer: new FrameWriter<PlatformToWorker>(conn, () => conn.close()),
      state: "loading",
    };
    (async () => {
      const reader = new FrameReader<Received<WorkerToPlatform>>(MAX_WORKER_FRAME_BYTES);
      for await (const chunk of readChunks(conn)) {
        for (const { header, body } of reader.push(chunk)) this.fromWorker(channel, header, body);
      }
    })().catch(() => {}).finally(() => {
      try {
        conn.close();
      } catch { /* closed */ }
      this.closedChannel(channel);
    });
  }

  /**
   * A worker's connection ended (or broke a rule). New calls wait for the next worker. Its calls are failed by
   * the host's word on it (lost) or the process's exit, which may come a moment later and name the cause (out of
   * memory); if neither does, they fail as a crash.
   */
  private closedChannel(channel: WorkerChannel): void {
    if (this.channel === channel) this.channel = null;
    setTimeout(
      () =>
        this.dropChannel(channel, {
          outcome: "crash",
          message: "Function runtime lost its worker",
          logs: [],
        }),
      ORPHAN_GRACE_MS,
    );
  }

  /** Forgets a worker's connection and fails the calls sent on it with `result`. */
  private dropChannel(channel: WorkerChannel, result: HostResult): void {
    if (this.channels.get(channel.generation) === channel) this.channels.delete(channel.generation);
    if (this.channel === channel) this.channel = null;
    channel.writer.close();
    for (const call of this.calls.list()) if (call.channel === channel) this.settle(call.id, result);
  }

  /** One frame from a worker: only ever about the calls sent to that worker. */
  private fromWorker(
    channel: WorkerChannel,
    header: Received<WorkerToPlatform>,
    body: Uint8Array | null,
  ): void {
    const t = header.t;
    if (t === "log") {
      const level = LOG_LEVELS.has(header.level as string) ? header.level as LogLevel : "info";
      this.budgetedLog(level, String(header.text).slice(0, MAX_LOG_LINE));
      return;
    }
    if (channel.state === "loading") {
      if (t !== "ready" && t !== "init_error") return;
      const generation = header.generation;
      // Workers are numbered in the order the host starts them: a generation at or below one already seen is a
      // worker already replaced (its news may cross its own hello) or a forgery.
      if (
        typeof generation !== "number" || !Number.isInteger(generation) || generation <= this.lastGeneration
      ) {
        return;
      }
      this.lastGeneration = generation;
      channel.generation = generation;
      channel.state = t === "ready" ? "ready" : { error: String(header.message) };
      this.channels.set(channel.generation, channel);
      this.channel = channel;
      this.sendWaiting();
      return;
    }
    if (t !== "res" && t !== "fail" && t !== "chunk" && t !== "end") return;
    const id = header.id as number;
    const call = this.calls.get(id);
    if (!call || call.channel !== channel) return;
    if (t === "chunk" || t === "end") {
      if (!call.body) return;
      if (t === "end") return this.settle(id, { outcome: "ok", cancelled: false });
      if (!body) return;
      if (call.body.received + body.byteLength > MAX_RESPONSE_BYTES) {
        channel.writer.write({ t: "cancel", id });
        this.settle(id, {
          outcome: "error",
          message: `Response is larger than ${MAX_RESPONSE_BYTES} bytes`,
          logs: [],
        });
        return;
      }
      // The frame's body is a view of the reader's chunk: copied, since the stream may hold it a while.
      call.body.push(body.slice());
      return;
    }
    if (call.body) { // a second answer, or the stream's failure
      if (t === "fail") {
        this.settle(id, {
          outcome: header.outcome === "timeout" ? "timeout" : "error",
          message: String(header.message),
          logs: [],
        });
      }
      return;
    }
    const logs = Array.isArray(header.logs) && header.logs.length > 0
      ? header.logs.slice(0, MAX_CALL_LOG_LINES).map((l) => String(l).slice(0, MAX_LOG_LINE))
      : [];
    if (t === "res") {
      const bytes = body ?? new Uint8Array(0);
      if (bytes.byteLength > MAX_RESPONSE_BYTES) {
        this.settle(id, {
          outcome: "error",
          message: `Response is larger than ${MAX_RESPONSE_BYTES} bytes`,
          logs,
        });
        return;
      }
      const status = header.status;
      if (typeof status !== "number" || !Number.isInteger(status) || status < 200 || status > 599) {
        this.settle(id, { outcome: "error", message: "Function answered with an invalid status", logs });
        return;
      }
      if (header.stream === true && call.streams) {
        const stream = new AnswerStream(
          body ? body.slice() : null,
          (bytes) => channel.writer.write({ t: "ack", id, bytes }),
          () => {
            channel.writer.write({ t: "cancel", id });
            this.settle(id, { outcome: "ok", cancelled: true });
          },
        );
        call.body = stream;
        call.resolve({
          outcome: "ok",
          status,
          headers: validHeaders(header.headers),
          body: stream.stream,
          ended: stream.ended,
          logs,
        });
        call.resolve = settled;
        return;
      }
      this.settle(id, {
        outcome: "ok",
        status,
        headers: validHeaders(header.headers),
        body: bytes,
        logs,
      });
    } else {
      this.settle(id, {
        outcome: header.outcome === "timeout" ? "timeout" : "error",
        message: String(header.message),
        logs,
      });
    }
  }

  /** The host stopped a worker (stuck past a time limit, or crashed): the calls it held fail with the reason. */
  private onLost(msg: Received<HostToPlatform>): void {
    const generation = msg.generation;
    // Channels are keyed by integer generations: another value names none.
    if (typeof generation !== "number" || !Number.isInteger(generation)) return;
    this.lastGeneration = Math.max(this.lastGeneration, generation);
    const channel = this.channels.get(generation);
    if (!channel) return;
    const outcome = msg.outcome === "timeout" ? "timeout" : "error";
    this.dropChannel(channel, { outcome, message: String(msg.message), logs: [] });
    // A worker stuck in a loop: the host terminated it, but V8 does not always stop a loop so (measured: a
    // `while (true) {}` ran on at a full core). The process goes, and the loop with it.
    if (outcome === "timeout") this.stop("timeout");
  }

  /** Sends the waiting calls to the worker now ready (or fails them when the function cannot run). */
  private sendWaiting(): void {
    const ids = this.waiting;
    this.waiting = [];
    for (const id of ids) {
      const call = this.calls.get(id);
      if (call) this.send(id, call);
    }
  }

  private send(id: number, call: Call): void {
    const channel = this.channel;
    if (!channel) {
      this.waiting.push(id);
      return;
    }
    if (typeof channel.state === "object") { // the function cannot run: the worker said why
      this.settle(id, { outcome: "error", message: channel.state.error, logs: [] });
      return;
    }
    call.channel = channel;
    const { method, url, headers, body } = call.req!;
    call.req = null;
    channel.writer.write(
      call.streams
        ? { t: "req", id, method, url, headers, stream: true }
        : { t: "req", id, method, url, headers },
      body,
    );
  }

  /** True while the process runs and serves: false from the moment the platform decided to stop it. */
  get alive(): boolean {
    return !this.exited && this.killedFor === null;
  }

  /** Sends one call; resolves with its result, or a failure when the host dies or misses `deadlineMs`. */
  call(req: HostRequest, deadlineMs: number): Promise<HostResult> {
    if (!this.alive) return Promise.resolve({ outcome: "crash", message: "Runtime host is gone", logs: [] });
    const id = this.nextId++;
    this.inFlight++;
    this.lastUsed = Date.now();
    const { promise, resolve } = Promise.withResolvers<HostResult>();
    const call: Call = {
      id,
      resolve,
      deadline: this.lastUsed + deadlineMs,
      channel: null,
      req,
      streams: req.stream === true,
      body: null,
    };
    this.calls.add(call);
    this.budget!.started();
    this.send(id, call);
    return promise;
  }

  /**
   * Ends a call: resolves its result, or, once its answer streams, ends the stream with how it ended (a
   * streamed call stays in flight, under its deadline and its host's limits, until then).
   */
  private settle(id: number, result: HostResult | StreamEnd): void {
    const call = this.calls.get(id);
    if (!call) return;
    this.calls.delete(id);
    this.inFlight--;
    this.lastUsed = Date.now();
    this.budget!.ended();
    // The record is emptied as it leaves: an old-generation object that still points at it (as a Map's replaced
    // table did) counts as live to the scavenger, which would then promote the call's request, promise and
    // answer with it (measured with a Map: 2.3 MB promoted per scavenge, each 5–8 ms, under load).
    const resolve = call.resolve;
    const stream = call.body;
    call.resolve = settled;
    call.channel = null;
    call.req = null;
    call.body = null;
    if (stream) {
      stream.close(
        "cancelled" in result || result.outcome !== "ok"
          ? result as StreamEnd
          : { outcome: "ok", cancelled: false },
      );
    } else resolve(result as HostResult);
  }

  private onExit(): void {
    if (this.exited) return;
    this.exited = true;
    this.stopMeter();
    const oom = this.killedFor === "memory" ||
      /out of memory|heap limit|allocation failed/i.test(this.stderrTail);
    const result: HostResult = this.killedFor === "timeout"
      ? { outcome: "timeout", message: timeLimitText(this.init!.timeoutMs), logs: [] }
      : this.killedFor === "cpu"
      ? { outcome: "timeout", message: cpuLimitText(this.init!.cpuMs), logs: [] }
      : oom
      ? {
        outcome: "oom",
        message: `Function ran out of memory (memory_mb ${this.memoryMb}) and was stopped`,
        logs: [],
      }
      : { outcome: "crash", message: "Function runtime exited unexpectedly", logs: [] };
    for (const call of this.calls.list()) this.settle(call.id, result);
    this.control?.close();
    for (const channel of this.channels.values()) channel.writer.close();
    this.closeListener();
    this.exitSink(this);
  }

  private closeListener(): void {
    try {
      this.listener.close();
    } catch { /* closed */ }
    Deno.remove(this.socket).catch(() => {});
  }

  /** Stops the process at once. */
  kill(): void {
    try {
      this.child.kill("SIGKILL");
    } catch { /* already gone */ }
  }

  /** Waits for the process to end (after {@linkcode kill} or a socket close). */
  async closed(): Promise<void> {
    await this.child.status;
  }
}

/**
 * A function's response headers as they came over its connection, kept only when HTTP can carry them: a token
 * name (lowercased) and a value of visible characters, spaces and tabs. A worker's own code chooses these (a
 * Response subclass can bypass Headers), and the HTTP server of the platform refuses others — by a panic of its
 * process, for a control character in a value.
 */
function validHeaders(value: unknown): HeaderList {
  if (!Array.isArray(value)) return [];
  const out: HeaderList = [];
  for (const h of value) {
    if (!Array.isArray(h) || h.length !== 2) continue;
    const [name, text] = h;
    if (typeof name !== "string" || typeof text !== "string") continue;
    if (!HEADER_NAME.test(name) || !HEADER_VALUE.test(text)) continue;
    out.push([name.toLowerCase(), text]);
  }
  return out;
}
