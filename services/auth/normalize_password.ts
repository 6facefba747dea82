/** A password as the common-password check compares it: NFKC, trimmed, lower case. */
export function normalizePassword(password: string): string {
  return password.normalize("NFKC").trim().toLowerCase();
}
