import { sha256Hex } from "../../lib/crypto.ts";
import { encodeBase64Url } from "../../lib/encoding.ts";
import { AppError, errors } from "../../lib/errors.ts";

/** How long an auth code may wait for its exchange (GoTrue's flow state expiry: five minutes). */
export const AUTH_CODE_TTL_SECS = 5 * 60;

/** The S256 challenge of a verifier: base64url of its SHA-256 (RFC 7636). */
export async function s256(verifier: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  return encodeBase64Url(new Uint8Array(digest));
}

/**
 * The challenge to store of a request's `code_challenge` and `code_challenge_method`, always as S256 (a plain
 * challenge is the verifier itself: it is hashed, so only hashes are stored); undefined without PKCE. Refuses
 * one without the other, a length outside 43–128 and another method, as GoTrue does.
 */
export async function storedChallenge(
  challenge: string | undefined,
  method: string | undefined,
): Promise<string | undefined> {
  if (!challenge && !method) return undefined;
  if (!challenge || !method) {
    throw errors.validation(
      "PKCE flow requires code_challenge_method and code_challenge",
      "validation_failed",
    );
  }
  if (challenge.length < 43 || challenge.length > 128) {
    throw errors.validation("code challenge has to be between 43 and 128 characters", "validation_failed");
  }
  const kind = method.toLowerCase();
  if (kind === "s256") return challenge;
  if (kind === "plain") return await s256(challenge);
  throw errors.validation(
    "code challenge method not supported: use s256 or plain",
    "validation_failed",
  );
}

/** What is stored of an auth code. */
export function authCodeHash(authCode: string): Promise<string> {
  return sha256Hex(`auth-code:${authCode}`);
}

/** GoTrue's answers of a refused exchange. */
export const pkceErrors = {
  notFound: () =>
    new AppError(404, "NOT_FOUND", "invalid flow state, no valid flow state found", {
      reason: "flow_state_not_found",
    }),
  expired: () =>
    new AppError(422, "VALIDATION_ERROR", "invalid flow state, flow state has expired", {
      reason: "flow_state_expired",
    }),
  badVerifier: () =>
    new AppError(400, "VALIDATION_ERROR", "code challenge does not match previously saved code verifier", {
      reason: "bad_code_verifier",
    }),
};
