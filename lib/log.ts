/** Log levels in increasing severity. */
export type LogLevel = "debug" | "info" | "warn" | "error";

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };
let threshold = RANK.info;

/** Sets the lowest level that is written. */
export function setLogLevel(level: LogLevel): void {
  threshold = RANK[level];
}

/** Fields attached to a log line. Never put a secret, a password, SQL or a stack here. */
export type LogFields = Record<string, string | number | boolean | null | undefined>;

function write(level: LogLevel, msg: string, fields?: LogFields): void {
  if (RANK[level] < threshold) return;
  const line = JSON.stringify({ t: new Date().toISOString(), level, msg, ...fields });
  if (level === "error" || level === "warn") console.error(line);
  else console.log(line);
}

/** log writes one JSON line per event to stdout (debug, info) or stderr (warn, error). */
export const log = {
  debug: (msg: string, fields?: LogFields) => write("debug", msg, fields),
  info: (msg: string, fields?: LogFields) => write("info", msg, fields),
  warn: (msg: string, fields?: LogFields) => write("warn", msg, fields),
  error: (msg: string, fields?: LogFields) => write("error", msg, fields),
};

/** Describes an error for a log line without its stack or any message that may carry SQL or values. */
export function describeError(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return typeof code === "string" ? `${err.name} ${code}` : err.name;
  }
  return typeof err;
}
