import { FuzzySet } from "../../lib/fuzzy.ts";
import { type RelationshipCandidate, restErrors } from "../../lib/rest_errors.ts";
import type { ComputedRelationship, SchemaCache } from "./schema.ts";

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
}

/** PostgREST's cardinalities, in the order of its constructors (which its sort follows). */
const CARDINALITIES = ["O2M", "M2O", "O2O", "M2M"] as const;
type Cardinality = typeof CARDINALITIES[number];

/** A many-to-many's junction: its foreign keys to the source and to the target, with their column pairs. */
interface Junction {
  table: string;
  constraint1: string;
  constraint2: string;
  /** [source column, junction column] */
  colsSource: [string, string][];
  /** [target column, junction column] */
  colsTarget: [string, string][];
}

/** A relationship as PostgREST's schema cache holds it (SchemaCache/Relationship.hs), one per direction. */
interface CachedRelationship {
  table: string;
  foreignTable: string;
  isSelf: boolean;
  cardinality: Cardinality;
  /** The foreign key's name; empty for a many-to-many. */
  constraint: string;
  /** [table column, foreign table column] */
  columns: [string, string][];
  /** One-to-one only: `table` is the referenced side. */
  isParent: boolean;
  junction?: Junction;
  tableIsView: boolean;
  foreignTableIsView: boolean;
}

const CARDINALITY_NAMES: Record<Cardinality, RelationshipCandidate["cardinality"]> = {
  O2M: "one-to-many",
  M2O: "many-to-one",
  O2O: "one-to-one",
  M2M: "many-to-many",
};

const zip = (a: string[], b: string[]): [string, string][] => a.map((x, i) => [x, b[i]!]);
const swap = (pairs: [string, string][]): [string, string][] => pairs.map(([a, b]) => [b, a]);

/**
 * The relationships of the schema's tables and views, by table, as PostgREST builds them (SchemaCache.hs):
 * each foreign key is many-to-one, or one-to-one when its columns are a key (views carry the key of the table
 * they show); a junction whose two different foreign keys are all in its primary key joins its two targets;
 * then every one-way relationship gets its inverse. Computed relationships replace those to a table of their name.
 */
function buildRelationships(cache: SchemaCache): Map<string, CachedRelationship[]> {
  const isView = (table: string) => cache.tables.get(table)?.kind === "view";
  const direct: CachedRelationship[] = cache.foreignKeys.map((fk) => ({
    table: fk.table,
    foreignTable: fk.refTable,
    isSelf: fk.table === fk.refTable,
    cardinality: fk.oneToOne ? "O2O" : "M2O",
    constraint: fk.name,
    columns: zip(fk.columns, fk.refColumns),
    isParent: false,
    tableIsView: isView(fk.table),
    foreignTableIsView: isView(fk.refTable),
  }));
  const all = [...direct, ...manyToMany(cache, direct), ...inverses(direct)];
  const byTable = new Map<string, CachedRelationship[]>();
  for (const rel of all) {
    if (overridden(cache.computedRelationships ?? [], rel)) continue;
    byTable.set(rel.table, [...byTable.get(rel.table) ?? [], rel]);
  }
  for (const list of byTable.values()) list.sort(compareRelationships);
  return byTable;
}

/** PostgREST's addM2MRels: two different many-to-one keys of one table, all their columns in its primary key. */
function manyToMany(cache: SchemaCache, direct: CachedRelationship[]): CachedRelationship[] {
  const out: CachedRelationship[] = [];
  const manyToOne = direct.filter((r) => r.cardinality === "M2O");
  for (const toSource of manyToOne) {
    const key = new Set(cache.tables.get(toSource.table)?.primaryKey ?? []);
    for (const toTarget of manyToOne) {
      if (toTarget.table !== toSource.table || toTarget.constraint === toSource.constraint) continue;
      const columns = [...toSource.columns, ...toTarget.columns].map(([junctionColumn]) => junctionColumn);
      if (!columns.every((c) => key.has(c))) continue;
      out.push({
        table: toSource.foreignTable,
        foreignTable: toTarget.foreignTable,
        isSelf: toSource.foreignTable === toTarget.foreignTable,
        cardinality: "M2M",
        constraint: "",
        columns: [],
        isParent: false,
        junction: {
          table: toSource.table,
          constraint1: toSource.constraint,
          constraint2: toTarget.constraint,
          colsSource: swap(toSource.columns),
          colsTarget: swap(toTarget.columns),
        },
        tableIsView: toSource.foreignTableIsView,
        foreignTableIsView: toTarget.foreignTableIsView,
      });
    }
  }
  return out;
}

