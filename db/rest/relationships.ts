import { restErrors } from "../../lib/rest_errors.ts";
import type { ForeignKey, SchemaCache } from "./schema.ts";

/** How an embedded resource is reached from its parent. */
export interface Relationship {
  /** The embedded table. */
  target: string;
  /** True when at most one row is embedded (an object), false for an array. */
  toOne: boolean;
  /** Pairs of [parent column, target column] that must be equal (direct foreign key). */
  pairs: [string, string][];
  /** For many-to-many: the junction table and its pairs to the parent and to the target. */
  junction?: { table: string; toParent: [string, string][]; toTarget: [string, string][] };
  /** The foreign key(s) used, for error messages. */
  name: string;
}

function isUnique(cache: SchemaCache, table: string, columns: string[]): boolean {
  const info = cache.tables.get(table);
  const set = [...columns].sort().join("\0");
  return info?.uniques.some((u) => [...u].sort().join("\0") === set) ?? false;
}

function zip(a: string[], b: string[]): [string, string][] {
  return a.map((x, i) => [x, b[i]!]);
}

function matchesHint(fk: ForeignKey, hint: string | undefined, side: "from" | "to"): boolean {
  if (hint === undefined) return true;
  if (fk.name === hint) return true;
  const cols = side === "from" ? fk.columns : fk.refColumns;
  return (cols.length === 1 && cols[0] === hint) || (fk.columns.length === 1 && fk.columns[0] === hint);
}

/**
 * Finds the relationship through which `parent` embeds `name` (a table, a foreign key name or a foreign key
 * column), narrowed by `hint` (a foreign key name, a column or a junction table). None is PGRST200; several
 * are PGRST201, as PostgREST answers.
 */
export function resolveRelationship(
  cache: SchemaCache,
  parent: string,
  name: string,
  hint: string | undefined,
): Relationship {
  const found: Relationship[] = [];
  const fks = cache.foreignKeys;
  if (cache.tables.has(name)) {
    for (const fk of fks) {
      if (fk.table === parent && fk.refTable === name && matchesHint(fk, hint, "from")) {
        found.push({ target: name, toOne: true, pairs: zip(fk.columns, fk.refColumns), name: fk.name });
      }
      if (fk.refTable === parent && fk.table === name && matchesHint(fk, hint, "to")) {
        // A self-reference already counted as many-to-one above is also one-to-many: both are candidates.
        found.push({
          target: name,
          toOne: isUnique(cache, name, fk.columns),
          pairs: zip(fk.refColumns, fk.columns),
          name: fk.name,
        });
      }
    }
    if (found.length === 0 || (hint !== undefined && found.length === 0)) {
      // Many-to-many through a junction table with a foreign key to each side.
      for (const toParent of fks) {
        if (toParent.refTable !== parent || toParent.table === parent || toParent.table === name) continue;
        if (hint !== undefined && hint !== toParent.table) continue;
        for (const toTarget of fks) {
          if (toTarget.table !== toParent.table || toTarget.refTable !== name || toTarget === toParent) {
            continue;
          }
          found.push({
            target: name,
            toOne: false,
            pairs: [],
            junction: {
              table: toParent.table,
              toParent: zip(toParent.refColumns, toParent.columns),
              toTarget: zip(toTarget.columns, toTarget.refColumns),
            },
            name: `${toParent.table}(${toParent.name},${toTarget.name})`,
          });
        }
      }
    }
  } else {
    for (const fk of fks) {
      const byName = fk.name === name;
      const byColumn = fk.columns.length === 1 && fk.columns[0] === name;
      if (fk.table === parent && (byName || byColumn)) {
        found.push({
          target: fk.refTable,
          toOne: true,
          pairs: zip(fk.columns, fk.refColumns),
          name: fk.name,
        });
      } else if (fk.refTable === parent && byName) {
        found.push({
          target: fk.table,
          toOne: isUnique(cache, fk.table, fk.columns),
          pairs: zip(fk.refColumns, fk.columns),
          name: fk.name,
        });
      }
    }
  }
  if (found.length === 0) throw restErrors.noRelationship(parent, name);
  if (found.length > 1) throw restErrors.ambiguous(parent, name, found.map((r) => r.name));
  return found[0]!;
}
