import { restErrors } from "../../lib/rest_errors.ts";

/** The `Prefer` header of a data request (PostgREST semantics). */
export interface Preferences {
  return?: "minimal" | "headers-only" | "representation";
  count?: "exact" | "planned" | "estimated";
  resolution?: "merge-duplicates" | "ignore-duplicates";
  missing?: "default" | "null";
  handling?: "strict" | "lenient";
  maxAffected?: number;
  tx?: "commit" | "rollback";
  /** `timezone=<name>`: the transaction's `timezone` (one `pg_timezone_names` lists, else not applied). */
  timezone?: string;
  /** RPC: `single-object` passes the whole body as the function's one json/jsonb parameter. */
  params?: "single-object";
  /** Preferences PostgREST does not know (PGRST122 under `handling=strict`). */
  invalid: string[];
}

const VALUES: Record<string, readonly string[]> = {
  resolution: ["merge-duplicates", "ignore-duplicates"],
  return: ["representation", "minimal", "headers-only"],
  count: ["exact", "planned", "estimated"],
  tx: ["commit", "rollback"],
  missing: ["default", "null"],
  handling: ["strict", "lenient"],
  params: ["single-object"],
};

/**
 * Parses the `Prefer` header(s), comma-separated, as PostgREST does: the first value of each kind wins, and a
 * preference that is not one of the known `key=value` pairs is kept aside as invalid.
 */
export function parsePrefer(header: string | null | undefined): Preferences {
  const out: Record<string, unknown> & { invalid: string[] } = { invalid: [] };
  if (!header) return out as Preferences;
  for (const raw of header.split(",")) {
    const part = raw.trim();
    const eq = part.indexOf("=");
    const key = eq < 0 ? part : part.slice(0, eq);
    const value = eq < 0 ? "" : part.slice(eq + 1);
    if (key === "max-affected") {
      if (out.maxAffected === undefined && /^-?\d{1,18}$/.test(value)) out.maxAffected = Number(value);
    } else if (key === "timezone" && eq >= 0) {
      out.timezone ??= value;
    } else if (VALUES[key]?.includes(value)) {
      if (out[key] === undefined) out[key] = value;
    } else {
      out.invalid.push(part);
    }
  }
  return out as Preferences;
}

/** The operation whose `Preference-Applied` is written: each lists only the preferences it honours. */
export type PreferenceTarget = "read" | "insert" | "upsert" | "update" | "delete" | "call";

/**
 * `Preference-Applied` in PostgREST's order: resolution, missing, return, count, tx, handling, timezone,
 * max-affected.
 * `resolution` only on an insert into a table with a key (or `on_conflict`); `return` only on writes;
 * `missing` on inserts and updates; `max-affected` (with `handling=strict`) on updates, deletes and calls.
 */
export function appliedPreferences(p: Preferences, target: PreferenceTarget, insertHasKey = true): string[] {
  const write = target !== "read" && target !== "call";
  const out: string[] = [];
  if (p.resolution && target === "insert" && insertHasKey) out.push(`resolution=${p.resolution}`);
  if (p.missing && (target === "insert" || target === "update")) out.push(`missing=${p.missing}`);
  if (p.return && write) out.push(`return=${p.return}`);
  if (p.count) out.push(`count=${p.count}`);
  if (p.tx) out.push(`tx=${p.tx}`);
  if (p.handling) out.push(`handling=${p.handling}`);
  if (p.timezone !== undefined) out.push(`timezone=${p.timezone}`);
  if (p.params && target === "call") out.push(`params=${p.params}`);
  if (
    p.handling === "strict" && p.maxAffected !== undefined &&
    (target === "update" || target === "delete" || target === "call")
  ) out.push(`max-affected=${p.maxAffected}`);
  return out;
}

/** PGRST122 when `handling=strict` comes with preferences PostgREST does not know. */
export function checkStrict(p: Preferences): void {
  if (p.handling === "strict" && p.invalid.length > 0) throw restErrors.invalidPreferences(p.invalid);
}
