/** How bench/bare_server.ts answers: see that file. */
export type BareMode = "sync" | "async" | "floor";

/** A running bare server and how to stop it. */
export interface Bare {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  stop(): Promise<void>;
}

/** Starts bench/bare_server.ts answering `body` in `mode`. */
export async function startBare(body: string, mode: BareMode = "sync"): Promise<Bare> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-net", "--allow-env", new URL("./bare_server.ts", import.meta.url).pathname],
    env: { BODY: body, MODE: mode },
    stdout: "piped",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const port = (await reader.read()).value!.match(/listening (\d+)/)![1];
  reader.releaseLock();
  return {
    origin: `http://127.0.0.1:${port}`,
    async stop() {
      try {
        child.kill("SIGTERM");
        await child.status;
      } catch { /* gone */ }
    },
  };
}
