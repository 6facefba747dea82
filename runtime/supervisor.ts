import { HostProcess, type HostRequest, type HostResult } from "./host_process.ts";
import { netFlags } from "./net_policy.ts";
import type { LogLevel, RuntimeKind } from "./protocol.ts";

/** Limits and policy of the runtime, in one typed object. */
export interface RuntimeOptions {
  /** Host processes alive at once, at most. */
  maxHosts: number;
  /** Sum of the hosts' memory_mb, at most. */
  maxMemoryMb: number;
  /** Hosts one tenant (project) may hold at once, so that one project cannot take the runtime from the others. */
  maxHostsPerTenant: number;
  /** Sum of memory_mb one tenant may hold at once. */
  maxMemoryMbPerTenant: number;
  /** A host with no call for this long is stopped. */
  idleMs: number;
  /** A spare host (started ahead of the next cold start) not taken for this long is stopped (default 30 s). */
  spareIdleMs?: number;
  /** Private addresses or IPv4 ranges the operator opened to functions (FUNCTIONS_ALLOW_PRIVATE_NET). */
  allowPrivateNet: string[];
  /** The platform's own ports, kept unreachable even on an opened address. */
  platformPorts: number[];
  /** Extra time the platform waits past a function's time limit before it gives up (504). */
  marginMs: number;
}

/** One deployed version of a function, as the runtime runs it. */
export interface FunctionSpec {
  /** The tenant (project) the function belongs to: its share of the runtime is bounded. */
  tenant: string;
  /** Identity of the function across versions (its id). */
  functionId: string;
  /** Identity of this version: code_hash, permissions and env (a warm host serves exactly one). */
  versionKey: string;
  name: string;
  kind: RuntimeKind;
  code: string;
  /** `code` is a bundle (JavaScript built at deploy), not the function's own source. */
  bundled?: boolean;
  env: Record<string, string>;
  allowNet: string[];
  memoryMb: number;
  timeoutSecs: number;
  /** CPU time per call (ms). */
  cpuMs: number;
}

/** A started host waiting for its first function (null while it starts). */
interface Spare {
  host: HostProcess | null;
  pending: Promise<HostProcess>;
  memoryMb: number;
  at: number;
  /** Taken by a start while still starting: it is that start's host now. */
  taken?: boolean;
}

const MAX_SPARES = 2;
// A spare host holds a process and the worker it booted (measured: 51–54 MB RSS, of which the worker 16 MB,
// which terminating the worker alone does not give back): after this long unused it goes, and the next cold
// start spawns its host.
const SPARE_IDLE_MS = 30_000;

/** The addresses of this machine's interfaces (closed to functions); empty when they cannot be listed. */
function ownAddresses(): string[] {
  try {
    return Deno.networkInterfaces().map((i) => i.address);
  } catch {
    return [];
  }
}

/** Receives the console lines of a function. */
type LogSink = (functionId: string, level: LogLevel, text: string) => void;

/** The runtime could not take the call (capacity or start failure): the caller answers 503. */
export class RuntimeUnavailable extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "RuntimeUnavailable";
  }
}

/**
 * Runtime supervises the runtime host processes: one warm host per function version, started on first call,
 * reused by later calls (which run concurrently in it), replaced when the function is redeployed (the old
 * one drains its calls first), restarted after a crash, stopped when idle, and bounded in count and memory.
 */
export class Runtime {
  private readonly hosts = new Map<string, Promise<HostProcess>>();
  /** The host each promise in `hosts` gave, once it did. */
  private readonly started = new WeakMap<Promise<HostProcess>, HostProcess>();
  private readonly current = new Map<string, string>(); // functionId → versionKey
  private readonly retiring = new Set<HostProcess>();
  private readonly spares = new Map<string, Spare>();
  private readonly spawning = new Set<Promise<HostProcess>>();
  private readonly idleTimer: ReturnType<typeof setInterval>;
  private seq = 0;
  private closing = false;
  private readonly tenantOf = new WeakMap<HostProcess, string>();
  private readonly startingByTenant = new Map<string, { count: number; memory: number }>();

