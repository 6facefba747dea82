/** What a process has used: CPU time (all its threads) and private resident memory (ArrayBuffers and wasm too). */
interface ProcessUsage {
  cpuMs: number;
  privateMb: number;
}

const RSS_ANON = /^RssAnon:\s+(\d+) kB/m;

/**
 * The usage of process `pid` from /proc (Linux), or null when it is gone or /proc cannot be read. Private memory
 * is RssAnon: the Deno binary's pages, shared by every host, are left out.
 */
export function processUsage(pid: number): ProcessUsage | null {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    // The fields after the command name (which may hold spaces): utime and stime are the 12th and 13th, in clock
    // ticks of 10 ms (USER_HZ, 100 on every Linux).
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const anonKb = RSS_ANON.exec(Deno.readTextFileSync(`/proc/${pid}/status`))?.[1];
    return {
      cpuMs: (Number(fields[11]) + Number(fields[12])) * 10,
      privateMb: anonKb === undefined ? 0 : Number(anonKb) / 1024,
    };
  } catch {
    return null;
  }
}
