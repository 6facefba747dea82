import { PlatformError } from "../client/mod.ts";
import { serve, type Server } from "../lib/serve.ts";
import { type StartOptions, startPlatform, type TestPlatform, within } from "./harness.ts";

/** A platform listening on a real port, for the client SDK's end-to-end tests. */
export interface ServedPlatform {
  p: TestPlatform;
  server: Server;
  url: string;
  close(options?: { keepSandbox?: boolean }): Promise<void>;
}

/** Starts a platform (see startPlatform) and serves it on 127.0.0.1, on `port` or a free one. */
export async function servePlatform(
  env: Record<string, string> = {},
  options: StartOptions & { port?: number } = {},
): Promise<ServedPlatform> {
  const p = await startPlatform(env, options);
  const server = serve({ hostname: "127.0.0.1", port: options.port ?? 0, idleTimeoutMs: 30_000 }, p.handler);
  return {
    p,
    server,
    url: `http://127.0.0.1:${server.addr.port}`,
    async close(closeOptions = {}) {
      try {
        // A liveness bound: a stream a test left open would hold the shutdown forever.
        await within(server.shutdown(), 60_000, "the server's shutdown (a stream left open?)");
      } finally {
        await p.close(closeOptions);
      }
    },
  };
}

/** The PlatformError `fn` rejects with; fails when it resolves or throws anything else. */
export async function rejects(fn: () => Promise<unknown>): Promise<PlatformError> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof PlatformError) return err;
    throw new Error(`Expected a PlatformError, got ${err}`);
  }
  throw new Error("Expected a PlatformError, but the call resolved");
}
