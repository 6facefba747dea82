import type { Databases } from "../../db/databases.ts";
import type { Queryable } from "../../db/driver.ts";
import { AppError } from "../../lib/errors.ts";
import { evaluateExpression } from "./cel.ts";
import type { Page } from "./queries.ts";
import { rulesFor } from "./rules.ts";
import type { NotificationService } from "./service.ts";

/** Rules-engine event statuses. */
export const EVENT_STATUSES = ["received", "matched", "ignored", "failed", "enqueued"] as const;

/** A rules-engine event. */
export interface EventRow {
  id: string;
  type: string;
  data: unknown;
  status: typeof EVENT_STATUSES[number];
  reason: string | null;
  rule_ids: string[];
  notification_ids: string[];
  received_at: Date;
  matched_at: Date | null;
  ignored_at: Date | null;
  enqueued_at: Date | null;
  failed_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS =
  `id, type, data, status, reason, rule_ids, notification_ids, received_at, matched_at, ignored_at,
  enqueued_at, failed_at, created_at, updated_at`;

/** Lists events, newest first. */
export async function listEvents(
  db: Queryable,
  f: Page & { status?: typeof EVENT_STATUSES[number] },
): Promise<EventRow[]> {
  return await db.query<EventRow>(
    `select ${COLUMNS} from notifications.events where ($1::text is null or status = $1)
      order by created_at desc, id limit $2 offset $3`,
    [f.status ?? null, f.limit, f.offset],
  );
}

function reasonOf(err: unknown): string {
  if (err instanceof AppError) return err.message;
  return err instanceof Error ? err.message : String(err);
}

/**
 * Ingests one event: `received`, then each enabled rule of its type is evaluated (CEL over `event`).
 * No rule matches → `ignored`; matches → `matched`, then each match sends (with the rule's delay) →
 * `enqueued`; a condition, a recipient expression or a send that fails → `failed` with the reason.
 */
export async function ingestEvent(
  dbs: Databases,
  notifications: NotificationService,
  ref: string,
  input: { type: string; data: unknown },
): Promise<EventRow> {
  const db = await dbs.project(ref);
  const [received] = await db.query<{ id: string }>(
    `insert into notifications.events (type, data, status) values ($1, $2::text::jsonb, 'received') returning id`,
    [input.type, JSON.stringify(input.data ?? {})],
  );
  const id = received!.id;
  const event = { type: input.type, data: input.data ?? {} };
  const rules = await rulesFor(db, input.type);
  const failures: string[] = [];
  const matched: typeof rules = [];
  for (const rule of rules) {
    try {
      const verdict = evaluateExpression(rule.condition, event);
      if (typeof verdict !== "boolean") throw new Error("condition did not return a bool");
      if (verdict) matched.push(rule);
    } catch (err) {
      failures.push(`Rule "${rule.name}": condition failed: ${reasonOf(err)}`);
    }
  }
  if (matched.length > 0) {
    await db.query(
      `update notifications.events set status = 'matched', matched_at = now(), rule_ids = $2::uuid[],
              updated_at = now() where id = $1`,
      [id, matched.map((r) => r.id)],
    );
  }
  const sent: string[] = [];
  for (const rule of matched) {
    try {
      const recipient = evaluateExpression(rule.recipient_expr, event);
      if (typeof recipient !== "string" || recipient === "") {
        throw new Error("recipient_expr did not return a string");
      }
      const variables = { event, data: event.data as Record<string, unknown> };
      const notification = await notifications.send(ref, {
        channel: rule.channel,
        recipient,
        templateId: rule.template_id ?? undefined,
        subject: rule.subject ?? undefined,
        body: rule.body ?? undefined,
        variables: rule.template_id || rule.body || rule.subject ? variables : undefined,
        event: rule.channel === "webhook" ? input.type : undefined,
        payload: rule.channel === "webhook" ? event.data : undefined,
        idempotencyKey: `event:${id}:rule:${rule.id}`,
      }, { ruleId: rule.id, eventId: id, delaySecs: rule.delay_secs });
      sent.push(notification.id);
    } catch (err) {
      failures.push(`Rule "${rule.name}": ${reasonOf(err)}`);
    }
  }
  const status = failures.length > 0 ? "failed" : matched.length > 0 ? "enqueued" : "ignored";
  const [row] = await db.query<EventRow>(
    `update notifications.events
        set status = $2, reason = $3, notification_ids = $4::uuid[], updated_at = now(),
            ignored_at = case when $2 = 'ignored' then now() end,
            enqueued_at = case when $2 = 'enqueued' or cardinality($4::uuid[]) > 0 then now() end,
            failed_at = case when $2 = 'failed' then now() end
      where id = $1 returning ${COLUMNS}`,
    [id, status, failures.length > 0 ? failures.join("; ").slice(0, 2000) : null, sent],
  );
  return row!;
}
