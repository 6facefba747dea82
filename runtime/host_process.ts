import { join } from "node:path";
import { FrameReader, FrameWriter, readChunks } from "./frames.ts";
import type { HeaderList, InitMessage, Outcome } from "./protocol.ts";

/** One call handed to a host. */
export interface HostRequest {
  method: string;
  url: string;
  headers: HeaderList;
  body: Uint8Array | null;
}

/** What a call gave: an answer, or a failure with its outcome. */
export type HostResult =
  | { outcome: "ok"; status: number; headers: HeaderList; body: Uint8Array; logs: string[] }
  | { outcome: Exclude<Outcome, "ok">; message: string; logs: string[] };

/** Options of {@linkcode HostProcess.spawn}. */
export interface HostSpawnOptions {
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
export type HostLogSink = (level: "debug" | "info" | "warn" | "error", text: string) => void;

const RUNTIME_DIR = new URL(".", import.meta.url).pathname.replace(/\/$/, "");
const HOST_MAIN = join(RUNTIME_DIR, "host.ts");
// The modules a host loads into its worker: the only files it may read (so a function can import nothing else).
const WORKER_FILES = [
  "worker.ts",
  "protocol.ts",
  "wasm/wagi.ts",
  "wasm/wasi.ts",
  "egress/worker_net.ts",
  "egress/wire.ts",
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

/**
 * HostProcess is the platform's handle on one runtime host child process: it spawns it with the function's
 * permissions and heap cap, connects over a Unix socket, sends calls and resolves their results, and turns
 * the death of the process (out of memory, crash, kill) into failures of the calls it held.
 */
export class HostProcess {
  inFlight = 0;
  /** The function version this host serves (null while it is a spare). */
  init: InitMessage | null = null;
  lastUsed = Date.now();
  private nextId = 1;
  private readonly calls = new Map<number, { resolve: (r: HostResult) => void; deadline: number }>();
  private watchdog: ReturnType<typeof setInterval> | null = null;
  private writer: FrameWriter | null = null;
  private stderrTail = "";
  private exited = false;
  private killedFor: "timeout" | null = null;
  private stderrDone: Promise<void> = Promise.resolve();
  private logSink: HostLogSink = () => {};
  private exitSink: (host: HostProcess) => void;

  private constructor(
    readonly id: string,
    readonly memoryMb: number,
    private readonly child: Deno.ChildProcess,
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
    this.writer!.write({ ...init });
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
      `--v8-flags=--max-old-space-size=${options.memoryMb}`,
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
    const host = new HostProcess(options.id, options.memoryMb, child, options.onExit);
    host.pumpOutput(child.stdout, "info", false);
    host.stderrDone = host.pumpOutput(child.stderr, "error", true);
    // Classify the exit once stderr is drained (it says "out of memory"), waiting at most a moment.
    child.status.then(() => Promise.race([host.stderrDone, new Promise((r) => setTimeout(r, 1000))]))
      .then(() => host.onExit());
    try {
      const conn = await new Promise<Deno.Conn>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error("Runtime host did not connect in time")),
          SPAWN_TIMEOUT_MS,
        );
        child.status.then(() => reject(new Error(`Runtime host exited at start: ${host.stderrTail.trim()}`)));
        listener.accept().then(resolve, reject).finally(() => clearTimeout(timer));
      });
      host.attach(conn);
      return host;
    } catch (err) {
      host.kill();
      throw err;
    } finally {
      listener.close();
      await Deno.remove(socket).catch(() => {});
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
        for (const line of lines) if (line.trim()) this.logSink(level, line.slice(0, 8192));
      }
      if (buffered.trim()) this.logSink(level, buffered);
    })().catch(() => {});
  }

  private attach(conn: Deno.Conn): void {
    this.writer = new FrameWriter(conn, () => this.kill());
    (async () => {
      const reader = new FrameReader();
      for await (const chunk of readChunks(conn)) {
        for (const { header, body } of reader.push(chunk)) {
          if (header.t === "log") {
            this.logSink(header.level as "info", String(header.text));
            continue;
          }
          const id = header.id as number;
          if (!this.calls.has(id)) continue;
          const resolve = (r: HostResult) => this.settle(id, r);
          const logs = Array.isArray(header.logs) ? header.logs.map(String) : [];
          if (header.t === "res") {
            resolve({
              outcome: "ok",
              status: Number(header.status),
              headers: header.headers as HeaderList,
              body: body ?? new Uint8Array(0),
              logs,
            });
          } else {
            resolve({
              outcome: header.outcome === "timeout" ? "timeout" : "error",
              message: String(header.message),
              logs,
            });
          }
        }
      }
    })().catch(() => this.kill());
  }

  /** True while the process runs. */
  get alive(): boolean {
    return !this.exited;
  }

  /** Sends one call; resolves with its result, or a failure when the host dies or misses `deadlineMs`. */
  call(req: HostRequest, deadlineMs: number): Promise<HostResult> {
    if (this.exited) return Promise.resolve({ outcome: "crash", message: "Runtime host is gone", logs: [] });
    const id = this.nextId++;
    this.inFlight++;
    this.lastUsed = Date.now();
    const { promise, resolve } = Promise.withResolvers<HostResult>();
    this.calls.set(id, { resolve, deadline: this.lastUsed + deadlineMs });
    // One watchdog per host instead of a timer per call: a host that misses a call's deadline is wedged.
    this.watchdog ??= setInterval(() => {
      const now = Date.now();
      for (const call of this.calls.values()) {
        if (call.deadline < now) {
          this.killedFor = "timeout";
          this.kill();
          return;
        }
      }
    }, 100);
    const { body, ...rest } = req;
    this.writer!.write({ t: "req", id, ...rest }, body);
    return promise;
  }

  private settle(id: number, result: HostResult): void {
    const call = this.calls.get(id);
    if (!call) return;
    this.calls.delete(id);
    this.inFlight--;
    this.lastUsed = Date.now();
    if (this.calls.size === 0 && this.watchdog !== null) {
      clearInterval(this.watchdog);
      this.watchdog = null;
    }
    call.resolve(result);
  }

  private onExit(): void {
    if (this.exited) return;
    this.exited = true;
    const oom = /out of memory|heap limit|allocation failed/i.test(this.stderrTail);
    const result: HostResult = this.killedFor === "timeout"
      ? { outcome: "timeout", message: "Function did not answer within its time limit", logs: [] }
      : oom
      ? {
        outcome: "oom",
        message: `Function ran out of memory (memory_mb ${this.memoryMb}) and was stopped`,
        logs: [],
      }
      : { outcome: "crash", message: "Function runtime exited unexpectedly", logs: [] };
    for (const id of [...this.calls.keys()]) this.settle(id, result);
    this.writer?.close();
    this.exitSink(this);
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
