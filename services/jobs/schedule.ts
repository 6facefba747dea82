import { Cron } from "croner";
import { errors } from "../../lib/errors.ts";

const NICKNAMES: Record<string, string> = {
  "@yearly": "0 0 0 1 1 *",
  "@annually": "0 0 0 1 1 *",
  "@monthly": "0 0 0 1 * *",
  "@weekly": "0 0 0 * * 0",
  "@daily": "0 0 0 * * *",
  "@midnight": "0 0 0 * * *",
  "@hourly": "0 0 * * * *",
};

/**
 * Normalizes a cron schedule to the stored 6-field form: 5 fields get seconds `0` prepended,
 * 6 fields (seconds first) are kept, nicknames (`@hourly`, `@daily`, `@weekly`, `@monthly`, `@yearly`) are
 * expanded. Every form is then checked by croner; anything else is a 400 that says why.
 */
export function normalizeSchedule(input: string): string {
  const trimmed = input.trim().replace(/\s+/g, " ");
  const nick = NICKNAMES[trimmed.toLowerCase()];
  let six: string;
  if (nick) six = nick;
  else {
    const fields = trimmed.split(" ").filter(Boolean);
    if (fields.length === 5) six = `0 ${fields.join(" ")}`;
    else if (fields.length === 6) six = fields.join(" ");
    else {
      throw errors.validation(
        `schedule: "${input.slice(0, 100)}" must have 5 fields, 6 fields (seconds first) or be a nickname ` +
          "(@hourly, @daily, @weekly, @monthly, @yearly)",
      );
    }
  }
  try {
    new Cron(six, { timezone: "UTC", paused: true }).stop();
  } catch (err) {
    const why = err instanceof Error ? err.message.replace(/^CronPattern: /, "") : "invalid";
    throw errors.validation(`schedule: "${input.slice(0, 100)}" is not a valid cron schedule: ${why}`);
  }
  return six;
}

/** The first run of a 6-field UTC schedule strictly after `after`, or null when it never runs again. */
export function nextRun(schedule: string, after: Date): Date | null {
  const cron = new Cron(schedule, { timezone: "UTC", paused: true });
  try {
    return cron.nextRun(after) ?? null;
  } finally {
    cron.stop();
  }
}
