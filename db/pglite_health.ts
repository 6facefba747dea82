import type { Vitals } from "./pglite_protocol.ts";

/** Bounds of every embedded database of the process (set from the config at start: configurePglite). */
export interface PgliteLimits {
  /** The most an engine's WebAssembly memory may grow to: past it a statement fails with 53200. */
  maxMemoryMb: number;
  /** An idle engine whose memory grew past this is reopened, which gives the memory back. */
  recycleMemoryMb: number;
  /** An engine whose thread has not come back for this long is given up and reopened. */
  stallMs: number;
  /** PostgreSQL's `shared_buffers` of each engine, in MB: resident once the engine has read that much. */
  sharedBuffersMb: number;
  /** A project database without a call for this long is closed, and opened again by the next call (0: never). */
  idleSecs: number;
}

export const pgliteLimits: PgliteLimits = {
  maxMemoryMb: 1024,
  recycleMemoryMb: 512,
  stallMs: 120_000,
  sharedBuffersMb: 8,
  idleSecs: 300,
};

/** Sets the bounds of the embedded databases opened from now on (and the checks of the open ones). */
export function configurePglite(limits: Partial<PgliteLimits>): void {
  Object.assign(pgliteLimits, limits);
}

/** What `/v1/ready` says about one embedded database. */
export interface InstanceHealth {
  /** `control`, or `project <ref>`. */
  name: string;
  /** `restarting` from the moment it is given up (or recycled) until its directory is open again. */
  state: "ok" | "restarting";
  /** False while it rests: closed for idleness (PGLITE_IDLE_SECS), opened again by the next call. */
  open: boolean;
  memory_mb: number;
  /** Restarts completed. */
  restarts: number;
  /** The latest restart, the one under way included. */
  last_restart: { reason: string; at: string } | null;
}

/** An open embedded database, as the monitor sees it. */
export interface Monitored {
  health(): InstanceHealth;
  /** Restarts the engine when it stalled, or recycles it when it is idle and too big. */
  check(now: number): void;
}

/** How often the monitor looks at every open engine. */
const CHECK_MS = 500;

const instances = new Set<Monitored>();
/** The threads of engines given up while running: each holds a core and its memory until it stops. */
const givenUp = new Set<Vitals>();
let timer: ReturnType<typeof setInterval> | undefined;

function checkAll(): void {
  const now = Date.now();
  for (const instance of instances) instance.check(now);
}

/** Starts watching `instance` until {@linkcode unwatch}. */
export function watch(instance: Monitored): void {
  instances.add(instance);
  if (timer === undefined) {
    const interval = setInterval(checkAll, CHECK_MS);
    Deno.unrefTimer(interval);
    timer = interval;
  }
}

export function unwatch(instance: Monitored): void {
  instances.delete(instance);
  if (instances.size === 0 && timer !== undefined) {
    clearInterval(timer);
    timer = undefined;
  }
}

/** Counts the thread of an engine given up while it ran, until it is seen to stop. */
export function gaveUp(vitals: Vitals): void {
  if (!vitals.hasStopped) givenUp.add(vitals);
}

/**
 * The embedded databases of this process and the threads of given-up engines not seen to stop (a thread that
 * spins in WebAssembly without touching a file or the clock cannot be stopped: only the process's exit ends it).
 */
export function pgliteHealth(): { instances: InstanceHealth[]; stuck_threads: number } {
  for (const vitals of givenUp) if (vitals.hasStopped) givenUp.delete(vitals);
  return { instances: [...instances].map((i) => i.health()), stuck_threads: givenUp.size };
}
