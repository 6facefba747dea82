/**
 * Password recovery with supabase-js, unchanged, against a real platform whose project mails through a real SMTP
 * server: resetPasswordForEmail → the mail's code → verifyOtp → updateUser → the new password signs in.
 */
import { AuthApiError, createClient, type SupabaseClient } from "@supabase/supabase-js";
import { createClient as platformClient } from "../client/mod.ts";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { servePlatform } from "./client_fixture.ts";
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