  private constructor(
    private readonly options: RuntimeOptions,
    /** The private directory of the hosts' sockets (0700). */
    readonly socketDir: string,
    private readonly onLog: LogSink,
  ) {
    const every = Math.min(options.idleMs, options.spareIdleMs ?? SPARE_IDLE_MS) / 2;
    this.idleTimer = setInterval(() => this.evictIdle(), Math.max(250, Math.min(every, 10_000)));
  }

  /** Creates a runtime; sockets live in a fresh private temp directory. */
  static async create(options: RuntimeOptions, onLog: LogSink): Promise<Runtime> {
    const dir = await Deno.makeTempDir({ prefix: "rt-" });
    await Deno.chmod(dir, 0o700);
    return new Runtime(options, dir, onLog);
  }

  /** Runs one call of `spec`. Failures of the function come back as results; RuntimeUnavailable otherwise. */
  invoke(spec: FunctionSpec, req: HostRequest): Promise<HostResult> {
    const deadlineMs = spec.timeoutSecs * 1000 + this.options.marginMs;
    // A warm call goes straight to the host that host() would give it (the one `hosts` holds, once started):
    // no promise of a host to await. A retired, stopped or exited host has left `hosts` already.
    const pending = this.current.get(spec.functionId) === spec.versionKey
      ? this.hosts.get(spec.versionKey)
      : undefined;
    const warm = pending && this.started.get(pending);
    if (warm?.alive && !this.closing) return warm.call(req, deadlineMs);
    return this.host(spec).then((host) => host.call(req, deadlineMs));
  }

  /** Starts the host of a version ahead of its first call (after a deploy). Errors are ignored. */
  prewarm(spec: FunctionSpec): void {
    this.host(spec).catch(() => {});
  }

  /** Stops every host of a function (deleted or deactivated). */
  retire(functionId: string): void {
    const key = this.current.get(functionId);
    this.current.delete(functionId);
    if (key) this.retireKey(key);
  }

  private retireKey(key: string): void {
    const pending = this.hosts.get(key);
    this.hosts.delete(key);
    pending?.then((host) => {
      this.retiring.add(host);
      this.reapRetiring();
    }, () => {});
  }

  private reapRetiring(): void {
    for (const host of this.retiring) {
      if (host.inFlight === 0 || !host.alive) {
        this.retiring.delete(host);
        host.kill();
      }
    }
  }

  private host(spec: FunctionSpec): Promise<HostProcess> {
    if (this.closing) return Promise.reject(new RuntimeUnavailable("Function runtime is shutting down"));
    const previous = this.current.get(spec.functionId);
    if (previous !== spec.versionKey) {
      this.current.set(spec.functionId, spec.versionKey);
      if (previous) this.retireKey(previous); // redeployed: new calls get the new version
    }
    const known = this.hosts.get(spec.versionKey);
    // A host being stopped (past a limit) serves no new call: the next one starts a fresh host.
    if (known && this.started.get(known)?.alive !== false) return known;
    const starting = this.start(spec);
    this.hosts.set(spec.versionKey, starting);
    starting.then((h) => this.started.set(starting, h), () => {
      if (this.hosts.get(spec.versionKey) === starting) this.hosts.delete(spec.versionKey);
    });
    return starting;
  }

  private live(): HostProcess[] {
    return [...this.liveSet()];
  }

  /** Hosts that serve or drain calls (a host the platform is stopping, killed already, is not counted). */
  private liveSet(): Set<HostProcess> {
    const out = new Set<HostProcess>();
    for (const h of this.retiring) if (h.alive) out.add(h);
    for (const h of this.settled.values()) if (h.alive) out.add(h);
    return out;
  }

  private readonly settled = new Map<string, HostProcess>();

  /** Processes and memory in use: serving hosts, hosts starting, spares. */
  private usage(): { count: number; memory: number } {
    const live = this.live();
    let memory = live.reduce((n, h) => n + h.memoryMb, 0) + this.startingMemory;
    for (const spare of this.spares.values()) memory += spare.memoryMb;
    return { count: live.length + this.starting + this.spares.size, memory };
  }

