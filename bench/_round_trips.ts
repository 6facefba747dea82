/**
 * Counts the calls a database handle makes (benchmarks only): each `query`, `exec`, `execRows` and `pipeline` is
 * one round trip; a `transaction` counts its BEGIN and its COMMIT besides the statements run in it.
 */
import type { Db, Queryable } from "../db/driver.ts";

/** A running count of round trips, by what made them. */
export interface RoundTrips {
  total: number;
  /** By the first words of the statement (`insert into notifications.messages`, `pipeline`, …). */
  bySql: Map<string, number>;
}

function label(sql: string): string {
  return sql.replace(/\s+/g, " ").trim().split(" ").slice(0, 4).join(" ");
}

function wrap(target: Queryable, counts: RoundTrips): void {
  const add = (what: string) => {
    counts.total++;
    counts.bySql.set(what, (counts.bySql.get(what) ?? 0) + 1);
  };
  const query = target.query.bind(target);
  const exec = target.exec.bind(target);
  const execRows = target.execRows.bind(target);
  target.query = (sql, params) => {
    add(label(sql));
    return query(sql, params);
  };
  target.exec = (sql) => {
    add(label(sql));
    return exec(sql);
  };
  target.execRows = (sql) => {
    add(label(sql));
    return execRows(sql);
  };
}

/** Makes `db` count its round trips into the returned counter (from now on, for the life of the handle). */
export function countRoundTrips(db: Db): RoundTrips {
  const counts: RoundTrips = { total: 0, bySql: new Map() };
  wrap(db, counts);
  const pipeline = db.pipeline.bind(db);
  const transaction = db.transaction.bind(db);
  db.pipeline = (statements, options) => {
    counts.total++;
    counts.bySql.set("pipeline", (counts.bySql.get("pipeline") ?? 0) + 1);
    return pipeline(statements, options);
  };
  db.transaction = (fn, options) => {
    counts.total += 2;
    counts.bySql.set("begin/commit", (counts.bySql.get("begin/commit") ?? 0) + 2);
    return transaction((tx) => {
      wrap(tx, counts);
      return fn(tx);
    }, options);
  };
  return counts;
}
