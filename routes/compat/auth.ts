import { Hono } from "hono";
import type { Context } from "hono";
import { z } from "zod";
import { errors } from "../../lib/errors.ts";
import type { UserClaims } from "../../services/auth/tokens.ts";
import type { UserSession } from "../../services/auth/users.ts";
import type { Project } from "../../services/projects/projects.ts";
import type { AppEnv } from "../env.ts";
import { authenticate } from "../middleware/auth.ts";
import { resolveProject } from "../middleware/project.ts";
import { accountLimited, passwordRateLimit } from "../middleware/rate_limit.ts";
import { AppError } from "../../lib/errors.ts";
import { PKCE_TOKEN_PREFIX } from "../../services/auth/recovery.ts";
import { redirectTarget } from "../../services/auth/redirects.ts";
import { storedChallenge } from "../../services/auth/pkce.ts";
import { gotrueFailure } from "./gotrue_errors.ts";
import { apiUrlOf, codeLanding, errorLanding, sessionLanding } from "./gotrue_links.ts";
import { GOTRUE_SETTINGS, gotrueSession, gotrueUser } from "./gotrue_shapes.ts";

/** The prefix of the mount: supabase-js calls `<project URL>/auth/v1/…`. */
const BASE = "/auth/v1";

const Email = z.email().max(320);
const Metadata = z.record(z.string(), z.unknown());

/** The body of a JSON request as an object; GoTrue's 400 `bad_json` otherwise. */
async function bodyOf(c: Context<AppEnv>): Promise<Record<string, unknown>> {
  let body: unknown;
  try {
    body = JSON.parse(await c.req.text() || "{}");
  } catch {
    throw errors.validation("Could not parse request body as JSON", "bad_json");
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw errors.validation("Request body must be a JSON object", "bad_json");
  }
  return body as Record<string, unknown>;
}

/** A valid email address from a body field; GoTrue's 400 `email_address_invalid` otherwise. */
function emailOf(value: unknown): string {
  const parsed = Email.safeParse(value);
  if (!parsed.success) {
    throw errors.validation("Unable to validate email address: invalid format", "email_address_invalid");
  }
  return parsed.data;
}

/** A string field of at most 1024 characters, or undefined when absent. */
function stringOf(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string" || value.length > 1024) {
    throw errors.validation(`${field} must be a string of at most 1024 characters`, "validation_failed");
  }
  return value;
}

/** The user metadata of a body (`data`), or undefined when absent. */
function metadataOf(value: unknown): Record<string, unknown> | undefined {
  if (value === undefined || value === null) return undefined;
  const parsed = Metadata.safeParse(value);
  if (!parsed.success) throw errors.validation("data must be a JSON object", "validation_failed");
  return parsed.data;
}

/** Phone sign-ups and sign-ins are not offered (GoTrue's answer when the phone provider is off). */
function refusePhone(body: Record<string, unknown>): void {
  if (body.phone !== undefined && body.phone !== null && body.phone !== "") {
    throw errors.validation("Phone logins are disabled", "phone_provider_disabled");
  }
}

/** The signed-in user of the request; GoTrue's 401 `no_authorization` for a key alone. */
function userOf(c: Context<AppEnv>): UserClaims {
  const user = c.get("caller").user;
  if (!user) throw errors.unauthorized("This endpoint requires a valid Bearer token", "no_authorization");
  return user;
}

/** A parameter of the query string. */
function queryParam(c: Context<AppEnv>, name: string): string | undefined {
  return new URL(c.req.url).searchParams.get(name) ?? undefined;
}

/** A platform session answer in GoTrue's session shape. */
async function sessionAnswer(c: Context<AppEnv>, project: Project, result: UserSession) {
  const user = await c.env.platform.auth.details(project, result.user.id);
  return c.json(gotrueSession(result.session, user), 200);
}

/**
 * GoTrue's API as auth-js 2.x calls it, on the platform's auth service (docs/api.md, "Supabase compatibility
 * mounts"): the same users, sessions, password policy, rate limits and refresh-token rotation as `/v1/auth`,
 * with GoTrue's request and answer shapes and its errors.
 */
export const gotrueRoutes = new Hono<AppEnv>();
gotrueRoutes.onError((err, c) => gotrueFailure(err, c.req.raw, c.env.requestId));

