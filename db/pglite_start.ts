import { PGlite } from "@electric-sql/pglite";

/** PGlite's start parameters with `settings` added (`-c name=value` each, after PGlite's own). */
export function startParams(settings: Record<string, string>): string[] {
  return [
    ...PGlite.defaultStartParams,
    ...Object.entries(settings).flatMap(([name, value]) => ["-c", `${name}=${value}`]),
  ];
}
