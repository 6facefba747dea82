import type { WorkBus } from "../lib/work_queue.ts";
import type { Db } from "./driver.ts";

/** The channel of work announcements between instances sharing one PostgreSQL (workers/work_pull.ts). */
export const WORK_CHANNEL = "platform_work";

/**
 * The work announcements of instances sharing one PostgreSQL: `NOTIFY` on the control database, which every
 * instance shares (tenants' SQL runs in the project databases, whose notifications do not reach it).
 */
export function workBus(control: Db): WorkBus {
  return {
    async announce(payloads) {
      await control.query("select pg_notify($1, p) from unnest($2::text[]) as p", [WORK_CHANNEL, payloads]);
    },
    listen: (onPayload) => control.listen(WORK_CHANNEL, onPayload),
  };
}