/** PostgREST's addInverseRels: many-to-one seen from the other side is one-to-many; one-to-one stays one. */
function inverses(direct: CachedRelationship[]): CachedRelationship[] {
  return direct.map((r) => ({
    ...r,
    table: r.foreignTable,
    foreignTable: r.table,
    cardinality: r.cardinality === "M2O" ? "O2M" : "O2O",
    columns: swap(r.columns),
    isParent: r.cardinality === "O2O" ? !r.isParent : false,
    tableIsView: r.foreignTableIsView,
    foreignTableIsView: r.tableIsView,
  }));
}

/** A function of the table's row named like the foreign table takes its place (getOverrideRelationshipsMap). */
function overridden(computed: ComputedRelationship[], rel: CachedRelationship): boolean {
  return computed.some((c) => c.table === rel.table && c.function === rel.foreignTable);
}

function compareText(a: string, b: string): number {
  return a === b ? 0 : a < b ? -1 : 1;
}

function comparePairs(a: [string, string][], b: [string, string][]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const c = compareText(a[i]![0], b[i]![0]) || compareText(a[i]![1], b[i]![1]);
    if (c !== 0) return c;
  }
  return a.length - b.length;
}

function compareJunctions(a: Junction | undefined, b: Junction | undefined): number {
  if (!a || !b) return 0;
  return compareText(a.table, b.table) || compareText(a.constraint1, b.constraint1) ||
    compareText(a.constraint2, b.constraint2) || comparePairs(a.colsSource, b.colsSource) ||
    comparePairs(a.colsTarget, b.colsTarget);
}

/** PostgREST's derived `Ord` of relationships, the order of its PGRST201 candidates. */
function compareRelationships(a: CachedRelationship, b: CachedRelationship): number {
  return compareText(a.table, b.table) || compareText(a.foreignTable, b.foreignTable) ||
    Number(a.isSelf) - Number(b.isSelf) ||
    CARDINALITIES.indexOf(a.cardinality) - CARDINALITIES.indexOf(b.cardinality) ||
    compareText(a.constraint, b.constraint) || comparePairs(a.columns, b.columns) ||
    Number(a.isParent) - Number(b.isParent) || compareJunctions(a.junction, b.junction) ||
    Number(a.tableIsView) - Number(b.tableIsView) ||
    Number(a.foreignTableIsView) - Number(b.foreignTableIsView);
}

/** Built once per schema cache (a new cache is a new object). */
const built = new WeakMap<SchemaCache, Map<string, CachedRelationship[]>>();

function relationshipsByTable(cache: SchemaCache): Map<string, CachedRelationship[]> {
  let byTable = built.get(cache);
  if (!byTable) built.set(cache, byTable = buildRelationships(cache));
  return byTable;
}

function relationshipsOf(cache: SchemaCache, table: string): CachedRelationship[] {
  return relationshipsByTable(cache).get(table) ?? [];
}

function tablesWithRelationships(cache: SchemaCache): Set<string> {
  const computed = (cache.computedRelationships ?? []).map((c) => c.table);
  return new Set([...relationshipsByTable(cache).keys(), ...computed, ...cache.internalJunctionEnds ?? []]);
}

/** The foreign key's single column on the origin's side (PostgREST's matchFKSingleCol). */
function singleColumn(rel: CachedRelationship): string | undefined {
  return rel.columns.length === 1 ? rel.columns[0]![0] : undefined;
}

/** The foreign key's single column on the target's side (matchFKRefSingleCol). */
function singleRefColumn(rel: CachedRelationship): string | undefined {
  return rel.columns.length === 1 ? rel.columns[0]![1] : undefined;
}

