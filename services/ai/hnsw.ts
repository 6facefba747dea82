/**
 * A compact HNSW graph (Malkov & Yashunin) over unit vectors, by inner product, keyed by chunk id. Vectors live in
 * one Float32Array and level-0 links in one Int32Array, so a search touches flat memory only. A removed key stays
 * in the graph as a tombstone (it still routes) and never comes back in results; the owner rebuilds when too many
 * accumulate. The graph (not the vectors) serializes to bytes, so a restart reloads it instead of rebuilding.
 * Written here rather than taken from npm: the packages without a native build were a browser-only WASM build,
 * a WASM one that persists to IndexedDB only, and a pure TypeScript one too slow to build 100k vectors.
 */
export class Hnsw {
  readonly m = 16;
  readonly m0 = 32;
  readonly efConstruction = 64;
  private capacity = 0;
  private size = 0;
  private vectors = new Float32Array(0);
  private keys = new Float64Array(0);
  private removed = new Uint8Array(0);
  private levels = new Uint8Array(0);
  private links0 = new Int32Array(0);
  private counts0 = new Uint8Array(0);
  private upper = new Map<number, number[][]>();
  private visited = new Uint32Array(0);
  private visitMark = 0;
  private entry = -1;
  private top = -1;
  private readonly slots = new Map<number, number>();
  private tombstones = 0;
  private seed = 0x2545f491;

  constructor(readonly dims: number) {}

  /** Live keys. */
  get liveCount(): number {
    return this.slots.size;
  }

  /** The share of graph nodes that are tombstones. */
  get tombstoneRatio(): number {
    return this.size === 0 ? 0 : this.tombstones / this.size;
  }

  has(key: number): boolean {
    return this.slots.has(key);
  }

  /** Every live key. */
  liveKeys(): IterableIterator<number> {
    return this.slots.keys();
  }

  /** Adds (or replaces) the vector of `key`. */
  add(key: number, vector: Float32Array): void {
    if (vector.length !== this.dims) throw new Error("Vector has other dimensions than the index");
    if (this.slots.has(key)) this.remove(key);
    const slot = this.allocate(key, vector, this.randomLevel());
    this.connect(slot);
  }

  /** Marks `key` removed; false when it was not there. */
  remove(key: number): boolean {
    const slot = this.slots.get(key);
    if (slot === undefined) return false;
    this.slots.delete(key);
    this.removed[slot] = 1;
    this.tombstones++;
    return true;
  }

  /** The `k` live keys with the highest inner product with `query`, best first, exploring `ef` candidates. */
  search(query: Float32Array, k: number, ef = Math.max(64, k * 4)): { key: number; score: number }[] {
    if (this.entry < 0) return [];
    let current = this.entry;
    let currentDist = this.distanceTo(query, current);
    for (let level = this.top; level > 0; level--) {
      [current, currentDist] = this.greedy(query, current, currentDist, level);
    }
    const found = this.searchLayer(query, current, currentDist, Math.max(ef, k), 0, true);
    const out: { key: number; score: number }[] = [];
    for (const [dist, slot] of found) {
      if (out.length === k) break;
      out.push({ key: this.keys[slot]!, score: 1 - dist });
    }
    return out;
  }

  /** The graph as bytes (without the vectors, which the database holds). */
  serialize(): Uint8Array {
    const upperFlat: number[] = [];
    for (const [slot, lists] of this.upper) {
      upperFlat.push(slot, lists.length);
      for (const list of lists) upperFlat.push(list.length, ...list);
    }
    const header = new Float64Array([1, this.dims, this.size, this.entry, this.top, upperFlat.length]);
    const parts: ArrayBufferView[] = [
      header,
      this.keys.subarray(0, this.size),
      new Int32Array(this.links0.subarray(0, this.size * this.m0)),
      new Int32Array(upperFlat),
      this.removed.subarray(0, this.size),
      this.levels.subarray(0, this.size),
      this.counts0.subarray(0, this.size),
    ];
    const total = parts.reduce((n, p) => n + p.byteLength, 0);
    const out = new Uint8Array(total);
    let at = 0;
    for (const p of parts) {
      out.set(new Uint8Array(p.buffer, p.byteOffset, p.byteLength), at);
      at += p.byteLength;
    }
    return out;
  }