  /**
   * Keeps a tenant within its share: it may make room by stopping its own idle hosts only; when all of its
   * hosts are busy, it alone is refused, and the other tenants keep the rest of the runtime.
   */
  private makeTenantRoom(tenant: string, memoryMb: number): void {
    const mine = this.live().filter((h) => this.tenantOf.get(h) === tenant);
    const starting = this.startingByTenant.get(tenant) ?? { count: 0, memory: 0 };
    let count = mine.length + starting.count;
    let memory = mine.reduce((n, h) => n + h.memoryMb, 0) + starting.memory;
    const idle = mine.filter((h) => h.inFlight === 0).sort((a, b) => a.lastUsed - b.lastUsed);
    const { maxHostsPerTenant: maxHosts, maxMemoryMbPerTenant: maxMemory } = this.options;
    while (count + 1 > maxHosts || memory + memoryMb > maxMemory) {
      const victim = idle.shift();
      if (!victim) {
        throw new RuntimeUnavailable(
          `The project's functions use their whole share of the runtime (${maxHosts} hosts, ${maxMemory} MB)`,
        );
      }
      this.stop(victim);
      count--;
      memory -= victim.memoryMb;
    }
  }

  private makeRoom(memoryMb: number): void {
    // Spares go first: they serve nobody yet.
    for (const key of [...this.spares.keys()]) {
      const { count, memory } = this.usage();
      if (count + 1 <= this.options.maxHosts && memory + memoryMb <= this.options.maxMemoryMb) break;
      this.dropSpare(key);
    }
    const live = this.live();
    let { count, memory } = this.usage();
    const idle = live.filter((h) => h.inFlight === 0).sort((a, b) => a.lastUsed - b.lastUsed);
    while (count + 1 > this.options.maxHosts || memory + memoryMb > this.options.maxMemoryMb) {
      const victim = idle.shift();
      if (!victim) {
        throw new RuntimeUnavailable(
          `Function runtime is at capacity (${this.options.maxHosts} hosts, ${this.options.maxMemoryMb} MB)`,
        );
      }
      this.stop(victim);
      count--;
      memory -= victim.memoryMb;
    }
  }

  private starting = 0;
  private startingMemory = 0;

  private spawn(memoryMb: number, flags: string[]): Promise<HostProcess> {
    return HostProcess.spawn({
      id: `${Deno.pid}-${++this.seq}`,
      memoryMb,
      netFlags: flags,
      socketDir: this.socketDir,
      onExit: (h) => {
        for (const [key, spare] of this.spares) if (spare.host === h) this.spares.delete(key);
      },
    });
  }

  /** Keeps one started, unassigned host per recent (memory, network) shape, so a cold start skips the spawn. */
  private refill(key: string, memoryMb: number, flags: string[]): void {
    if (this.closing || this.spares.has(key)) return;
    const { count, memory } = this.usage();
    if (count + 1 > this.options.maxHosts || memory + memoryMb > this.options.maxMemoryMb) return;
    if (this.spares.size >= MAX_SPARES) this.dropSpare(this.spares.keys().next().value!);
    const pending = this.spawn(memoryMb, flags);
    const entry: Spare = { host: null, pending, memoryMb, at: Date.now() };
    this.spares.set(key, entry);
    this.spawning.add(pending);
    pending.finally(() => this.spawning.delete(pending)).catch(() => {});
    pending.then((host) => {
      if (entry.taken) return;
      if (this.spares.get(key) === entry && !this.closing) entry.host = host;
      else host.kill();
    }, () => {
      if (this.spares.get(key) === entry) this.spares.delete(key);
    });
  }

  private dropSpare(key: string): void {
    const spare = this.spares.get(key);
    this.spares.delete(key);
    spare?.host?.kill();
  }