/** PostgREST v14's findRel filter (Plan.hs): which relationships of the origin `target` and `hint` name. */
function matches(rel: CachedRelationship, target: string, hint: string | undefined): boolean {
  const direct = rel.cardinality !== "M2M";
  if (rel.isSelf) {
    // One foreign key, two relationships: the table's name is the one-to-many (children), the column the
    // many-to-one (parent); a hint names the referenced column of the one-to-many.
    if (hint === undefined) {
      return (target === rel.foreignTable && rel.cardinality === "O2M") ||
        (rel.cardinality === "M2O" && singleColumn(rel) === target);
    }
    return target === rel.foreignTable && rel.cardinality === "O2M" && singleRefColumn(rel) === hint;
  }
  if (hint === undefined) {
    // By constraint or column the target is a table, never a view (PostgREST issue 2277).
    return target === rel.foreignTable ||
      (direct && !rel.foreignTableIsView && (rel.constraint === target || singleColumn(rel) === target));
  }
  return target === rel.foreignTable && (
    (direct && (rel.constraint === hint || singleColumn(rel) === hint || singleRefColumn(rel) === hint)) ||
    rel.junction?.table === hint
  );
}

/** The relationship the compiler embeds through. */
function embedding(rel: CachedRelationship): Relationship {
  const junction = rel.junction;
  return {
    target: rel.foreignTable,
    toOne: rel.cardinality === "M2O" || rel.cardinality === "O2O",
    pairs: rel.columns,
    ...(junction
      ? {
        junction: {
          table: junction.table,
          toParent: junction.colsSource,
          toTarget: swap(junction.colsTarget),
        },
      }
      : {}),
    name: junction ? `${junction.table}(${junction.constraint1},${junction.constraint2})` : rel.constraint,
    candidate: candidate(rel),
  };
}

const list = (cols: string[]) => `(${cols.join(", ")})`;

/** How PGRST201 shows a candidate (Error.hs compressedRel, relHint). */
function candidate(rel: CachedRelationship): RelationshipCandidate {
  const j = rel.junction;
  const relationship = j
    ? `${j.table} using ${j.constraint1}${list(j.colsSource.map((p) => p[1]))} and ${j.constraint2}${
      list(j.colsTarget.map((p) => p[1]))
    }`
    : `${rel.constraint} using ${rel.table}${list(rel.columns.map((p) => p[0]))} and ${rel.foreignTable}${
      list(rel.columns.map((p) => p[1]))
    }`;
  return {
    cardinality: CARDINALITY_NAMES[rel.cardinality],
    embedding: `${rel.table} with ${rel.foreignTable}`,
    relationship,
    hint: j ? j.table : rel.constraint,
  };
}

function computedEmbedding(parent: string, computed: ComputedRelationship): Relationship {
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

/**
 * PostgREST's "Perhaps you meant …" for PGRST200 (Error.hs noRelBetweenHint): a close name among the parent's
 * related tables, or when the parent has no relationship, a close name among the tables that have one.
 */
function relationshipSuggestion(cache: SchemaCache, parent: string, name: string): string | undefined {
  const computed = (cache.computedRelationships ?? []).filter((c) => c.table === parent);
  const related = [
    ...relationshipsOf(cache, parent).map((r) => r.foreignTable),
    ...computed.map((c) => c.target),
  ];
  // A table whose relationships go through a junction that is not exposed has none here, but still is a parent.
  if (related.length > 0 || cache.internalJunctionEnds?.includes(parent)) {
    const child = new FuzzySet(related).get(name).find(([score]) => score < 1)?.[1];
    return child === undefined ? undefined : `Perhaps you meant '${child}' instead of '${name}'.`;
  }
  const other = new FuzzySet(tablesWithRelationships(cache)).getOne(parent);
  return other === undefined ? undefined : `Perhaps you meant '${other}' instead of '${parent}'.`;
}

/**
 * Finds the relationship through which `parent` embeds `name` (a table, a foreign key name or a foreign key
 * column), narrowed by `hint` (a foreign key name, a column or a junction table), by PostgREST v14's findRel.
 * None is PGRST200; several are PGRST201, listed in PostgREST's order.
 */
export function resolveRelationship(
  cache: SchemaCache,
  parent: string,
  name: string,
  hint: string | undefined,
): Relationship {
  const found = relationshipsOf(cache, parent).filter((rel) => matches(rel, name, hint)).map(embedding);
  // A function of the parent's row named `name` embeds its rows (sorted after the foreign keys, as there).
  const computed = cache.computedRelationships?.find((c) => c.table === parent && c.function === name);
  if (computed) found.push(computedEmbedding(parent, computed));
  if (found.length === 0) {
    throw restErrors.noRelationship(
      parent,
      name,
      hint,
      cache.schema,
      relationshipSuggestion(cache, parent, name),
    );
  }
  if (found.length > 1) throw restErrors.ambiguous(name, found.map((r) => r.candidate));
  return found[0]!;
}