  /**
   * A graph read back from {@linkcode serialize}, with the vectors from `vectorOf`; a key it does not know becomes
   * a tombstone. Null when the bytes are not such a graph of these dimensions.
   */
  static deserialize(
    bytes: Uint8Array,
    dims: number,
    vectorOf: (key: number) => Float32Array | undefined,
  ): Hnsw | null {
    if (bytes.byteLength < 48) return null;
    const copy = bytes.slice().buffer;
    const header = new Float64Array(copy, 0, 6);
    const [format, d, size, entry, top, upperLength] = header as unknown as number[];
    if (format !== 1 || d !== dims || !Number.isSafeInteger(size) || !Number.isSafeInteger(upperLength)) {
      return null;
    }
    if (bytes.byteLength !== 48 + size! * (8 + 32 * 4 + 3) + upperLength! * 4) return null;
    const index = new Hnsw(dims);
    index.grow(Math.max(16, size!));
    let at = 48;
    const keys = new Float64Array(copy, at, size!);
    at += size! * 8;
    index.links0.set(new Int32Array(copy, at, size! * index.m0));
    at += size! * index.m0 * 4;
    const upperFlat = new Int32Array(copy, at, upperLength!);
    at += upperLength! * 4;
    index.removed.set(new Uint8Array(copy, at, size!));
    at += size!;
    index.levels.set(new Uint8Array(copy, at, size!));
    at += size!;
    index.counts0.set(new Uint8Array(copy, at, size!));
    index.keys.set(keys);
    for (let i = 0; i < upperFlat.length;) {
      const slot = upperFlat[i++]!;
      const lists: number[][] = [];
      for (let n = upperFlat[i++]!; n > 0; n--) {
        const len = upperFlat[i++]!;
        lists.push(Array.from(upperFlat.subarray(i, i + len)));
        i += len;
      }
      index.upper.set(slot, lists);
    }
    index.size = size!;
    index.entry = entry!;
    index.top = top!;
    for (let slot = 0; slot < size!; slot++) {
      const vector = index.removed[slot] ? undefined : vectorOf(keys[slot]!);
      if (vector && vector.length === dims) {
        index.vectors.set(vector, slot * dims);
        index.slots.set(keys[slot]!, slot);
      } else {
        index.removed[slot] = 1;
        index.tombstones++;
      }
    }
    return index;
  }

  private randomLevel(): number {
    // xorshift: deterministic levels make a rebuild from the same rows give the same graph.
    this.seed ^= this.seed << 13;
    this.seed ^= this.seed >>> 17;
    this.seed ^= this.seed << 5;
    const r = ((this.seed >>> 0) + 1) / 2 ** 32;
    return Math.min(15, Math.floor(-Math.log(r) / Math.log(this.m)));
  }

  private grow(capacity: number): void {
    const grown = <T extends Float32Array | Float64Array | Int32Array | Uint8Array | Uint32Array>(
      old: T,
      make: (n: number) => T,
      per: number,
    ) => {
      const next = make(capacity * per);
      next.set(old);
      return next;
    };
    this.vectors = grown(this.vectors, (n) => new Float32Array(n), this.dims);
    this.keys = grown(this.keys, (n) => new Float64Array(n), 1);
    this.removed = grown(this.removed, (n) => new Uint8Array(n), 1);
    this.levels = grown(this.levels, (n) => new Uint8Array(n), 1);
    this.links0 = grown(this.links0, (n) => new Int32Array(n), this.m0);
    this.counts0 = grown(this.counts0, (n) => new Uint8Array(n), 1);
    this.visited = new Uint32Array(capacity);
    this.visitMark = 0;
    this.capacity = capacity;
  }

