import { errors as joseErrors, importJWK, type JWTPayload, jwtVerify, SignJWT } from "jose";
import { type AppError, errors } from "../../lib/errors.ts";
import type { Project, ProjectService } from "../projects/projects.ts";
import { TtlCache } from "../../lib/ttl_cache.ts";
import type { RevokedSessions } from "./revoked_sessions.ts";

/** Seconds an access token lives (1 h). */
export const ACCESS_TOKEN_SECONDS = 3600;

/** The claims of a user access token. */
export interface UserClaims extends JWTPayload {
  sub: string;
  role: "authenticated";
  aud: "authenticated";
  exp: number;
  iat: number;
  email: string;
  ref: string;
  session_id: string;
}

/** A freshly signed access token. */
export interface AccessToken {
  access_token: string;
  expires_in: number;
  expires_at: number;
}

/** True when a bearer value has the shape of a JWT (three base64url parts). */
export function looksLikeJwt(value: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(value);
}

/** A verified token in the cache, with the project and key it was verified for. */
interface VerifiedToken {
  token: string;
  ref: string;
  kid: string;
  claims: UserClaims;
}

/** The signature segment of a compact JWT. */
function signatureOf(token: string): string {
  return token.slice(token.lastIndexOf(".") + 1);
}

/**
 * TokenService signs and verifies the ES256 access tokens of each project, and refuses those of a revoked
 * session. Verified tokens are cached until they expire, so a hot path pays for the signature check once per
 * token; revocations come from {@linkcode RevokedSessions}, read every few seconds.
 */
export class TokenService {
  // Keyed by the signature segment (86 characters, not the whole 600-character token: hashing the key is a
  // share of every authenticated request); a hit must match the whole token and the project's signing key.
  private readonly verified = new TtlCache<string, VerifiedToken>({
    ttlMs: ACCESS_TOKEN_SECONDS * 1000,
    maxEntries: 50_000,
    // A token carries its user's metadata (the user's size): the token and its decoded claims, bounded.
    maxBytes: 64 * 1048576,
    sizeOf: (v) => 2 * v.token.length + 256,
  });
  private readonly publicKeys = new Map<string, Promise<CryptoKey>>();

  constructor(private readonly projects: ProjectService, readonly revoked: RevokedSessions) {}

  /** Signs an access token for a user's session. */
  async sign(project: Project, user: { id: string; email: string }, sessionId: string): Promise<AccessToken> {
    const iat = Math.floor(Date.now() / 1000);
    const exp = iat + ACCESS_TOKEN_SECONDS;
    const token = await new SignJWT({
      role: "authenticated",
      email: user.email,
      ref: project.ref,
      session_id: sessionId,
    })
      .setProtectedHeader({ alg: "ES256", kid: project.jwt_kid, typ: "JWT" })
      .setSubject(user.id)
      .setAudience("authenticated")
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .sign(await this.projects.signingKey(project.ref));
    return { access_token: token, expires_in: ACCESS_TOKEN_SECONDS, expires_at: exp };
  }

  /**
   * The claims of a token of `project` verified before and not expired since, or the error that refuses it
   * now that its session is revoked, without any work; undefined when that takes a lookup.
   */
  cached(project: Project, token: string): UserClaims | AppError | undefined {
    const claims = this.signed(project, token);
    if (!claims) return;
    const revoked = this.revoked.cached(project.ref, claims.session_id);
    if (revoked === undefined) return;
    return revoked ? sessionEnded() : claims;
  }

  /** Verifies a user token of `project`; 401 INVALID_TOKEN when it is expired, tampered, foreign or revoked. */
  async verify(project: Project, token: string): Promise<UserClaims> {
    const claims = this.signed(project, token) ?? await this.verifySignature(project, token);
    if (await this.revoked.isRevoked(project.ref, claims.session_id)) throw sessionEnded();
    return claims;
  }

  /** The claims of a token whose signature was verified before, if it has not expired since. */
  private signed(project: Project, token: string): UserClaims | undefined {
    const hit = this.verified.get(signatureOf(token));
    if (!hit || hit.token !== token || hit.ref !== project.ref || hit.kid !== project.jwt_kid) return;
    return hit.claims.exp * 1000 > Date.now() ? hit.claims : undefined;
  }

  private async verifySignature(project: Project, token: string): Promise<UserClaims> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, await this.publicKey(project), {
        algorithms: ["ES256"],
        audience: "authenticated",
        requiredClaims: ["sub", "exp", "iat"],
      }));
    } catch (err) {
      const shape = err instanceof joseErrors.JWTClaimValidationFailed ? claimTypeProblem(err.payload) : null;
      if (shape) throw errors.invalidToken(shape, "bad_jwt");
      if (err instanceof joseErrors.JWTExpired) throw errors.invalidToken("Token has expired", "bad_jwt");
      // Named apart so that /rest/v1 can word them as PostgREST does (PGRST303).
      if (err instanceof joseErrors.JWTClaimValidationFailed && err.claim === "nbf") {
        throw errors.invalidToken("Token is not valid yet", "bad_jwt");
      }
      if (err instanceof joseErrors.JWTClaimValidationFailed && err.claim === "aud") {
        throw errors.invalidToken("Token audience is not accepted", "bad_jwt");
      }
      throw errors.invalidToken("Token is invalid", "bad_jwt");
    }
    const shape = claimTypeProblem(payload);
    if (shape) throw errors.invalidToken(shape, "bad_jwt");
    if (
      payload.ref !== project.ref || payload.role !== "authenticated" ||
      typeof payload.session_id !== "string"
    ) {
      throw errors.invalidToken("Token is invalid");
    }
    const claims = payload as UserClaims;
    this.verified.set(
      signatureOf(token),
      { token, ref: project.ref, kid: project.jwt_kid, claims },
      claims.exp * 1000 - Date.now(),
    );
    return claims;
  }

  private publicKey(project: Project): Promise<CryptoKey> {
    const id = `${project.ref}:${project.jwt_kid}`;
    let key = this.publicKeys.get(id);
    if (!key) {
      key = importJWK(project.jwt_public_jwk, "ES256") as Promise<CryptoKey>;
      this.publicKeys.set(id, key);
    }
    return key;
  }
}

/**
 * A registered claim of the wrong type, in PostgREST's words (its PGRST303 on /rest/v1), or null. An `aud`
 * array that holds the expected audience beside a non-string passes jose's check, so this runs after it too.
 */
function claimTypeProblem(payload: JWTPayload): string | null {
  for (const claim of ["exp", "nbf", "iat"] as const) {
    if (payload[claim] !== undefined && typeof payload[claim] !== "number") {
      return `The JWT '${claim}' claim must be a number`;
    }
  }
  const aud: unknown = payload.aud;
  const strings = typeof aud === "string" || (Array.isArray(aud) && aud.every((a) => typeof a === "string"));
  return aud === undefined || strings ? null : "The JWT 'aud' claim must be a string or an array of strings";
}

function sessionEnded(): AppError {
  return errors.invalidToken("Session has ended: sign in again", "session_not_found");
}
