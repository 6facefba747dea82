/** Options of {@linkcode bundleClient}. */
export interface BundleOptions {
  /** Leave `@supabase/postgrest-js` out of the bundle (to measure the client's own size). */
  withoutPostgrest?: boolean;
}

/** Bundles client/mod.ts for browsers with `deno bundle` (minified ES module) and returns the code. */
export function bundleClient(options: BundleOptions = {}): Promise<string> {
  const external = options.withoutPostgrest ? ["@supabase/postgrest-js"] : [];
  return bundleForBrowser(new URL("../client/mod.ts", import.meta.url).pathname, external);
}

/** Bundles the module at `entry` for browsers with `deno bundle` (minified ES module) and returns the code. */
export async function bundleForBrowser(entry: string, external: string[] = []): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "client-bundle-" });
  const out = `${dir}/bundle.js`;
  try {
    const args = ["bundle", "--quiet", "--platform=browser", "--format=esm", "--minify", `--output=${out}`];
    for (const name of external) args.push(`--external=${name}`);
    args.push(entry);
    // A liveness bound, not a timing claim: a bundler that never ends is killed (SIGTERM) and the caller fails.
    const signal = AbortSignal.timeout(180_000);
    const result = await new Deno.Command(Deno.execPath(), { args, stdout: "piped", stderr: "piped", signal })
      .output();
    if (!result.success) throw new Error(`deno bundle failed:\n${new TextDecoder().decode(result.stderr)}`);
    return await Deno.readTextFile(out);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** The gzipped size of `code` in bytes. */
export async function gzippedSize(code: string): Promise<number> {
  const stream = new Blob([code]).stream().pipeThrough(new CompressionStream("gzip"));
  return (await new Response(stream).arrayBuffer()).byteLength;
}
