/**
 * CallRing holds the calls in flight by id, for ids handed out one after another: a fixed array of slots
 * indexed by the id's low bits, and a Map for the few calls whose slot is still taken by an older call (a slow
 * one). Unlike a Map alone it allocates nothing per call: a Map's table is rebuilt as entries come and go under
 * load, and a rebuilt table that reached the old generation keeps the entries it held alive through the next
 * scavenges. Its memory stays bounded by the calls in flight, however long one of them lasts.
 */
export class CallRing<T extends { id: number }> {
  private readonly slots: (T | undefined)[];
  private readonly mask: number;
  private readonly overflow = new Map<number, T>();
  size = 0;

  /** `capacity`: slots, rounded up to a power of two. */
  constructor(capacity = 1024) {
    let n = 1;
    while (n < capacity) n *= 2;
    this.slots = new Array(n).fill(undefined);
    this.mask = n - 1;
  }

  get(id: number): T | undefined {
    const call = this.slots[id & this.mask];
    if (call !== undefined && call.id === id) return call;
    return this.overflow.size > 0 ? this.overflow.get(id) : undefined;
  }

  /** Adds a call; throws when its id is in the ring already. */
  add(call: T): void {
    if (this.get(call.id) !== undefined) throw new Error(`Call ${call.id} is in flight already`);
    const at = call.id & this.mask;
    if (this.slots[at] === undefined) this.slots[at] = call;
    else this.overflow.set(call.id, call);
    this.size++;
  }

  /** Removes the call `id`; false when it is not there. */
  delete(id: number): boolean {
    const at = id & this.mask;
    const call = this.slots[at];
    if (call !== undefined && call.id === id) this.slots[at] = undefined;
    else if (this.overflow.size === 0 || !this.overflow.delete(id)) return false;
    this.size--;
    return true;
  }

  /** True when `match` holds for one of the calls (without copying them). */
  some(match: (call: T) => boolean): boolean {
    if (this.size === 0) return false;
    for (const call of this.slots) if (call !== undefined && match(call)) return true;
    for (const call of this.overflow.values()) if (match(call)) return true;
    return false;
  }

  /** The calls held now (a copy: the caller may delete while it goes through them). */
  list(): T[] {
    if (this.size === 0) return [];
    const out = this.slots.filter((c): c is T => c !== undefined);
    for (const call of this.overflow.values()) out.push(call);
    return out;
  }
}
