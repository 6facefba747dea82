/**
 * CallRing holds the calls in flight by id, for ids handed out one after another: a slot array indexed by the
 * id's low bits, doubled when a slot is still taken. Unlike a Map it allocates nothing per call (a Map's table
 * is rebuilt as entries come and go under load, and a rebuilt table that reached the old generation keeps the
 * entries it held alive through the next scavenges).
 */
export class CallRing<T extends { id: number }> {
  private slots: (T | undefined)[];
  private mask: number;
  size = 0;

  constructor(capacity = 64) {
    let n = 1;
    while (n < capacity) n *= 2;
    this.slots = new Array(n).fill(undefined);
    this.mask = n - 1;
  }

  get(id: number): T | undefined {
    const call = this.slots[id & this.mask];
    return call !== undefined && call.id === id ? call : undefined;
  }

  /** Adds a call; its id must not be in the ring already. */
  add(call: T): void {
    while (this.slots[call.id & this.mask] !== undefined) this.grow();
    this.slots[call.id & this.mask] = call;
    this.size++;
  }

  /** Removes the call `id`; false when it is not there. */
  delete(id: number): boolean {
    const at = id & this.mask;
    const call = this.slots[at];
    if (call === undefined || call.id !== id) return false;
    this.slots[at] = undefined;
    this.size--;
    return true;
  }

  /** The calls held now (a copy: the caller may delete while it goes through them). */
  list(): T[] {
    return this.slots.filter((c): c is T => c !== undefined);
  }

  private grow(): void {
    const old = this.slots;
    this.slots = new Array(old.length * 2).fill(undefined);
    this.mask = this.slots.length - 1;
    for (const call of old) if (call !== undefined) this.slots[call.id & this.mask] = call;
  }
}
