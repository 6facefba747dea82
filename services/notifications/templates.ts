import type { Queryable } from "../../db/driver.ts";
import { sqlState } from "../../db/driver.ts";
import { errors } from "../../lib/errors.ts";
import type { Channel } from "./providers/provider.ts";
import { checkTemplate, renderTemplate } from "./render.ts";

/** A notification template (docs/notifications.md). */
export interface Template {
  id: string;
  name: string;
  channel: Channel;
  subject: string | null;
  body: string;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = "id, name, channel, subject, body, created_at, updated_at";

function conflictOnName(err: unknown, name: string): never {
  if (sqlState(err) === "23505") throw errors.conflict(`A template named "${name}" already exists`);
  throw err;
}

/** Lists templates by name. */
export async function listTemplates(db: Queryable): Promise<Template[]> {
  return await db.query<Template>(`select ${COLUMNS} from notifications.templates order by name`);
}

/** A template by id, or 404. */
export async function getTemplate(db: Queryable, id: string): Promise<Template> {
  const [row] = await db.query<Template>(`select ${COLUMNS} from notifications.templates where id = $1`, [
    id,
  ]);
  if (!row) throw errors.notFound(`Template "${id}" does not exist`);
  return row;
}

/** Creates a template after checking that its subject and body parse. */
export async function createTemplate(
  db: Queryable,
  input: { name: string; channel: Channel; subject?: string | null; body: string },
): Promise<Template> {
  if (input.subject) checkTemplate("subject", input.subject);
  checkTemplate("body", input.body);
  try {
    const [row] = await db.query<Template>(
      `insert into notifications.templates (name, channel, subject, body) values ($1, $2, $3, $4)
       returning ${COLUMNS}`,
      [input.name, input.channel, input.subject ?? null, input.body],
    );
    return row!;
  } catch (err) {
    conflictOnName(err, input.name);
  }
}

/** Updates name, subject and body (only those given). */
export async function updateTemplate(
  db: Queryable,
  id: string,
  input: { name?: string; subject?: string | null; body?: string },
): Promise<Template> {
  if (input.subject) checkTemplate("subject", input.subject);
  if (input.body !== undefined) checkTemplate("body", input.body);
  try {
    const [row] = await db.query<Template>(
      `update notifications.templates
          set name = coalesce($2, name),
              subject = case when $3::boolean then $4 else subject end,
              body = coalesce($5, body),
              updated_at = now()
        where id = $1 returning ${COLUMNS}`,
      [id, input.name ?? null, input.subject !== undefined, input.subject ?? null, input.body ?? null],
    );
    if (!row) throw errors.notFound(`Template "${id}" does not exist`);
    return row;
  } catch (err) {
    conflictOnName(err, input.name ?? "");
  }
}

/** Deletes a template, or 404. */
export async function deleteTemplate(db: Queryable, id: string): Promise<void> {
  const rows = await db.query(`delete from notifications.templates where id = $1 returning id`, [id]);
  if (rows.length === 0) throw errors.notFound(`Template "${id}" does not exist`);
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
