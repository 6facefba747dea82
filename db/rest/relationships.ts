import { FuzzySet } from "../../lib/fuzzy.ts";
import { type RelationshipCandidate, restErrors } from "../../lib/rest_errors.ts";
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
  /** A computed relationship: the function of the parent's row that returns the target's rows. */
  computed?: string;
  /** The foreign key(s) used, for error messages. */
  name: string;
  /** How PGRST201 describes it when it is one of several candidates. */
  candidate: RelationshipCandidate;
  /** Where PGRST201 lists it among the candidates (see orderKey). */
  order?: string[];
}

/** PostgREST's order of its candidates: cardinality (its constructors' order), then constraint and columns. */
const CARDINALITY_ORDER = ["one-to-many", "many-to-one", "one-to-one", "many-to-many"];

/**
 * The key PostgREST sorts a table's relationships by (its derived `Ord`): the target, whether it is the table
 * itself, the cardinality, the constraint names (a junction table's first), the columns.
 */
function orderKey(
  parent: string,
  target: string,
  cardinality: string,
  names: string[],
  pairs: [string, string][],
) {
  const rank = String(CARDINALITY_ORDER.indexOf(cardinality));
  return [target, target === parent ? "1" : "0", rank, ...names, pairs.map((p) => p.join("\0")).join("\0")];
}

function compareKeys(a: string[], b: string[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
  }
  return a.length - b.length;
}

const list = (cols: string[]) => `(${cols.join(", ")})`;

/** A direct relationship through `fk`, seen from `parent` (many-to-one when `fk` is the parent's). */
function direct(cache: SchemaCache, parent: string, target: string, fk: ForeignKey, outward: boolean) {
  const pairs = outward ? zip(fk.columns, fk.refColumns) : zip(fk.refColumns, fk.columns);
  const unique = isUnique(cache, fk.table, fk.columns);
  const toOne = outward || unique;
  const cardinality = unique ? "one-to-one" : outward ? "many-to-one" : "one-to-many";
  const relationship = `${fk.name} using ${parent}${list(pairs.map((p) => p[0]))} and ${target}${
    list(pairs.map((p) => p[1]))
  }`;
  return {
    target,
    toOne,
    pairs,
    name: fk.name,
    candidate: { cardinality, embedding: `${parent} with ${target}`, relationship, hint: fk.name } as const,
    order: orderKey(parent, target, cardinality, [fk.name], pairs),
  };
}

/** The tables `table` has a relationship with (either direction, or through a junction table). */
function relatedTables(cache: SchemaCache, table: string): string[] {
  const out = new Set<string>();
  for (const fk of cache.foreignKeys) {
    if (fk.table === table) out.add(fk.refTable);
    if (fk.refTable === table) {
      out.add(fk.table);
      for (const other of cache.foreignKeys) {
        if (other.table === fk.table && other !== fk) out.add(other.refTable);
      }
    }
  }
  return [...out];
}

