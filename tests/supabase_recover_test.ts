/**
 * Password recovery with supabase-js, unchanged, against a real platform whose project mails through a real SMTP
 * server: resetPasswordForEmail → the mail's code → verifyOtp → updateUser → the new password signs in; and the
 * mail's link, which lands on an allowed address with a session (implicit flow) or an auth code (PKCE).
 */
import { AuthApiError, createClient, type SupabaseClient } from "@supabase/supabase-js";
import { createClient as platformClient } from "../client/mod.ts";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { servePlatform } from "./client_fixture.ts";
import { rawRequest } from "./harness.ts";
import { type ReceivedMail, smtpSink } from "./notification_fakes.ts";

const options = { auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false } };

function client(url: string, key: string): SupabaseClient {
  return createClient(url, key, options);
}

/** The mail's text with quoted-printable soft line breaks joined. */
const textOf = (raw: string) => raw.replace(/=\r?\n/g, "");

async function mailsFor(sink: { mails: ReceivedMail[] }, to: string, count: number) {
  for (let i = 0; i < 400; i++) {
    const got = sink.mails.filter((m) => m.to.includes(to));
    if (got.length >= count) return got;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`${count} mail(s) to ${to} never arrived`);
}

/** The mail's text, quoted-printable decoded. */
const decodedOf = (raw: string) =>
  textOf(raw).replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
/** The recovery link of a mail, or undefined when it has none. */
const linkOf = (raw: string) => /(http\S+\/auth\/v1\/verify\?\S+)/.exec(decodedOf(raw))?.[1];
const codeOf = (raw: string) => /one-time code: (\d{6})/.exec(textOf(raw))![1]!;
const tokenHashOf = (raw: string) => /Token hash[^:]*: ([0-9a-f]{64})/.exec(textOf(raw))![1]!;

Deno.test("supabase-js recovery: without email settings, 422 email_provider_disabled", async () => {
  const s = await servePlatform();
  try {
    const supabase = client(s.url, s.p.publicKey);
    const reset = await supabase.auth.resetPasswordForEmail("ada@example.com");
    assert(reset.error instanceof AuthApiError);
    assertEquals([reset.error.status, reset.error.code], [422, "email_provider_disabled"]);
    const verify = await supabase.auth.verifyOtp({
      email: "ada@example.com",
      token: "123456",
      type: "recovery",
    });
    assert(verify.error instanceof AuthApiError);
    assertEquals([verify.error.status, verify.error.code], [422, "email_provider_disabled"]);
  } finally {
    await s.close();
  }
});

Deno.test("supabase-js recovery: a second mail within the interval is 429 over_email_send_rate_limit", async () => {
  const sink = await smtpSink();
  const s = await servePlatform({ NOTIFY_ALLOW_PRIVATE_NET: "127.0.0.1" }, { workers: true });
  try {
    await platformClient(s.url, s.p.secretKey).notifications.admin.updateSettings({
      email: { host: "127.0.0.1", port: sink.port, secure: false, from: "auth@example.com" },
    });
    const signUp = await client(s.url, s.p.publicKey).auth.signUp({
      email: "ada@example.com",
      password: "plum-orchard-42",
    });
    assertEquals(signUp.error, null);
    const supabase = client(s.url, s.p.publicKey);
    assertEquals(await supabase.auth.resetPasswordForEmail("ada@example.com"), { data: {}, error: null });
    const [mail] = await mailsFor(sink, "ada@example.com", 1);
    const again = await supabase.auth.resetPasswordForEmail("ada@example.com");
    assert(again.error instanceof AuthApiError);
    assertEquals([again.error.status, again.error.code], [429, "over_email_send_rate_limit"]);
    assertMatch(
      again.error.message,
      /^For security purposes, you can only request this after \d+ seconds\.$/,
    );
    // The first mail's code still works: the refused request replaced nothing.
    const verified = await supabase.auth.verifyOtp({
      email: "ada@example.com",
      token: codeOf(mail!.raw),
      type: "recovery",
    });
    assertEquals(verified.error, null);
    await new Promise((r) => setTimeout(r, 300));
    assertEquals(sink.mails.filter((m) => m.to.includes("ada@example.com")).length, 1);
  } finally {
    await s.close();
    await sink.close();
  }
});

