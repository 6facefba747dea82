import commonPasswords from "./common_passwords.txt" with { type: "text" };
import { normalizePassword } from "./normalize_password.ts";

/** The shortest password accepted (the schemas of sign-up and ADMIN_PASSWORD check it). */
export const MIN_PASSWORD_LENGTH = 8;

// The common passwords of zxcvbn's list (leaked-password corpora, ranked) long enough to pass the length rule,
// from common_passwords.txt (written from the package: common_passwords.ts); compared trimmed and without case,
// so "Password " is refused as "password" is.
const COMMON = new Set(commonPasswords.split("\n").filter((p) => p !== ""));

/** The longest password accepted. */
export const MAX_PASSWORD_LENGTH = 1024;

/** The rule a refused password breaks, named as GoTrue names it (`weak_password.reasons`). */
export type PasswordRule = "length" | "characters" | "pwned";

/**
 * Why a new password of at least {@linkcode MIN_PASSWORD_LENGTH} characters (the schemas check the length) is
 * refused, or null when it is accepted: only whitespace, or one of the passwords attackers try first (as
 * Supabase's leaked-password protection refuses them).
 */
export function passwordProblem(password: string): string | null {
  const weakness = passwordWeakness(password);
  return weakness && weakness.rule !== "length" ? weakness.message : null;
}

/** The rule a new password breaks and why, length included; null when it is accepted. */
export function passwordWeakness(password: string): { rule: PasswordRule; message: string } | null {
  if (password.length < MIN_PASSWORD_LENGTH) {
    return { rule: "length", message: `Password must be at least ${MIN_PASSWORD_LENGTH} characters` };
  }
  if (password.length > MAX_PASSWORD_LENGTH) {
    return { rule: "length", message: `Password must be at most ${MAX_PASSWORD_LENGTH} characters` };
  }
  if (password.trim() === "") return { rule: "characters", message: "Password must not be only whitespace" };
  if (COMMON.has(normalizePassword(password))) {
    return {
      rule: "pwned",
      message: "Password is too common: it is on lists of leaked passwords that attackers try first",
    };
  }
  return null;
}

/** A zod `superRefine` that refuses what {@linkcode passwordProblem} refuses, naming the reason. */
export function refuseWeakPassword(
  password: string,
  ctx: { addIssue(issue: { code: "custom"; message: string }): void },
): void {
  const problem = passwordProblem(password);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
}
