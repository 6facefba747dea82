import { errors } from "../../lib/errors.ts";
import type { Channel } from "./providers/provider.ts";
import { checkTemplate, renderTemplate } from "./render.ts";
import type { Queryable } from "../../db/driver.ts";
import {
  deleteTemplateRow,
  findTemplate,
  insertTemplate,
  type Template,
  updateTemplateRow,
} from "./store.ts";

export { listTemplates, type Template } from "./store.ts";

/** A template by id, or 404. */
export async function getTemplate(db: Queryable, id: string): Promise<Template> {
  const row = await findTemplate(db, id);
  if (!row) throw errors.notFound(`Template "${id}" does not exist`);
  return row;
}

/** Creates a template after checking that its subject and body parse. */
export async function createTemplate(
  db: Queryable,
  input: { name: string; channel: Channel; subject?: string | null; body: string },
): Promise<Template> {
  if (input.subject) await checkTemplate("subject", input.subject);
  await checkTemplate("body", input.body);
  return await insertTemplate(db, input);
}

/** Updates name, subject and body (only those given). */
export async function updateTemplate(
  db: Queryable,
  id: string,
  input: { name?: string; subject?: string | null; body?: string },
): Promise<Template> {
  if (input.subject) await checkTemplate("subject", input.subject);
  if (input.body !== undefined) await checkTemplate("body", input.body);
  const row = await updateTemplateRow(db, id, input);
  if (!row) throw errors.notFound(`Template "${id}" does not exist`);
  return row;
}

/** Deletes a template, or 404. */
export async function deleteTemplate(db: Queryable, id: string): Promise<void> {
  if (!await deleteTemplateRow(db, id)) throw errors.notFound(`Template "${id}" does not exist`);
}

/** Renders a template's subject and body with `variables`. */
export async function renderWith(
  template: Pick<Template, "subject" | "body">,
  variables: Record<string, unknown>,
): Promise<{ subject: string | null; body: string }> {
  return {
    subject: template.subject ? await renderTemplate("subject", template.subject, variables) : null,
    body: await renderTemplate("body", template.body, variables),
  };
}