gotrueRoutes.get(`${BASE}/health`, (c) =>
  c.json({
    version: "platform",
    name: "GoTrue",
    description: "GoTrue is a user registration and authentication API",
  }));

gotrueRoutes.use(`${BASE}/*`, resolveProject);

gotrueRoutes.get(
  `${BASE}/.well-known/jwks.json`,
  (c) => c.json({ keys: [c.get("project").jwt_public_jwk as Record<string, unknown>] }, 200),
);

// The recovery mail's link (docs/projects-and-auth.md): opened in a browser, so without an API key, as GoTrue's.
// It lands on `redirect_to` when the project allows it, else on its site URL, never on a refused address.
gotrueRoutes.get(`${BASE}/verify`, passwordRateLimit, async (c) => {
  const token = stringOf(queryParam(c, "token"), "token");
  if (!token) throw errors.validation("Verify requires a token", "validation_failed");
  if (queryParam(c, "type") !== "recovery") {
    throw errors.validation("Only type recovery can be verified by link", "validation_failed");
  }
  const project = c.get("project");
  const { auth } = c.env.platform;
  const target = redirectTarget(await auth.settings.resolve(project.ref), queryParam(c, "redirect_to"));
  if (!target) {
    throw errors.validation(
      "redirect_to is not an allowed address and the project has no site_url",
      "validation_failed",
    );
  }
  let landing: string;
  try {
    const outcome = await auth.verifyRecoveryLink(project, token);
    landing = "authCode" in outcome
      ? codeLanding(target, outcome.authCode)
      : sessionLanding(target, outcome.session.session, "recovery");
  } catch (err) {
    if (!(err instanceof AppError) || err.reason !== "otp_expired") throw err;
    landing = errorLanding(target, "otp_expired", err.message, token.startsWith(PKCE_TOKEN_PREFIX));
  }
  c.header("cache-control", "no-store");
  return c.redirect(landing, 303);
});

gotrueRoutes.use(`${BASE}/*`, authenticate);

gotrueRoutes.get(`${BASE}/settings`, (c) => c.json(GOTRUE_SETTINGS, 200));

gotrueRoutes.post(`${BASE}/signup`, passwordRateLimit, async (c) => {
  // `gotrue_meta_security` (captcha), `code_challenge*` (PKCE) and `channel` are accepted and ignored.
  const body = await bodyOf(c);
  refusePhone(body);
  const email = emailOf(body.email);
  const password = stringOf(body.password, "password");
  if (!password) throw errors.validation("Signup requires a valid password", "validation_failed");
  const project = c.get("project");
  const result = await c.env.platform.auth.signUp(project, { email, password, data: metadataOf(body.data) });
  return await sessionAnswer(c, project, result);
});

gotrueRoutes.post(`${BASE}/token`, passwordRateLimit, async (c) => {
  const grant = queryParam(c, "grant_type");
  const body = await bodyOf(c);
  const project = c.get("project");
  const { auth } = c.env.platform;
  if (grant === "password") {
    refusePhone(body);
    const email = stringOf(body.email, "email");
    const password = stringOf(body.password, "password");
    if (!email || !password) {
      throw errors.unauthorized("Invalid login credentials", "invalid_credentials");
    }
    const result = await accountLimited(
      c,
      `user:${project.ref}:${email}`,
      () => auth.signInWithPassword(project, email, password),
    );
    return await sessionAnswer(c, project, result);
  }
  if (grant === "refresh_token") {
    const token = stringOf(body.refresh_token, "refresh_token");
    if (!token) throw errors.invalidToken("Refresh token is invalid or revoked", "refresh_token_not_found");
    return await sessionAnswer(c, project, await auth.refresh(project, token));
  }
  if (grant === "pkce") {
    const authCode = stringOf(body.auth_code, "auth_code");
    const verifier = stringOf(body.code_verifier, "code_verifier");
    if (!authCode || !verifier) {
      throw errors.validation(
        "invalid request: both auth code and code verifier should be non-empty",
        "pkce_params_missing",
      );
    }
    return await sessionAnswer(c, project, await auth.exchangeAuthCode(project, authCode, verifier));
  }
  throw errors.validation("unsupported_grant_type: grant_type must be password, refresh_token or pkce");
});

gotrueRoutes.get(`${BASE}/user`, async (c) => {
  const claims = userOf(c);
  const user = await c.env.platform.auth.details(c.get("project"), claims.sub, claims.session_id);
  return c.json(gotrueUser(user), 200);
});

