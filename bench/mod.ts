// `deno task bench`: runs every benchmark in its own process, one after the other (they must not share the CPU).
import { requireWrk } from "./wrk.ts";

await requireWrk();
const only = Deno.args;
const benches = [
  "foundation.ts",
  "data.ts",
  "functions.ts",
  "jobs.ts",
  "cluster.ts",
  "alerts.ts",
  "realtime.ts",
  "notifications.ts",
  "ai.ts",
  "client.ts",
  "footprint.ts",
  "function_hosts.ts",
  "pglite_reopen.ts",
];
for (const file of benches) {
  if (only.length > 0 && !only.some((name) => file.startsWith(name))) continue;
  console.log(`\n=== bench/${file}`);
  const status = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      "--unstable-kv",
      "--unstable-worker-options",
      "--unstable-no-legacy-abort",
      new URL(file, import.meta.url).pathname,
    ],
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (!status.success) console.log(`bench/${file} failed with exit code ${status.code}`);
}
