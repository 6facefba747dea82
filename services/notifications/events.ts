import type { Databases } from "../../db/databases.ts";
import { AppError } from "../../lib/errors.ts";

export { EVENT_STATUSES, type EventRow, listEvents } from "./store.ts";
import { evaluateExpression } from "./cel.ts";
import { type EventRow, finishEvent, insertEvent, markEventMatched, rulesFor } from "./store.ts";
import type { NotificationService } from "./service.ts";

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
  const id = await insertEvent(db, input.type, input.data ?? {});
  const event = { type: input.type, data: input.data ?? {} };
  const rules = await rulesFor(db, input.type);
  const failures: string[] = [];
  const matched: typeof rules = [];
  for (const rule of rules) {
    try {
      const verdict = await evaluateExpression(rule.condition, event);
      if (typeof verdict !== "boolean") throw new Error("condition did not return a bool");
      if (verdict) matched.push(rule);
    } catch (err) {
      failures.push(`Rule "${rule.name}": condition failed: ${reasonOf(err)}`);
    }
  }
  if (matched.length > 0) {
    await markEventMatched(db, id, matched.map((r) => r.id));
  }
  const sent: string[] = [];
  for (const rule of matched) {
    try {
      const recipient = await evaluateExpression(rule.recipient_expr, event);
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
  return await finishEvent(db, id, {
    status,
    reason: failures.length > 0 ? failures.join("; ").slice(0, 2000) : null,
    notificationIds: sent,
  });
}