gotrueRoutes.put(`${BASE}/user`, async (c) => {
  const claims = userOf(c);
  const body = await bodyOf(c);
  refusePhone(body);
  const email = body.email === undefined || body.email === null ? undefined : emailOf(body.email);
  const password = stringOf(body.password, "password");
  const user = await c.env.platform.auth.updateUser(c.get("project"), claims, {
    email,
    password,
    data: metadataOf(body.data),
  });
  return c.json(gotrueUser(user), 200);
});

const SCOPES = new Set(["global", "local", "others"]);

gotrueRoutes.post(`${BASE}/logout`, async (c) => {
  const claims = userOf(c);
  const scope = queryParam(c, "scope") ?? "global";
  if (!SCOPES.has(scope)) {
    throw errors.validation("Unsupported logout scope: use global, local or others", "validation_failed");
  }
  await c.env.platform.auth.signOut(c.get("project"), claims, scope as "global" | "local" | "others");
  return c.body(null, 204);
});

/** Refuses what needs mail when the project's notification settings cannot send email: GoTrue's 422. */
async function requireEmail(c: Context<AppEnv>): Promise<void> {
  if (!await c.env.platform.auth.emailConfigured(c.get("project"))) {
    throw errors.validation(
      "Email sending is not configured: recovery, one-time codes and email verification are not available",
      "email_provider_disabled",
    );
  }
}

// Password recovery (docs/projects-and-auth.md): auth-js's `resetPasswordForEmail`, then the mail's link, or
// `verifyOtp({email, token, type: 'recovery'})` or `verifyOtp({token_hash, type: 'recovery'})`. `redirect_to`
// (auth-js puts it in the query; GoTrue also reads the Referer) chooses the link's landing among the project's
// allowed addresses; `code_challenge*` makes the link end in an auth code (PKCE). `gotrue_meta_security` is
// accepted and ignored.
gotrueRoutes.post(`${BASE}/recover`, passwordRateLimit, async (c) => {
  await requireEmail(c);
  const body = await bodyOf(c);
  refusePhone(body);
  const email = emailOf(body.email);
  const challenge = await storedChallenge(
    stringOf(body.code_challenge, "code_challenge"),
    stringOf(body.code_challenge_method, "code_challenge_method"),
  );
  const referer = c.req.header("referer");
  const redirectTo = stringOf(queryParam(c, "redirect_to") ?? body.redirect_to, "redirect_to") ??
    (referer && referer.length <= 1024 ? referer : undefined);
  await c.env.platform.auth.recover(c.get("project"), email, { apiUrl: apiUrlOf(c), redirectTo, challenge });
  return c.json({}, 200);
});

gotrueRoutes.post(`${BASE}/verify`, passwordRateLimit, async (c) => {
  await requireEmail(c);
  const body = await bodyOf(c);
  refusePhone(body);
  if (body.type !== "recovery") {
    throw errors.validation(
      "Only type recovery can be verified: sign-up needs no confirmation",
      "validation_failed",
    );
  }
  const project = c.get("project");
  const { auth } = c.env.platform;
  const tokenHash = stringOf(body.token_hash, "token_hash");
  if (tokenHash) return await sessionAnswer(c, project, await auth.verifyRecovery(project, { tokenHash }));
  const email = emailOf(body.email);
  const code = stringOf(body.token, "token");
  if (!code) throw errors.validation("Verify requires a token or a token_hash", "validation_failed");
  const result = await accountLimited(
    c,
    `recovery:${project.ref}:${email.toLowerCase()}`,
    () => auth.verifyRecovery(project, { email, code }),
  );
  return await sessionAnswer(c, project, result);
});

// One-time codes, magic links and email verification are not offered (email addresses are confirmed at
// sign-up): GoTrue's answer with its email provider off.
for (const path of ["otp", "magiclink", "resend", "reauthenticate"]) {
  gotrueRoutes.all(`${BASE}/${path}`, () => {
    throw errors.validation(
      "One-time codes, magic links and email verification are not available: email addresses are confirmed at sign-up",
      "email_provider_disabled",
    );
  });
}

gotrueRoutes.all(`${BASE}/*`, (c) => {
  throw errors.notFound(`${c.req.method} ${c.req.path} is not part of this platform's GoTrue API`);
});
