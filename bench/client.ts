/**
 * Client SDK benchmark: its weight in a browser. client/mod.ts bundled by `deno bundle` (browser platform,
 * minified ES module) and gzipped, without @supabase/postgrest-js (the target: at most 40 KB) and with it.
 *
 *   deno run -A bench/client.ts
 */
import { bundleClient, gzippedSize } from "../tests/client_bundle.ts";

const TARGET_BYTES = 40 * 1024;
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

const own = await bundleClient({ withoutPostgrest: true });
const full = await bundleClient();
const ownGzip = await gzippedSize(own);
const fullGzip = await gzippedSize(full);
console.log(`client bundle without postgrest-js: ${kb(own.length)} minified, ${kb(ownGzip)} gzipped`);
console.log(`client bundle with postgrest-js:    ${kb(full.length)} minified, ${kb(fullGzip)} gzipped`);
console.log(
  `gzipped without postgrest-js / target ${kb(TARGET_BYTES)}: ${(ownGzip / TARGET_BYTES).toFixed(2)} ` +
    (ownGzip <= TARGET_BYTES ? "(within the target)" : "(OVER the target)"),
);
