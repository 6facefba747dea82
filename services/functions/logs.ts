/** One line of a function's log. */
export interface LogEntry {
  timestamp: string;
  level: "debug" | "info" | "warn" | "error";
  message: string;
}

/**
 * FunctionLogs keeps the recent console output of each function in a bounded ring (per function, per
 * instance of the platform): the oldest lines drop out when a function writes more than `capacity`.
 */
export class FunctionLogs {
  private readonly rings = new Map<string, { entries: LogEntry[]; next: number }>();

  constructor(private readonly capacity: number, private readonly maxFunctions = 10_000) {}

  /** Appends a line to the log of `functionId`. */
  add(functionId: string, level: LogEntry["level"], message: string): void {
    let ring = this.rings.get(functionId);
    if (!ring) {
      if (this.rings.size >= this.maxFunctions) this.rings.delete(this.rings.keys().next().value!);
      ring = { entries: [], next: 0 };
      this.rings.set(functionId, ring);
    }
    const entry = { timestamp: new Date().toISOString(), level, message };
    if (ring.entries.length < this.capacity) ring.entries.push(entry);
    else ring.entries[ring.next] = entry;
    ring.next = (ring.next + 1) % this.capacity;
  }

  /** The last `limit` lines of a function, newest first, optionally of one level. */
  read(functionId: string, limit: number, level?: LogEntry["level"]): LogEntry[] {
    const ring = this.rings.get(functionId);
    if (!ring) return [];
    const ordered = ring.entries.length < this.capacity
      ? ring.entries
      : [...ring.entries.slice(ring.next), ...ring.entries.slice(0, ring.next)];
    return ordered.filter((e) => !level || e.level === level).slice(-limit).reverse();
  }

  /** Forgets a deleted function. */
  drop(functionId: string): void {
    this.rings.delete(functionId);
  }
}
