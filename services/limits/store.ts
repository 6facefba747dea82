import type { Queryable } from "../../db/driver.ts";

/**
 * The SQL of the shared rate limits' per-minute counts in the control database (`platform.invoke_rate_windows`,
 * named after its first user: every shared limit keeps its counts there, each under keys of its own scope).
 */
export const rateStore = {
  /** Adds counts to keys' minutes; returns each key's total of every instance, by 1-based position in `keys`. */
  async add(
    control: Queryable,
    keys: string[],
    starts: string[],
    counts: number[],
  ): Promise<Map<number, number>> {
    const rows = await control.query<{ k: number; count: string | number }>(
      `insert into platform.invoke_rate_windows as r (key, window_start, count)
       select key, start, n from unnest($1::text[], $2::timestamptz[], $3::int8[]) as u(key, start, n)
       on conflict (key, window_start) do update set count = r.count + excluded.count
       returning (array_position($1::text[], r.key)) as k, r.count`,
      [keys, starts, counts],
    );
    return new Map(rows.map((r) => [Number(r.k), Number(r.count)]));
  },

  /** Deletes the minutes that started before `before` (ISO time). */
  async prune(control: Queryable, before: string): Promise<void> {
    await control.query("delete from platform.invoke_rate_windows where window_start < $1::timestamptz", [
      before,
    ]);
  },
};
