/**
 * CpuBudget is the CPU time (ms) a runtime host may still use. Each call brings `perCallMs`: calls in flight
 * together share what they brought, and work a function leaves running after its last answer draws on what is
 * left, one call's worth at most. A call on an idle host starts from its own `perCallMs` (work still running
 * then draws on it). Before its first call ends, a host also has `loadMs` to load the function (its module's
 * top-level code runs then, with or without a call). It is spent by what the host is seen to use, sampled.
 */
export class CpuBudget {
  private left: number;
  private inFlight = 0;
  private loaded = false;

  constructor(private readonly perCallMs: number, loadMs: number) {
    this.left = loadMs;
  }

  /** A call starts: it brings its CPU time. */
  started(): void {
    if (this.inFlight === 0 && this.loaded) this.left = 0;
    this.left += this.perCallMs;
    this.inFlight++;
  }

  /** A call ended: the calls still in flight, or the work left running, keep at most their share. */
  ended(): void {
    this.inFlight--;
    this.loaded = true;
    this.left = Math.min(this.left, this.perCallMs * Math.max(this.inFlight, 1));
  }

  /** Spends `ms` the host used; false once the host used more than it was given. */
  spend(ms: number): boolean {
    this.left -= ms;
    return this.left >= 0;
  }
}