/** PostgREST's "Perhaps you meant …" for PGRST200: a close child name, or a close parent name. */
function relationshipSuggestion(cache: SchemaCache, parent: string, name: string): string | undefined {
  const related = relatedTables(cache, parent);
  if (related.length > 0) {
    const child = new FuzzySet(related).get(name).find(([score]) => score < 1)?.[1];
    return child === undefined ? undefined : `Perhaps you meant '${child}' instead of '${name}'.`;
  }
  const withRelationships = new Set<string>();
  for (const fk of cache.foreignKeys) withRelationships.add(fk.table).add(fk.refTable);
  const other = new FuzzySet(withRelationships).getOne(parent);
  return other === undefined ? undefined : `Perhaps you meant '${other}' instead of '${parent}'.`;
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
  // A function of the parent's row named `name` embeds its rows, ahead of any foreign key by that name.
  const computed = cache.computedRelationships?.find((c) => c.table === parent && c.function === name);
  if (computed) {
    return {
      target: computed.target,
      toOne: computed.toOne,
      pairs: [],
      computed: computed.function,
      name: computed.function,
      candidate: {
        cardinality: computed.toOne ? "many-to-one" : "one-to-many",
        embedding: `${parent} with ${computed.target}`,
        relationship: `${computed.function}(${parent})`,
        hint: computed.function,
      },
    };
  }
  const found: Relationship[] = [];
  const fks = cache.foreignKeys;
  if (cache.tables.has(name)) {
    for (const fk of fks) {
      if (fk.table === fk.refTable) {
        // A self-reference is two relationships, told apart as PostgREST does: by the table's name it is the
        // one-to-many (the children; a hint names the referencing column), by the column the many-to-one.
        const children = fk.table === parent && name === parent
          ? direct(cache, parent, name, fk, false)
          : null;
        const hinted = hint === undefined || (fk.columns.length === 1 && fk.columns[0] === hint);
        if (children?.candidate.cardinality === "one-to-many" && hinted) found.push(children);
        continue;
      }
      if (fk.table === parent && fk.refTable === name && matchesHint(fk, hint, "from")) {
        found.push(direct(cache, parent, name, fk, true));
      }
      if (fk.refTable === parent && fk.table === name && matchesHint(fk, hint, "to")) {
        // A self-reference already counted as many-to-one above is also one-to-many: both are candidates.
        found.push(direct(cache, parent, name, fk, false));
      }
    }
    // Many-to-many through a junction table with a foreign key to each side whose columns are all in its
    // primary key (PostgREST's rule); a candidate beside the direct ones, as there (several are PGRST201).
    for (const toParent of fks) {
      if (toParent.refTable !== parent || toParent.table === parent || toParent.table === name) continue;
      if (hint !== undefined && hint !== toParent.table) continue;
      const key = new Set(cache.tables.get(toParent.table)?.primaryKey ?? []);
      for (const toTarget of fks) {
        if (toTarget.table !== toParent.table || toTarget.refTable !== name || toTarget === toParent) {
          continue;
        }
        if (![...toParent.columns, ...toTarget.columns].every((c) => key.has(c))) continue;
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
          candidate: {
            cardinality: "many-to-many",
            embedding: `${parent} with ${name}`,
            relationship: `${toParent.table} using ${toParent.name}${
              list(toParent.columns)
            } and ${toTarget.name}${list(toTarget.columns)}`,
            hint: toParent.table,
          },
          order: orderKey(parent, name, "many-to-many", [toParent.table, toParent.name, toTarget.name], []),
        });
      }
    }
  } else {
    // By constraint or column name the embedded resource is a table, never a view that has the foreign key too
    // (PostgREST: "constraint/column-from-origin can only come from tables").
    const isView = (table: string) => cache.tables.get(table)?.kind === "view";
    for (const fk of fks) {
      const self = fk.table === fk.refTable;
      const byName = fk.name === name && !self;
      const byColumn = fk.columns.length === 1 && fk.columns[0] === name;
      if (self && fk.table === parent) {
        // The parent through a self-reference's column (`select=parent_id(*)`), never by the constraint's name.
        const parentRow = direct(cache, parent, fk.refTable, fk, true);
        if (byColumn && hint === undefined && parentRow.candidate.cardinality === "many-to-one") {
          found.push(parentRow);
        }
        continue;
      }
      if (fk.table === parent && (byName || byColumn) && !isView(fk.refTable)) {
        found.push(direct(cache, parent, fk.refTable, fk, true));
      } else if (fk.refTable === parent && byName && !isView(fk.table)) {
        found.push(direct(cache, parent, fk.table, fk, false));
      }
    }
  }
  if (found.length === 0) {
    throw restErrors.noRelationship(
      parent,
      name,
      hint,
      cache.schema,
      hint === undefined ? relationshipSuggestion(cache, parent, name) : undefined,
    );
  }
  if (found.length > 1) {
    const sorted = [...found].sort((a, b) => compareKeys(a.order ?? [], b.order ?? []));
    throw restErrors.ambiguous(name, sorted.map((r) => r.candidate));
  }
  return found[0]!;
}
