/**
 * The statements one PostgreSQL connection keeps prepared for pipelines, least recently used first, bounded.
 *
 * postgres.js prepares a statement per text and connection and never forgets one until the connection closes,
 * so the bound is kept here: a text past it evicts the least recently used one, whose server-side statement is
 * then deallocated by name. postgres.js still remembers the evicted text's name, so each admission sends the
 * text with a suffix of its own that makes it new to postgres.js (whose own map grows with such churn until the
 * connection is recycled by `max_lifetime`; the server's statements stay within the bound). That map is held
 * in bounds too: a connection admits at most {@linkcode ADMISSIONS_PER_TEXT_ROOM} times its bound, and texts of at
 * most {@linkcode MAX_PREPARED_TEXT_CHARS}; past either, a text runs unnamed (postgres.js keeps nothing of it).
 * Clients choose the texts (every data API query shape is one), so without these bounds a client cycling through
 * shapes grew the platform's memory by the size of each text, without end.
 */
/** Longest text kept prepared: a longer one, rare and large, runs unnamed. */
export const MAX_PREPARED_TEXT_CHARS = 8192;
/** Admissions a connection makes, per text it may keep, before it prepares nothing new (until it is recycled). */
export const ADMISSIONS_PER_TEXT_ROOM = 8;

export class ConnectionStatements {
  /** text → what is sent for it on this connection, and the name postgres.js prepared it under. */
  private readonly entries = new Map<string, { sent: string; name?: string }>();
  /** Names replaced by a new one for the same text, not deallocated yet. */
  private readonly stale: string[] = [];
  /** Admissions so far on this connection: the suffix of the next one. */
  private admitted = 0;

  constructor(private readonly max: number, readonly pid: number) {}

  /** The number of texts kept prepared. */
  get size(): number {
    return this.entries.size;
  }

  /**
   * How to send `text` in a batch that also uses `keep`: the string and whether to prepare it, plus the name to
   * deallocate when making room evicted one. A text that cannot get room runs unnamed.
   */
  admit(text: string, keep: Set<string>): { sent: string; prepare: boolean; evicted?: string } {
    const hit = this.entries.get(text);
    if (hit) {
      this.entries.delete(text);
      this.entries.set(text, hit);
      return { sent: hit.sent, prepare: true };
    }
    if (text.length > MAX_PREPARED_TEXT_CHARS || this.admitted >= ADMISSIONS_PER_TEXT_ROOM * this.max) {
      return { sent: text, prepare: false };
    }
    let evicted: string | undefined;
    if (this.entries.size >= this.max) {
      let victim: string | undefined;
      for (const t of this.entries.keys()) {
        if (!keep.has(t)) {
          victim = t;
          break;
        }
      }
      if (victim === undefined) return { sent: text, prepare: false };
      evicted = this.entries.get(victim)!.name;
      this.entries.delete(victim);
    }
    // A trailing comment, new at each admission, changes postgres.js's key for the text, not the statement (a
    // line comment in the text ends at the newline).
    const sent = `${text}\n/* platform prepared ${++this.admitted} */`;
    this.entries.set(text, { sent });
    return { sent, prepare: true, evicted };
  }

  /**
   * Records the name postgres.js gave `text`. It prepares again under a new name after a failed parse or when
   * DDL changed a statement's columns; the old one, if it exists, is deallocated with the next batch.
   */
  named(text: string, name: string | undefined): void {
    const entry = this.entries.get(text);
    if (!entry || !name || entry.name === name) return;
    if (entry.name) this.stale.push(entry.name);
    entry.name = name;
  }

  /** The names to deallocate that no eviction produced; taking them marks them done. */
  takeStale(): string[] {
    return this.stale.splice(0);
  }
}
