const MODULE_URL = /data:application\/(?:typescript|javascript);base64,[A-Za-z0-9+/=]+/g;
const PLATFORM_PATH = /file:\/\/\/[^\s:)]+/g;
const MAX_LENGTH = 2000;

/**
 * The text of a function's failure as its callers and its log may see it: the function's module (loaded from a
 * `data:` URL that holds its whole source) becomes `<function>`, keeping line and column; the platform's own
 * file paths become `<runtime>`; the text is bounded.
 */
export function publicErrorText(message: string): string {
  const text = message.replace(MODULE_URL, "<function>").replace(PLATFORM_PATH, "<runtime>");
  return text.length > MAX_LENGTH ? `${text.slice(0, MAX_LENGTH)}…` : text;
}
