import { randomHex, sha256Hex } from "../../lib/crypto.ts";

/** How long a recovery code and its token hash stay valid (GoTrue's default OTP expiry is one hour). */
export const RECOVERY_TTL_SECS = 60 * 60;
/** Wrong codes for an email before its recovery is spent (a 6-digit code is guessable without a cap). */
export const RECOVERY_MAX_ATTEMPTS = 5;

/** The mail auth sends, through the project's notifications (services/notifications). */
export interface AuthMail {
  to: string;
  subject: string;
  body: string;
}

/** How auth sends mail: wired to the notifications service in services/platform.ts. */
export interface AuthMailer {
  /** True when the project's notification settings can send email (an SMTP host and a sender). */
  emailConfigured(ref: string): Promise<boolean>;
  send(ref: string, mail: AuthMail): Promise<void>;
  /** The shortest time between two mails to one user, in seconds (GoTrue's SMTP_MAX_FREQUENCY). */
  intervalSecs: number;
}

/** A recovery's secrets: the code to type (6 digits, as GoTrue's) and the token hash of the link. */
export interface RecoverySecrets {
  code: string;
  tokenHash: string;
}

/** A uniformly random 6-digit code and a 256-bit token hash. */
export function newRecoverySecrets(): RecoverySecrets {
  const limit = 4_294_000_000; // a multiple of 10^6 below 2^32: no modulo bias
  let n: number;
  do n = crypto.getRandomValues(new Uint32Array(1))[0]!; while (n >= limit);
  return { code: String(n % 1_000_000).padStart(6, "0"), tokenHash: randomHex(32) };
}

/** What is stored of a code: it is hashed with its user's id, so equal codes of two users differ. */
export function recoveryCodeHash(userId: string, code: string): Promise<string> {
  return sha256Hex(`recovery:${userId}:${code}`);
}

/** What is stored of a token hash. */
export function recoveryLinkHash(tokenHash: string): Promise<string> {
  return sha256Hex(`recovery-link:${tokenHash}`);
}

/** The prefix of a PKCE recovery's token in its link (as GoTrue's): its verify answers with an auth code. */
export const PKCE_TOKEN_PREFIX = "pkce_";

/**
 * The link of a recovery mail: GET `/auth/v1/verify` on the project's API address, which spends the token and
 * redirects to `redirectTo` (already checked against the project's allowed addresses).
 */
export function recoveryLink(apiUrl: string, tokenHash: string, redirectTo: string, pkce: boolean): string {
  const link = new URL("/auth/v1/verify", apiUrl);
  link.searchParams.set("token", pkce ? PKCE_TOKEN_PREFIX + tokenHash : tokenHash);
  link.searchParams.set("type", "recovery");
  link.searchParams.set("redirect_to", redirectTo);
  return link.toString();
}

/**
 * The recovery mail: the link (when the project has an address to land on), the code, and the token hash for
 * `verifyOtp({token_hash, type: 'recovery'})`.
 */
export function recoveryMail(to: string, secrets: RecoverySecrets, link?: string): AuthMail {
  const lines = [
    "Someone asked to reset the password of this account. If it was not you, ignore this mail.",
    "",
    ...(link ? ["Reset your password:", link, ""] : []),
    `Your one-time code: ${secrets.code}`,
    `Token hash (for apps that verify by link): ${secrets.tokenHash}`,
    "",
    "They expire in one hour and work once; only the latest mail's work.",
  ];
  return { to, subject: "Reset your password", body: lines.join("\n") };
}
