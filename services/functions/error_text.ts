// The function's module URL (a blob: URL, runtime/worker.ts), and any data: URL, which holds a whole source.
const MODULE_URL =
  /blob:[^\s/]*\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|data:application\/(?:typescript|javascript);base64,[A-Za-z0-9+/=]+/g;
const PLATFORM_PATH = /file:\/\/\/[^\s:)]+/g;
const MAX_LENGTH = 2000;

/**
 * The text of a function's failure as its callers and its log may see it: the function's module URL becomes
 * `<function>`, keeping line and column (a data: URL would also show its whole source); the platform's own
 * file paths become `<runtime>`; the text is bounded.
 */
export function publicErrorText(message: string): string {
  const text = message.replace(MODULE_URL, "<function>").replace(PLATFORM_PATH, "<runtime>");
  return text.length > MAX_LENGTH ? `${text.slice(0, MAX_LENGTH)}…` : text;
}
