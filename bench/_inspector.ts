/**
 * A benchmark's window into another Deno process started with `--inspect`: force a full GC and read
 * `Deno.memoryUsage()` there, so that memory is compared after garbage is gone rather than whenever V8 chose to
 * collect.
 */

/** What `Deno.memoryUsage()` reports, in bytes. */
export interface MemoryUsage {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
}

export class Inspector {
  private next = 0;
  private readonly waiting = new Map<number, (result: unknown) => void>();
  private constructor(private readonly socket: WebSocket) {
    socket.onmessage = (e) => {
      const m = JSON.parse(e.data as string) as { id?: number; result?: unknown };
      if (m.id !== undefined) this.waiting.get(m.id)?.(m.result);
      this.waiting.delete(m.id!);
    };
  }

  /** Connects to the `ws://…` address a process printed after "Debugger listening on". */
  static connect(url: string): Promise<Inspector> {
    const socket = new WebSocket(url);
    return new Promise((resolve, reject) => {
      socket.onopen = () => resolve(new Inspector(socket));
      socket.onerror = () => reject(new Error(`inspector at ${url} refused the connection`));
    });
  }

  private call(method: string, params: Record<string, unknown> = {}): Promise<unknown> {
    const id = ++this.next;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.socket.send(JSON.stringify({ id, method, params }));
    });
  }

  /** A full, compacting collection, twice (the first one's finalizers may free more). */
  async gc(): Promise<void> {
    await this.call("HeapProfiler.collectGarbage");
    await this.call("HeapProfiler.collectGarbage");
  }

  async memory(): Promise<MemoryUsage> {
    const result = await this.call("Runtime.evaluate", {
      expression: "JSON.stringify(Deno.memoryUsage())",
      returnByValue: true,
    }) as { result: { value: string } };
    return JSON.parse(result.result.value);
  }

  close(): void {
    this.socket.close();
  }
}

/** The inspector address in a line of a process's stderr, if the line is the one that prints it. */
export function inspectorUrl(line: string): string | undefined {
  return line.match(/Debugger listening on (ws:\/\/\S+)/)?.[1];
}

/** A Deno process started with `--inspect`, connected to. */
export interface InspectedProcess {
  process: Deno.ChildProcess;
  /** The port it printed. */
  port: number;
  inspector: Inspector;
  /** Every line it printed (stdout and stderr). */
  output: string[];
  stop(): Promise<void>;
}

/**
 * Runs `deno run --inspect=127.0.0.1:0 <args>` and waits for the inspector and for a line of its output that
 * `portOf` reads a port from.
 */
export async function spawnInspected(
  args: string[],
  env: Record<string, string>,
  portOf: (line: string) => string | undefined,
): Promise<InspectedProcess> {
  const process = new Deno.Command(Deno.execPath(), {
    args: ["run", "--inspect=127.0.0.1:0", ...args],
    env,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output: string[] = [];
  const port = Promise.withResolvers<number>();
  const inspector = Promise.withResolvers<string>();
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    let buffered = "";
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      const lines = (buffered + chunk).split("\n");
      buffered = lines.pop()!;
      for (const line of lines) {
        output.push(line);
        const url = inspectorUrl(line);
        if (url) inspector.resolve(url);
        const p = portOf(line);
        if (p) port.resolve(Number(p));
      }
    }
  };
  const pumps = Promise.all([pump(process.stdout), pump(process.stderr)]);
  const exited = process.status.then((s) => {
    const failure = new Error(`${args.at(-1)} exited with ${s.code}:\n${output.join("\n")}`);
    port.reject(failure);
    inspector.reject(failure);
  });
  const timer = setTimeout(() => port.reject(new Error(`${args.at(-1)} did not listen in 60 s`)), 60_000);
  const [bound, url] = await Promise.all([port.promise, inspector.promise]).finally(() =>
    clearTimeout(timer)
  );
  const session = await Inspector.connect(url);
  return {
    process,
    port: bound,
    inspector: session,
    output,
    async stop() {
      session.close();
      try {
        process.kill("SIGTERM");
      } catch { /* already gone */ }
      await exited;
      await pumps;
    },
  };
}
