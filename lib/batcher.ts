/** Options of a {@linkcode Batcher}. */
export interface BatcherOptions {
  /** Inputs per batch at most. */
  max: number;
  /** Batches of one key in flight at once at most (1 suits a single connection; a pool takes a few). */
  parallel: number;
}

interface Queue<I, R> {
  inputs: I[];
  waiters: PromiseWithResolvers<R>[];
  inFlight: number;
}

/**
 * Batcher groups calls of one key into one call of `run` (one statement, one round trip and one commit for
 * many items). A call goes at once when a slot is free; calls made while the slots are busy wait and go
 * together when one frees: alone at low load, in large batches under load, with no timer adding latency.
 * `run` returns one result per input, in order (a promise fails only its own call); when it throws, every
 * call of that batch rejects.
 */
export class Batcher<I, R> {
  private readonly queues = new Map<string, Queue<I, R>>();

  constructor(
    private readonly run: (key: string, inputs: I[]) => Promise<(R | Promise<R>)[]>,
    private readonly options: BatcherOptions,
  ) {}

  /** Adds an input to the key's next batch; resolves with its result. */
  call(key: string, input: I): Promise<R> {
    let queue = this.queues.get(key);
    if (!queue) this.queues.set(key, queue = { inputs: [], waiters: [], inFlight: 0 });
    const waiter = Promise.withResolvers<R>();
    queue.inputs.push(input);
    queue.waiters.push(waiter);
    if (queue.inFlight < this.options.parallel) {
      queue.inFlight++;
      // After the current task: calls made in the same turn (a message's items) share the batch.
      queueMicrotask(() => void this.drain(key, queue));
    }
    return waiter.promise;
  }

  /** Runs batches in one slot until the key's queue is empty, then frees the slot. */
  private async drain(key: string, queue: Queue<I, R>): Promise<void> {
    while (queue.inputs.length > 0) {
      const inputs = queue.inputs.splice(0, this.options.max);
      const waiters = queue.waiters.splice(0, inputs.length);
      try {
        const results = await this.run(key, inputs);
        waiters.forEach((w, i) => w.resolve(results[i]!));
      } catch (err) {
        waiters.forEach((w) => w.reject(err));
      }
    }
    queue.inFlight--;
    if (queue.inFlight === 0 && queue.inputs.length === 0) this.queues.delete(key);
  }
}