Deno.test("supabase-js recovery: mail, code, session, new password; single use, wrong code, unknown email", async () => {
  const sink = await smtpSink();
  // No interval between mails, so that one test can ask for several.
  const s = await servePlatform(
    { NOTIFY_ALLOW_PRIVATE_NET: "127.0.0.1", AUTH_EMAIL_INTERVAL_SECS: "0" },
    { workers: true },
  );
  try {
    await platformClient(s.url, s.p.secretKey).notifications.admin.updateSettings({
      email: { host: "127.0.0.1", port: sink.port, secure: false, from: "auth@example.com" },
    });
    const signUp = await client(s.url, s.p.publicKey).auth.signUp({
      email: "ada@example.com",
      password: "plum-orchard-42",
    });
    assertEquals(signUp.error, null);

    // An unknown address: the same 200 and no mail.
    const unknown = await client(s.url, s.p.publicKey).auth.resetPasswordForEmail("nobody@example.com");
    assertEquals(unknown, { data: {}, error: null });

    const supabase = client(s.url, s.p.publicKey);
    const reset = await supabase.auth.resetPasswordForEmail("Ada@Example.com", {
      redirectTo: "http://localhost:3000/reset",
    });
    assertEquals(reset, { data: {}, error: null });
    const [mail] = await mailsFor(sink, "ada@example.com", 1);
    assertEquals(mail!.from, "auth@example.com");
    const code = codeOf(mail!.raw);

    // A wrong code: GoTrue's 403 otp_expired; the right one still works after it.
    const wrongCode = code === "000000" ? "111111" : "000000";
    const wrong = await client(s.url, s.p.publicKey).auth.verifyOtp({
      email: "ada@example.com",
      token: wrongCode,
      type: "recovery",
    });
    assert(wrong.error instanceof AuthApiError);
    assertEquals([wrong.error.status, wrong.error.code], [403, "otp_expired"]);

    const verified = await supabase.auth.verifyOtp({
      email: "ada@example.com",
      token: code,
      type: "recovery",
    });
    assertEquals(verified.error, null);
    assertEquals(verified.data.user!.email, "ada@example.com");
    assert(verified.data.session!.access_token);

    // Spent: the same code again is refused.
    const again = await client(s.url, s.p.publicKey).auth.verifyOtp({
      email: "ada@example.com",
      token: code,
      type: "recovery",
    });
    assert(again.error instanceof AuthApiError);
    assertEquals([again.error.status, again.error.code], [403, "otp_expired"]);

    const updated = await supabase.auth.updateUser({ password: "quince-harbour-77" });
    assertEquals(updated.error, null);
    const oldPassword = await client(s.url, s.p.publicKey).auth.signInWithPassword({
      email: "ada@example.com",
      password: "plum-orchard-42",
    });
    assert(oldPassword.error instanceof AuthApiError);
    assertEquals(oldPassword.error.code, "invalid_credentials");
    const newPassword = await client(s.url, s.p.publicKey).auth.signInWithPassword({
      email: "ada@example.com",
      password: "quince-harbour-77",
    });
    assertEquals(newPassword.error, null);

    // The token hash: only the latest mail's works, once.
    await supabase.auth.resetPasswordForEmail("ada@example.com");
    await supabase.auth.resetPasswordForEmail("ada@example.com");
    const [, first, latest] = await mailsFor(sink, "ada@example.com", 3);
    const stale = await client(s.url, s.p.publicKey).auth.verifyOtp({
      token_hash: tokenHashOf(first!.raw),
      type: "recovery",
    });
    assert(stale.error instanceof AuthApiError);
    assertEquals([stale.error.status, stale.error.code], [403, "otp_expired"]);
    const byHash = await client(s.url, s.p.publicKey).auth.verifyOtp({
      token_hash: tokenHashOf(latest!.raw),
      type: "recovery",
    });
    assertEquals(byHash.error, null);
    assertEquals(byHash.data.user!.email, "ada@example.com");
    const hashAgain = await client(s.url, s.p.publicKey).auth.verifyOtp({
      token_hash: tokenHashOf(latest!.raw),
      type: "recovery",
    });
    assertEquals(hashAgain.error?.code, "otp_expired");

    // Wrong codes spend the recovery: after five, even the right code is refused.
    await supabase.auth.resetPasswordForEmail("ada@example.com");
    const [, , , fourth] = await mailsFor(sink, "ada@example.com", 4);
    const right = codeOf(fourth!.raw);
    const miss = right === "000000" ? "111111" : "000000";
    for (let i = 0; i < 5; i++) {
      const r = await client(s.url, s.p.publicKey).auth.verifyOtp({
        email: "ada@example.com",
        token: miss,
        type: "recovery",
      });
      assertEquals(r.error?.code, "otp_expired");
    }
    const late = await client(s.url, s.p.publicKey).auth.verifyOtp({
      email: "ada@example.com",
      token: right,
      type: "recovery",
    });
    assertEquals(late.error?.code, "otp_expired");

    // No mail ever went to the unknown address.
    assertEquals(sink.mails.filter((m) => m.to.includes("nobody@example.com")).length, 0);
    assertEquals(sink.mails.length, 4);
  } finally {
    await s.close();
    await sink.close();
  }
});

