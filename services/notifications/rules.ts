import type { Queryable } from "../../db/driver.ts";
import { errors } from "../../lib/errors.ts";
import { checkExpression } from "./cel.ts";
import type { Channel } from "./providers/provider.ts";
import { checkTemplate } from "./render.ts";

/** A notification rule (docs/notifications.md). */
export interface Rule {
  id: string;
  name: string;
  trigger_type: string;
  condition: string;
  channel: Channel;
  recipient_expr: string;
  template_id: string | null;
  subject: string | null;
  body: string | null;
  delay_secs: number;
  enabled: boolean;
  created_at: Date;
  updated_at: Date;
}

/** The fields of a rule a client sets. */
export type RuleInput = Omit<Rule, "id" | "created_at" | "updated_at">;

const COLUMNS =
  `id, name, trigger_type, condition, channel, recipient_expr, template_id, subject, body, delay_secs,
  enabled, created_at, updated_at`;

async function validate(db: Queryable, rule: RuleInput): Promise<void> {
  checkExpression("condition", rule.condition, "bool");
  checkExpression("recipient_expr", rule.recipient_expr, "string");
  if (rule.subject) checkTemplate("subject", rule.subject);
  if (rule.body) checkTemplate("body", rule.body);
  if (rule.template_id) {
    const [t] = await db.query<{ channel: string }>(
      "select channel from notifications.templates where id = $1",
      [rule.template_id],
    );
    if (!t) throw errors.validation(`template_id: template "${rule.template_id}" does not exist`);
    if (t.channel !== rule.channel) {
      throw errors.validation(
        `template_id: the template is for channel "${t.channel}", not "${rule.channel}"`,
      );
    }
  } else if (!rule.body && rule.channel !== "webhook") {
    throw errors.validation("A rule needs a template_id or a body");
  }
}

/** Lists rules, newest first. */
export async function listRules(db: Queryable): Promise<Rule[]> {
  return await db.query<Rule>(`select ${COLUMNS} from notifications.rules order by created_at desc, id`);
}

/** A rule by id, or 404. */
export async function getRule(db: Queryable, id: string): Promise<Rule> {
  const [row] = await db.query<Rule>(`select ${COLUMNS} from notifications.rules where id = $1`, [id]);
  if (!row) throw errors.notFound(`Rule "${id}" does not exist`);
  return row;
}

/** The enabled rules of an event type. */
export async function rulesFor(db: Queryable, type: string): Promise<Rule[]> {
  return await db.query<Rule>(
    `select ${COLUMNS} from notifications.rules where trigger_type = $1 and enabled order by created_at, id`,
    [type],
  );
}

/** Creates a rule after type-checking its CEL expressions (400 if invalid). */
export async function createRule(db: Queryable, input: RuleInput): Promise<Rule> {
  await validate(db, input);
  const [row] = await db.query<Rule>(
    `insert into notifications.rules (name, trigger_type, condition, channel, recipient_expr, template_id, subject,
       body, delay_secs, enabled)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) returning ${COLUMNS}`,
    [
      input.name,
      input.trigger_type,
      input.condition,
      input.channel,
      input.recipient_expr,
      input.template_id,
      input.subject,
      input.body,
      input.delay_secs,
      input.enabled,
    ],
  );
  return row!;
}

/** Changes only the fields given, then re-validates the whole rule. */
export async function updateRule(db: Queryable, id: string, patch: Partial<RuleInput>): Promise<Rule> {
  const current = await getRule(db, id);
  const next: RuleInput = {
    ...current,
    ...Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)),
  };
  await validate(db, next);
  const [row] = await db.query<Rule>(
    `update notifications.rules
        set name = $2, trigger_type = $3, condition = $4, channel = $5, recipient_expr = $6, template_id = $7,
            subject = $8, body = $9, delay_secs = $10, enabled = $11, updated_at = now()
      where id = $1 returning ${COLUMNS}`,
    [
      id,
      next.name,
      next.trigger_type,
      next.condition,
      next.channel,
      next.recipient_expr,
      next.template_id,
      next.subject,
      next.body,
      next.delay_secs,
      next.enabled,
    ],
  );
  if (!row) throw errors.notFound(`Rule "${id}" does not exist`);
  return row;
}

/** Deletes a rule, or 404. */
export async function deleteRule(db: Queryable, id: string): Promise<void> {
  const rows = await db.query(`delete from notifications.rules where id = $1 returning id`, [id]);
  if (rows.length === 0) throw errors.notFound(`Rule "${id}" does not exist`);
}