  private allocate(key: number, vector: Float32Array, level: number): number {
    if (this.size === this.capacity) this.grow(Math.max(1024, this.capacity * 2));
    const slot = this.size++;
    this.vectors.set(vector, slot * this.dims);
    this.keys[slot] = key;
    this.levels[slot] = level;
    if (level > 0) this.upper.set(slot, Array.from({ length: level }, () => []));
    this.slots.set(key, slot);
    return slot;
  }

  private connect(slot: number): void {
    const level = this.levels[slot]!;
    if (this.entry < 0) {
      this.entry = slot;
      this.top = level;
      return;
    }
    const query = this.vectors.subarray(slot * this.dims, (slot + 1) * this.dims);
    let current = this.entry;
    let currentDist = this.distanceTo(query, current);
    for (let l = this.top; l > level; l--) {
      [current, currentDist] = this.greedy(query, current, currentDist, l);
    }
    for (let l = Math.min(level, this.top); l >= 0; l--) {
      const found = this.searchLayer(query, current, currentDist, this.efConstruction, l, false);
      const max = l === 0 ? this.m0 : this.m;
      const chosen = this.selectNeighbours(found, this.m);
      this.setLinks(slot, l, chosen.map(([, s]) => s));
      for (const [, neighbour] of chosen) this.link(neighbour, slot, l, max);
      [currentDist, current] = found[0]!;
    }
    if (level > this.top) {
      this.entry = slot;
      this.top = level;
    }
  }

  /** Links `from` → `to` at `level`; a full list keeps its nearest (cheaper than the heuristic, as good here). */
  private link(from: number, to: number, level: number, max: number): void {
    const list = this.linksOf(from, level);
    if (list.length < max) {
      this.setLinks(from, level, [...list, to]);
      return;
    }
    const base = this.vectors.subarray(from * this.dims, (from + 1) * this.dims);
    const candidates: [number, number][] = [...list, to].map((s) => [this.distanceTo(base, s), s]);
    candidates.sort((a, b) => a[0] - b[0]);
    this.setLinks(from, level, candidates.slice(0, max).map(([, s]) => s));
  }

  /** The heuristic: keep a candidate only when it is closer to the base than to every one already kept. */
  private selectNeighbours(sorted: [number, number][], max: number): [number, number][] {
    const kept: [number, number][] = [];
    for (const candidate of sorted) {
      if (kept.length >= max) break;
      const v = this.vectors.subarray(candidate[1] * this.dims, (candidate[1] + 1) * this.dims);
      if (kept.every(([, s]) => this.distanceTo(v, s) > candidate[0])) kept.push(candidate);
    }
    // Fill up with the nearest pruned ones: a sparse neighbourhood hurts recall more than a redundant link.
    for (const candidate of sorted) {
      if (kept.length >= Math.min(max, sorted.length)) break;
      if (!kept.includes(candidate)) kept.push(candidate);
    }
    return kept;
  }

  private linksOf(slot: number, level: number): number[] {
    if (level > 0) return this.upper.get(slot)![level - 1]!;
    const n = this.counts0[slot]!;
    return Array.from(this.links0.subarray(slot * this.m0, slot * this.m0 + n));
  }

  private setLinks(slot: number, level: number, list: number[]): void {
    if (level > 0) {
      this.upper.get(slot)![level - 1] = list;
      return;
    }
    this.links0.set(list, slot * this.m0);
    this.counts0[slot] = list.length;
  }

  private greedy(query: Float32Array, start: number, startDist: number, level: number): [number, number] {
    let current = start;
    let currentDist = startDist;
    for (let changed = true; changed;) {
      changed = false;
      for (const next of this.linksOf(current, level)) {
        const d = this.distanceTo(query, next);
        if (d < currentDist) {
          currentDist = d;
          current = next;
          changed = true;
        }
      }
    }
    return [current, currentDist];
  }