/** A platform mailing through a sink, its project's auth settings set, and a signed-up user. */
async function recoveryPlatform(settings: Record<string, unknown>) {
  const sink = await smtpSink();
  const s = await servePlatform(
    { NOTIFY_ALLOW_PRIVATE_NET: "127.0.0.1", AUTH_EMAIL_INTERVAL_SECS: "0" },
    { workers: true },
  );
  await platformClient(s.url, s.p.secretKey).notifications.admin.updateSettings({
    email: { host: "127.0.0.1", port: sink.port, secure: false, from: "auth@example.com" },
  });
  const patched = await patchAuthSettings(s.url, s.p.secretKey, settings);
  assertEquals(patched.status, 200);
  const signUp = await client(s.url, s.p.publicKey).auth.signUp({
    email: "ada@example.com",
    password: "plum-orchard-42",
  });
  assertEquals(signUp.error, null);
  return {
    sink,
    s,
    async close() {
      await s.close();
      await sink.close();
    },
  };
}

async function patchAuthSettings(url: string, key: string, body: unknown) {
  const res = await fetch(`${url}/v1/project/auth-settings`, {
    method: "PATCH",
    headers: { apikey: key, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

/** Opens a link as a browser would, without following its redirect: the Location. */
async function follow(link: string): Promise<string> {
  const res = await fetch(link, { redirect: "manual" });
  await res.body?.cancel();
  assertEquals(res.status, 303);
  assertEquals(res.headers.get("cache-control"), "no-store");
  return res.headers.get("location")!;
}

const fragmentOf = (location: string) => new URLSearchParams(new URL(location).hash.slice(1));

Deno.test("auth settings: read and changed by the service role, refused to anon, validated", async () => {
  const s = await servePlatform();
  try {
    const read = await fetch(`${s.url}/v1/project/auth-settings`, { headers: { apikey: s.p.secretKey } });
    assertEquals(await read.json(), { data: { site_url: null, redirect_urls: [] }, meta: null });
    const anonRead = await fetch(`${s.url}/v1/project/auth-settings`, { headers: { apikey: s.p.publicKey } });
    assertEquals(anonRead.status, 403);
    await anonRead.body?.cancel();
    const anon = await patchAuthSettings(s.url, s.p.publicKey, { site_url: "https://app.example.com" });
    assertEquals([anon.status, anon.body.error.code], [403, "FORBIDDEN"]);
    for (
      const bad of [
        { site_url: "ftp://app.example.com" },
        { site_url: "app.example.com" },
        { site_url: "https://*.example.com" },
        { site_url: "https://app.example.com/a b" },
        { site_url: `https://app.example.com/${"x".repeat(2100)}` },
        { site_url: 42 },
        { redirect_urls: "https://app.example.com" },
        { redirect_urls: ["javascript:alert(1)"] },
        { redirect_urls: ["myapp://callback"] },
        { redirect_urls: ["https://app.example.com/\u0001"] },
        { redirect_urls: Array.from({ length: 101 }, (_, i) => `https://app${i}.example.com`) },
        { unknown: true },
      ]
    ) {
      const res = await patchAuthSettings(s.url, s.p.secretKey, bad);
      assertEquals([res.status, res.body.error.code], [400, "VALIDATION_ERROR"], JSON.stringify(bad));
    }
    const changed = await patchAuthSettings(s.url, s.p.secretKey, {
      site_url: "https://app.example.com",
      redirect_urls: ["https://*.example.com/**", "http://localhost:3000/**"],
    });
    assertEquals(changed.body.data, {
      site_url: "https://app.example.com",
      redirect_urls: ["https://*.example.com/**", "http://localhost:3000/**"],
    });
    const reset = await patchAuthSettings(s.url, s.p.secretKey, { site_url: null });
    assertEquals(reset.body.data, {
      site_url: null,
      redirect_urls: ["https://*.example.com/**", "http://localhost:3000/**"],
    });
  } finally {
    await s.close();
  }
});

Deno.test("supabase-js recovery link, implicit flow: the fragment's session works; spent once; refused landings go to site_url", async () => {
  const { sink, s, close } = await recoveryPlatform({
    site_url: "https://app.example.com",
    redirect_urls: ["http://localhost:3000/**"],
  });
  try {
    const supabase = client(s.url, s.p.publicKey);
    const reset = await supabase.auth.resetPasswordForEmail("ada@example.com", {
      redirectTo: "http://localhost:3000/reset",
    });
    assertEquals(reset, { data: {}, error: null });
    const [mail] = await mailsFor(sink, "ada@example.com", 1);
    const link = linkOf(mail!.raw)!;
    assertEquals(new URL(link).origin + new URL(link).pathname, `${s.url}/auth/v1/verify`);
    assertEquals(new URL(link).searchParams.get("type"), "recovery");
    assertEquals(new URL(link).searchParams.get("token"), tokenHashOf(mail!.raw));
    assertEquals(new URL(link).searchParams.get("redirect_to"), "http://localhost:3000/reset");

    // The link needs no API key: a browser opens it.
    const location = await follow(link);
    assert(location.startsWith("http://localhost:3000/reset#"), location);
    const fragment = fragmentOf(location);
    assertEquals(
      [...fragment.keys()],
      ["access_token", "expires_at", "expires_in", "refresh_token", "token_type", "type"],
    );
    assertEquals([fragment.get("token_type"), fragment.get("type")], ["bearer", "recovery"]);

    const browser = client(s.url, s.p.publicKey);
    const session = await browser.auth.setSession({
      access_token: fragment.get("access_token")!,
      refresh_token: fragment.get("refresh_token")!,
    });
    assertEquals(session.error, null);
    const user = await browser.auth.getUser();
    assertEquals(user.data.user?.email, "ada@example.com");
    assertEquals((await browser.auth.updateUser({ password: "quince-harbour-77" })).error, null);
    const signIn = await client(s.url, s.p.publicKey).auth.signInWithPassword({
      email: "ada@example.com",
      password: "quince-harbour-77",
    });
    assertEquals(signIn.error, null);

    // Spent: the same link lands with GoTrue's error, in the fragment.
    const again = await follow(link);
    assertEquals(
      again,
      "http://localhost:3000/reset#error=access_denied&error_code=otp_expired&error_description=Email+link+is+invalid+or+has+expired",
    );

    // A landing the project does not allow: the mail's link goes to the site URL instead.
    await supabase.auth.resetPasswordForEmail("ada@example.com", {
      redirectTo: "https://evil.example.net/steal",
    });
    const [, second] = await mailsFor(sink, "ada@example.com", 2);
    const safe = linkOf(second!.raw)!;
    assertEquals(new URL(safe).searchParams.get("redirect_to"), "https://app.example.com");
    assert(!decodedOf(second!.raw).includes("evil.example.net"));

    // A link whose redirect_to was changed after the mail: the site URL too, never the changed address.
    const forged = new URL(safe);
    forged.searchParams.set("redirect_to", "https://evil.example.net/steal");
    const landed = await follow(forged.toString());
    assert(landed.startsWith("https://app.example.com/#access_token="), landed);
    assertEquals(fragmentOf(landed).get("type"), "recovery");
  } finally {
    await close();
  }
});

Deno.test("supabase-js recovery link: no site URL and no allowed landing, no link (the code still works)", async () => {
  const { sink, s, close } = await recoveryPlatform({ redirect_urls: ["https://app.example.com/**"] });
  try {
    const supabase = client(s.url, s.p.publicKey);
    await supabase.auth.resetPasswordForEmail("ada@example.com", { redirectTo: "https://evil.example.net/" });
    const [mail] = await mailsFor(sink, "ada@example.com", 1);
    assertEquals(linkOf(mail!.raw), undefined);
    const verified = await supabase.auth.verifyOtp({
      email: "ada@example.com",
      token: codeOf(mail!.raw),
      type: "recovery",
    });
    assertEquals(verified.error, null);
  } finally {
    await close();
  }
});

Deno.test("recovery link: a Host header that does not name the project gets a mail without a link", async () => {
  const { sink, s, close } = await recoveryPlatform({ site_url: "https://app.example.com" });
  try {
    // An IP address selects the default project, but it is the requester's to choose: no link may point there.
    const res = await rawRequest(Number(new URL(s.url).port), {
      method: "POST",
      path: "/auth/v1/recover",
      host: "203.0.113.7",
      headers: { apikey: s.p.publicKey, "content-type": "application/json" },
      body: JSON.stringify({ email: "ada@example.com" }),
    });
    assertEquals(res.status, 200);
    const [mail] = await mailsFor(sink, "ada@example.com", 1);
    assertEquals(linkOf(mail!.raw), undefined);
    assert(!decodedOf(mail!.raw).includes("203.0.113.7"));
    const verified = await client(s.url, s.p.publicKey).auth.verifyOtp({
      email: "ada@example.com",
      token: codeOf(mail!.raw),
      type: "recovery",
    });
    assertEquals(verified.error, null);
  } finally {
    await close();
  }
});

/** An in-memory storage for auth-js: what a browser's localStorage would hold. */
function memoryStorage() {
  const items = new Map<string, string>();
  return {
    items,
    getItem: (key: string) => items.get(key) ?? null,
    setItem: (key: string, value: string) => void items.set(key, value),
    removeItem: (key: string) => void items.delete(key),
  };
}

async function exchange(url: string, key: string, body: Record<string, unknown>) {
  const res = await fetch(`${url}/auth/v1/token?grant_type=pkce`, {
    method: "POST",
    headers: { apikey: key, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

Deno.test("supabase-js recovery link, PKCE: ?code= exchanged once for a session; a wrong verifier is refused", async () => {
  const { sink, s, close } = await recoveryPlatform({ site_url: "http://localhost:3000" });
  try {
    const storage = memoryStorage();
    const supabase = createClient(s.url, s.p.publicKey, {
      auth: {
        flowType: "pkce",
        storage,
        persistSession: true,
        autoRefreshToken: false,
        detectSessionInUrl: false,
      },
    });
    const reset = await supabase.auth.resetPasswordForEmail("ada@example.com", {
      redirectTo: "http://localhost:3000/update-password",
    });
    assertEquals(reset, { data: {}, error: null });
    const verifierKey = [...storage.items.keys()].find((k) => k.endsWith("-code-verifier"))!;
    const verifier = storage.items.get(verifierKey)!.split("/")[0]!;
    const [mail] = await mailsFor(sink, "ada@example.com", 1);
    const link = linkOf(mail!.raw)!;
    assertMatch(new URL(link).searchParams.get("token")!, /^pkce_[0-9a-f]{64}$/);

    const location = await follow(link);
    const landed = new URL(location);
    assertEquals(landed.origin + landed.pathname, "http://localhost:3000/update-password");
    assertEquals(landed.hash, "");
    const code = landed.searchParams.get("code")!;
    assertMatch(code, /^[0-9a-f-]{36}$/);

    const wrong = await exchange(s.url, s.p.publicKey, { auth_code: code, code_verifier: "x".repeat(43) });
    assertEquals([wrong.status, wrong.body.error_code], [400, "bad_code_verifier"]);
    const empty = await exchange(s.url, s.p.publicKey, { auth_code: code });
    assertEquals([empty.status, empty.body.error_code], [400, "validation_failed"]); // GoTrue's bad request

    const exchanged = await supabase.auth.exchangeCodeForSession(code);
    assertEquals(exchanged.error, null);
    assertEquals(exchanged.data.user?.email, "ada@example.com");
    assertEquals((await supabase.auth.getUser()).data.user?.email, "ada@example.com");
    assertEquals((await supabase.auth.updateUser({ password: "quince-harbour-77" })).error, null);

    // The code works once, even with the right verifier.
    const twice = await exchange(s.url, s.p.publicKey, { auth_code: code, code_verifier: verifier });
    assertEquals([twice.status, twice.body.error_code], [404, "flow_state_not_found"]);

    // The spent link lands with the error in the query too, where auth-js's PKCE flow reads it.
    const spent = new URL(await follow(link));
    assertEquals(spent.searchParams.get("error_code"), "otp_expired");
    assertEquals(fragmentOf(spent.toString()).get("error"), "access_denied");
  } finally {
    await close();
  }
});