  private async start(spec: FunctionSpec): Promise<HostProcess> {
    const flags = netFlags(spec.allowNet, this.options.allowPrivateNet, this.options.platformPorts);
    const key = `${spec.memoryMb}|${flags.join(" ")}`;
    const spare = this.spares.get(key);
    let host = spare?.host?.alive ? spare.host : null;
    // A spare still starting is further along than a new spawn would be: this start takes it.
    const early = !host && spare?.host === null ? spare : null;
    if (host || early) this.spares.delete(key);
    if (early) early.taken = true;
    try {
      this.makeTenantRoom(spec.tenant, spec.memoryMb);
      this.makeRoom(spec.memoryMb);
    } catch (err) {
      host?.kill();
      early?.pending.then((h) => h.kill(), () => {});
      throw err;
    }
    this.starting++;
    this.startingMemory += spec.memoryMb;
    const tenantStarting = this.startingByTenant.get(spec.tenant) ?? { count: 0, memory: 0 };
    this.startingByTenant.set(spec.tenant, {
      count: tenantStarting.count + 1,
      memory: tenantStarting.memory + spec.memoryMb,
    });
    try {
      host ??= early
        ? await early.pending.catch(() => this.spawn(spec.memoryMb, flags))
        : await this.spawn(spec.memoryMb, flags);
      host.assign(
        {
          t: "init",
          kind: spec.kind,
          name: spec.name,
          code: spec.code,
          bundled: spec.bundled ?? false,
          env: spec.env,
          memoryMb: spec.memoryMb,
          timeoutMs: spec.timeoutSecs * 1000,
          cpuMs: spec.cpuMs,
          egress: spec.allowNet.length === 0 ? null : {
            allowNet: spec.allowNet,
            allowPrivate: this.options.allowPrivateNet,
            platformPorts: [...this.options.platformPorts],
            ownAddresses: ownAddresses(),
          },
        },
        (level, text) => this.onLog(spec.functionId, level, text),
        (h) => this.onExit(spec.versionKey, h),
      );
      this.tenantOf.set(host, spec.tenant);
      this.settled.set(spec.versionKey, host);
      return host;
    } catch (err) {
      throw new RuntimeUnavailable("Function runtime could not start", { cause: err });
    } finally {
      this.starting--;
      this.startingMemory -= spec.memoryMb;
      const t = this.startingByTenant.get(spec.tenant)!;
      if (t.count <= 1) this.startingByTenant.delete(spec.tenant);
      else this.startingByTenant.set(spec.tenant, { count: t.count - 1, memory: t.memory - spec.memoryMb });
      this.refill(key, spec.memoryMb, flags);
    }
  }

  private onExit(key: string, host: HostProcess): void {
    this.retiring.delete(host);
    if (this.settled.get(key) === host) {
      this.settled.delete(key);
      this.hosts.delete(key); // crashed or stopped: the next call starts a fresh host
    }
  }

  private stop(host: HostProcess): void {
    for (const [key, h] of this.settled) {
      if (h === host) {
        this.settled.delete(key);
        this.hosts.delete(key);
      }
    }
    this.retiring.delete(host);
    host.kill();
  }

  private evictIdle(): void {
    this.reapRetiring();
    const cutoff = Date.now() - this.options.idleMs;
    const spareCutoff = Date.now() - Math.min(this.options.idleMs, this.options.spareIdleMs ?? SPARE_IDLE_MS);
    for (const [key, spare] of this.spares) if (spare.at < spareCutoff) this.dropSpare(key);
    for (const host of this.live()) if (host.inFlight === 0 && host.lastUsed < cutoff) this.stop(host);
  }

  /** Counts of live hosts and their memory, for tests and metrics. */
  stats(): { hosts: number; memoryMb: number; spares: number } {
    const live = this.live();
    return {
      hosts: live.length,
      memoryMb: live.reduce((n, h) => n + h.memoryMb, 0),
      spares: this.spares.size,
    };
  }

  /** Stops every host and removes the socket directory. */
  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.idleTimer);
    const all = [...this.retiring, ...this.settled.values()]; // those being stopped too: awaited below
    for (const spare of this.spares.values()) if (spare.host) all.push(spare.host);
    for (const key of [...this.spares.keys()]) this.dropSpare(key);
    for (const p of await Promise.allSettled([...this.spawning])) {
      if (p.status === "fulfilled") all.push(p.value);
    }
    const pending = await Promise.allSettled([...this.hosts.values()]);
    for (const p of pending) if (p.status === "fulfilled") all.push(p.value);
    for (const h of all) h.kill();
    await Promise.all(all.map((h) => h.closed()));
    await Deno.remove(this.socketDir, { recursive: true }).catch(() => {});
  }
}