  /** The `ef` nearest found from `start` at `level`, nearest first (`liveOnly`: tombstones route, not return). */
  private searchLayer(
    query: Float32Array,
    start: number,
    startDist: number,
    ef: number,
    level: number,
    liveOnly: boolean,
  ): [number, number][] {
    if (++this.visitMark === 0xffffffff) {
      this.visited.fill(0);
      this.visitMark = 1;
    }
    const mark = this.visitMark;
    this.visited[start] = mark;
    const candidates = new Heap(false);
    const results = new Heap(true);
    candidates.push(startDist, start);
    if (!liveOnly || !this.removed[start]) results.push(startDist, start);
    while (candidates.length > 0) {
      const [dist, slot] = candidates.pop();
      if (results.length >= ef && dist > results.peekKey()) break;
      const base = slot * this.m0;
      const links = level === 0 ? null : this.upper.get(slot)![level - 1]!;
      const n = level === 0 ? this.counts0[slot]! : links!.length;
      for (let i = 0; i < n; i++) {
        const next = level === 0 ? this.links0[base + i]! : links![i]!;
        if (this.visited[next] === mark) continue;
        this.visited[next] = mark;
        const d = this.distanceTo(query, next);
        if (results.length < ef || d < results.peekKey()) {
          candidates.push(d, next);
          if (!liveOnly || !this.removed[next]) {
            results.push(d, next);
            if (results.length > ef) results.pop();
          }
        }
      }
    }
    return results.drainAscending();
  }

  private distanceTo(query: Float32Array, slot: number): number {
    const v = this.vectors;
    const n = query.length;
    const base = slot * this.dims;
    let a = 0, b = 0, c = 0, d = 0, i = 0;
    for (; i + 3 < n; i += 4) {
      a += query[i]! * v[base + i]!;
      b += query[i + 1]! * v[base + i + 1]!;
      c += query[i + 2]! * v[base + i + 2]!;
      d += query[i + 3]! * v[base + i + 3]!;
    }
    for (; i < n; i++) a += query[i]! * v[base + i]!;
    return 1 - (a + b + c + d);
  }
}

/** A binary heap of (key, value) pairs: a min-heap, or a max-heap when `max`. */
class Heap {
  private readonly keys: number[] = [];
  private readonly values: number[] = [];
  constructor(private readonly max: boolean) {}

  get length(): number {
    return this.keys.length;
  }

  peekKey(): number {
    return this.keys[0]!;
  }

  push(key: number, value: number): void {
    const keys = this.keys;
    const values = this.values;
    let i = keys.length;
    keys.push(key);
    values.push(value);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(key, keys[parent]!)) break;
      keys[i] = keys[parent]!;
      values[i] = values[parent]!;
      i = parent;
    }
    keys[i] = key;
    values[i] = value;
  }

  pop(): [number, number] {
    const keys = this.keys;
    const values = this.values;
    const top: [number, number] = [keys[0]!, values[0]!];
    const lastKey = keys.pop()!;
    const lastValue = values.pop()!;
    const n = keys.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        let child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && this.before(keys[child + 1]!, keys[child]!)) child++;
        if (!this.before(keys[child]!, lastKey)) break;
        keys[i] = keys[child]!;
        values[i] = values[child]!;
        i = child;
      }
      keys[i] = lastKey;
      values[i] = lastValue;
    }
    return top;
  }

  /** Every pair, smallest key first (empties the heap). */
  drainAscending(): [number, number][] {
    const out: [number, number][] = [];
    while (this.length > 0) out.push(this.pop());
    if (this.max) out.reverse();
    return out;
  }

  private before(a: number, b: number): boolean {
    return this.max ? a > b : a < b;
  }
}
