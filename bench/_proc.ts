/** What the benchmarks read about a process tree from /proc: its processes, resident memory and CPU time. */

/** `pid` and every process below it. */
export async function processTree(pid: number): Promise<number[]> {
  const children = new Map<number, number[]>();
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const ppid = Number(statFields(await Deno.readTextFile(`/proc/${entry.name}/stat`))[1]);
      children.set(ppid, [...children.get(ppid) ?? [], Number(entry.name)]);
    } catch { /* gone meanwhile */ }
  }
  const out: number[] = [];
  const visit = (p: number) => {
    out.push(p);
    for (const child of children.get(p) ?? []) visit(child);
  };
  visit(pid);
  return out;
}

/** The fields of /proc/<pid>/stat after the command name: [state, ppid, …] (field 3 of proc(5) is index 0). */
function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/** The resident memory, in bytes, of `pid` and every process below it. */
export async function treeRss(pid: number): Promise<{ bytes: number; processes: number }> {
  let bytes = 0;
  let processes = 0;
  for (const p of await processTree(pid)) {
    try {
      const status = await Deno.readTextFile(`/proc/${p}/status`);
      bytes += Number(status.match(/VmRSS:\s+(\d+) kB/)?.[1] ?? 0) * 1024;
      processes++;
    } catch { /* gone meanwhile */ }
  }
  return { bytes, processes };
}

/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on Linux). */
const TICKS_PER_SEC = 100;

/**
 * The CPU time, in milliseconds, that `pid` and every live process below it have used (user + system, with
 * the waited-for children of each). A child that exited without being waited for is not counted.
 */
export async function treeCpuMs(pid: number): Promise<number> {
  let ticks = 0;
  for (const p of await processTree(pid)) {
    try {
      const f = statFields(await Deno.readTextFile(`/proc/${p}/stat`));
      // utime, stime, cutime, cstime are fields 14–17 of proc(5): indexes 11–14 here.
      ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    } catch { /* gone meanwhile */ }
  }
  return ticks * 1000 / TICKS_PER_SEC;
}

/** The CPU time, in milliseconds, that process `pid` itself has used (user + system, all its threads). */
export async function processCpuMs(pid: number): Promise<number> {
  const f = statFields(await Deno.readTextFile(`/proc/${pid}/stat`));
  return (Number(f[11]) + Number(f[12])) * 1000 / TICKS_PER_SEC;
}

/**
 * The CPU time, in milliseconds, of each thread of process `pid`, summed by thread name (`comm`): where a
 * process's time goes between its main thread, its workers and the runtime's own threads.
 */
export async function threadCpuMs(pid: number): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for await (const entry of Deno.readDir(`/proc/${pid}/task`)) {
    try {
      const stat = await Deno.readTextFile(`/proc/${pid}/task/${entry.name}/stat`);
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const f = statFields(stat);
      out.set(name, (out.get(name) ?? 0) + (Number(f[11]) + Number(f[12])) * 1000 / TICKS_PER_SEC);
    } catch { /* gone meanwhile */ }
  }
  return out;
}

/** The webhook receiver of the notification benchmarks (bench/_receiver.ts), in its own process. */
export interface Receiver {
  /** Its origin, `http://127.0.0.1:<port>`. */
  url: string;
  stop(): Promise<void>;
}

/** Starts bench/_receiver.ts in a process of its own, as a real webhook endpoint runs. */
export async function spawnReceiver(): Promise<Receiver> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-net", new URL("./_receiver.ts", import.meta.url).pathname],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const port = Number((await reader.read()).value?.trim());
  reader.releaseLock();
  return {
    url: `http://127.0.0.1:${port}`,
    async stop() {
      child.kill("SIGTERM");
      await child.status;
      await child.stdout.cancel().catch(() => {});
    },
  };
}
