import type { Queryable } from "../../db/driver.ts";
import { errors } from "../../lib/errors.ts";
import { checkExpression } from "./cel.ts";
import { checkTemplate } from "./render.ts";
import {
  deleteRuleRow,
  findRule,
  insertRule,
  type Rule,
  type RuleInput,
  templateChannel,
  updateRuleRow,
} from "./store.ts";

export { listRules, type Rule, type RuleInput, rulesFor } from "./store.ts";

async function validate(db: Queryable, rule: RuleInput): Promise<void> {
  await checkExpression("condition", rule.condition, "bool");
  await checkExpression("recipient_expr", rule.recipient_expr, "string");
  if (rule.subject) await checkTemplate("subject", rule.subject);
  if (rule.body) await checkTemplate("body", rule.body);
  if (rule.template_id) {
    const channel = await templateChannel(db, rule.template_id);
    if (!channel) throw errors.validation(`template_id: template "${rule.template_id}" does not exist`);
    if (channel !== rule.channel) {
      throw errors.validation(
        `template_id: the template is for channel "${channel}", not "${rule.channel}"`,
      );
    }
  } else if (!rule.body && rule.channel !== "webhook") {
    throw errors.validation("A rule needs a template_id or a body");
  }
}

/** A rule by id, or 404. */
export async function getRule(db: Queryable, id: string): Promise<Rule> {
  const row = await findRule(db, id);
  if (!row) throw errors.notFound(`Rule "${id}" does not exist`);
  return row;
}

/** Creates a rule after type-checking its CEL expressions (400 if invalid). */
export async function createRule(db: Queryable, input: RuleInput): Promise<Rule> {
  await validate(db, input);
  return await insertRule(db, input);
}

/** Changes only the fields given, then re-validates the whole rule. */
export async function updateRule(db: Queryable, id: string, patch: Partial<RuleInput>): Promise<Rule> {
  const current = await getRule(db, id);
  const next: RuleInput = {
    ...current,
    ...Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)),
  };
  await validate(db, next);
  const row = await updateRuleRow(db, id, next);
  if (!row) throw errors.notFound(`Rule "${id}" does not exist`);
  return row;
}

/** Deletes a rule, or 404. */
export async function deleteRule(db: Queryable, id: string): Promise<void> {
  if (!await deleteRuleRow(db, id)) throw errors.notFound(`Rule "${id}" does not exist`);
}
