import { dictionary } from "@zxcvbn-ts/language-common";
import { normalizePassword } from "./normalize_password.ts";

/**
 * The text of common_passwords.txt: zxcvbn's common passwords (leaked-password corpora) of at least `minLength`
 * characters, normalized, sorted, one per line. The platform reads the file rather than the package: the
 * package decompresses all 49,000 entries into strings that stay in the heap (about 7 MB); the file's 18,000
 * lines cost a tenth of that. `deno task passwords` (cli/passwords.ts) writes it; a test checks it matches the package.
 */
export function commonPasswordsText(minLength: number): string {
  const list = new Set(
    dictionary["passwords-common"].map(normalizePassword).filter((p) => p.length >= minLength),
  );
  return [...list].sort().join("\n") + "\n";
}
