import type { Session, UserDetails } from "../../services/auth/users.ts";

/** The `provider` of every user: sign-up is by email and password only. */
const EMAIL_PROVIDER = { provider: "email", providers: ["email"] };

/**
 * GoTrue's user object for a platform user. Email addresses are confirmed at sign-up (there is no
 * confirmation mail), so `email_confirmed_at` and `confirmed_at` are the creation date; the one identity is the
 * email one, its id the user's.
 */
export function gotrueUser(user: UserDetails) {
  const identityData = { email: user.email, email_verified: true, phone_verified: false, sub: user.id };
  return {
    id: user.id,
    aud: "authenticated",
    role: "authenticated",
    email: user.email,
    email_confirmed_at: user.created_at,
    phone: "",
    confirmed_at: user.created_at,
    last_sign_in_at: user.last_sign_in_at,
    app_metadata: EMAIL_PROVIDER,
    user_metadata: user.user_metadata,
    identities: [{
      identity_id: user.id,
      id: user.id,
      user_id: user.id,
      identity_data: identityData,
      provider: "email",
      last_sign_in_at: user.last_sign_in_at,
      created_at: user.created_at,
      updated_at: user.updated_at,
      email: user.email,
    }],
    created_at: user.created_at,
    updated_at: user.updated_at,
    is_anonymous: false,
  };
}

/** GoTrue's session object: the tokens with the user inside. */
export function gotrueSession(session: Session, user: UserDetails) {
  return {
    access_token: session.access_token,
    token_type: session.token_type,
    expires_in: session.expires_in,
    expires_at: session.expires_at,
    refresh_token: session.refresh_token,
    user: gotrueUser(user),
  };
}

/** GET /settings: what this platform's auth offers, in GoTrue's shape. */
export const GOTRUE_SETTINGS = {
  external: {
    anonymous_users: false,
    apple: false,
    azure: false,
    bitbucket: false,
    discord: false,
    facebook: false,
    figma: false,
    fly: false,
    github: false,
    gitlab: false,
    google: false,
    keycloak: false,
    kakao: false,
    linkedin_oidc: false,
    notion: false,
    spotify: false,
    slack_oidc: false,
    workos: false,
    twitch: false,
    twitter: false,
    zoom: false,
    email: true,
    phone: false,
  },
  disable_signup: false,
  mailer_autoconfirm: true,
  phone_autoconfirm: false,
  sms_provider: "",
  saml_enabled: false,
};
