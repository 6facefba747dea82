/**
 * supabase-js, unchanged, against a real platform: only its URL and key are the platform's. Auth on the GoTrue
 * mount (/auth/v1), data on /rest/v1 under RLS as the signed-in user, functions on /functions/v1.
 */
import {
  AuthApiError,
  AuthWeakPasswordError,
  createClient,
  FunctionsHttpError,
  FunctionsRelayError,
  type SupabaseClient,
} from "@supabase/supabase-js";
import { assert, assertEquals } from "./assert.ts";
import { servePlatform } from "./client_fixture.ts";
import { setUpSupabaseApp } from "./supabase_js_fixture.ts";

const options = { auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false } };

function client(url: string, key: string): SupabaseClient {
  return createClient(url, key, options);
}

Deno.test("supabase-js auth: sign-up, sign-in, user, update, refresh rotation and reuse, sign-out", async () => {
  const s = await servePlatform();
  try {
    const supabase = client(s.url, s.p.publicKey);
    const up = await supabase.auth.signUp({
      email: "Ada@Example.com",
      password: "plum-orchard-42",
      options: { data: { name: "Ada" }, captchaToken: "ignored" },
    });
    assertEquals(up.error, null);
    const user = up.data.user!;
    assertEquals(user.email, "ada@example.com");
    assertEquals(user.aud, "authenticated");
    assertEquals(user.role, "authenticated");
    assertEquals(user.app_metadata, { provider: "email", providers: ["email"] });
    assertEquals(user.user_metadata, { name: "Ada" });
    assertEquals(user.identities?.[0]?.provider, "email");
    assert(user.email_confirmed_at && user.last_sign_in_at && user.updated_at);
    assertEquals(up.data.session!.token_type, "bearer");
    assertEquals(up.data.session!.expires_in, 3600);

    // The same email again, a weak password, a wrong password: GoTrue's errors.
    const again = await client(s.url, s.p.publicKey).auth.signUp({
      email: "ada@example.com",
      password: "plum-orchard-42",
    });
    assert(again.error instanceof AuthApiError);
    assertEquals([again.error.status, again.error.code], [422, "user_already_exists"]);
    const weak = await client(s.url, s.p.publicKey).auth.signUp({
      email: "bob@example.com",
      password: "password",
    });
    assert(weak.error instanceof AuthWeakPasswordError, String(weak.error));
    assertEquals([weak.error.status, weak.error.code, weak.error.reasons], [422, "weak_password", ["pwned"]]);
    const short = await client(s.url, s.p.publicKey).auth.signUp({
      email: "bob@example.com",
      password: "x1",
    });
    assert(short.error instanceof AuthWeakPasswordError);
    assertEquals(short.error.reasons, ["length"]);
    const wrong = await client(s.url, s.p.publicKey).auth.signInWithPassword({
      email: "ada@example.com",
      password: "not-her-password",
    });
    assert(wrong.error instanceof AuthApiError);
    assertEquals([wrong.error.status, wrong.error.code, wrong.error.message], [
      400,
      "invalid_credentials",
      "Invalid login credentials",
    ]);

    const signedIn = await supabase.auth.signInWithPassword({
      email: "ada@example.com",
      password: "plum-orchard-42",
    });
    assertEquals(signedIn.error, null);
    assertEquals(signedIn.data.user!.id, user.id);

    const got = await supabase.auth.getUser();
    assertEquals(got.error, null);
    assertEquals(got.data.user!.id, user.id);

    // getClaims verifies the ES256 access token with the keys of /auth/v1/.well-known/jwks.json.
    const claims = await supabase.auth.getClaims();
    assertEquals(claims.error, null);
    assertEquals([claims.data!.claims.sub, claims.data!.claims.role], [user.id, "authenticated"]);

    const updated = await supabase.auth.updateUser({ data: { city: "London" } });
    assertEquals(updated.error, null);
    assertEquals(updated.data.user!.user_metadata, { name: "Ada", city: "London" });
    const removed = await supabase.auth.updateUser({ data: { city: null } });
    assertEquals(removed.data.user!.user_metadata, { name: "Ada" });
    const badPassword = await supabase.auth.updateUser({ password: "12345678" });
    assert(badPassword.error instanceof AuthWeakPasswordError);

    // Refresh rotates the refresh token; spending the old one again is refused and revokes the session.
    const before = (await supabase.auth.getSession()).data.session!;
    const refreshed = await supabase.auth.refreshSession();
    assertEquals(refreshed.error, null);
    const after = refreshed.data.session!;
    assert(after.refresh_token !== before.refresh_token);
    assertEquals(refreshed.data.user!.id, user.id);
    const thief = client(s.url, s.p.publicKey);
    const reuse = await thief.auth.refreshSession({ refresh_token: before.refresh_token });
    assert(reuse.error instanceof AuthApiError, String(reuse.error));
    assertEquals([reuse.error.status, reuse.error.code], [400, "refresh_token_already_used"]);
    const revoked = await supabase.auth.getUser(after.access_token);
    assertEquals(revoked.error?.name, "AuthSessionMissingError");

    // A new session: the password changes, the old one no longer signs in; sign-out ends the session.
    const fresh = client(s.url, s.p.publicKey);
    assertEquals(
      (await fresh.auth.signInWithPassword({ email: "ada@example.com", password: "plum-orchard-42" })).error,
      null,
    );
    assertEquals((await fresh.auth.updateUser({ password: "quince-meadow-7" })).error, null);
    const oldPassword = await client(s.url, s.p.publicKey).auth.signInWithPassword({
      email: "ada@example.com",
      password: "plum-orchard-42",
    });
    assertEquals(oldPassword.error?.code, "invalid_credentials");
    const token = (await fresh.auth.getSession()).data.session!.access_token;
    assertEquals((await fresh.auth.signOut()).error, null);
    assertEquals((await fresh.auth.getSession()).data.session, null);
    const ended = await fresh.auth.getUser(token);
    assertEquals(ended.error?.name, "AuthSessionMissingError");

    // scope "others" ends the other sessions only.
    const a = client(s.url, s.p.publicKey);
    const b = client(s.url, s.p.publicKey);
    await a.auth.signInWithPassword({ email: "ada@example.com", password: "quince-meadow-7" });
    await b.auth.signInWithPassword({ email: "ada@example.com", password: "quince-meadow-7" });
    const bToken = (await b.auth.getSession()).data.session!.access_token;
    assertEquals((await a.auth.signOut({ scope: "others" })).error, null);
    assertEquals((await a.auth.getUser()).error, null);
    assertEquals((await b.auth.getUser(bToken)).error?.name, "AuthSessionMissingError");
  } finally {
    await s.close();
  }
});

Deno.test("supabase-js: from() and rpc() as the signed-in user under RLS", async () => {
  const s = await servePlatform();
  try {
    await setUpSupabaseApp(s.p);
    const alice = client(s.url, s.p.publicKey);
    const bob = client(s.url, s.p.publicKey);
    assertEquals(
      (await alice.auth.signUp({ email: "alice@example.com", password: "plum-orchard-42" })).error,
      null,
    );
    assertEquals(
      (await bob.auth.signUp({ email: "bob@example.com", password: "quince-meadow-7" })).error,
      null,
    );
    const aliceId = (await alice.auth.getUser()).data.user!.id;

    const inserted = await alice.from("notes").insert({ body: "alice's" }).select("body, owner");
    assertEquals(inserted.error, null);
    assertEquals(inserted.data, [{ body: "alice's", owner: aliceId }]);
    assertEquals((await alice.from("notes").select("body")).data, [{ body: "alice's" }]);
    assertEquals((await bob.from("notes").select("body")).data, []);
    assertEquals((await alice.rpc("my_note_count")).data, 1);
    assertEquals((await bob.rpc("my_note_count")).data, 0);
    // Another user's row cannot be written under RLS.
    const forged = await bob.from("notes").insert({ body: "forged", owner: aliceId });
    assertEquals(forged.error?.code, "42501");
    // The anon key alone sees nothing.
    assertEquals((await client(s.url, s.p.publicKey).from("notes").select("body")).data, []);
  } finally {
    await s.close();
  }
});

Deno.test("supabase-js functions.invoke: bodies, GET with query, sub-path, stream, error status, relay error", async () => {
  const s = await servePlatform();
  try {
    await setUpSupabaseApp(s.p);
    const supabase = client(s.url, s.p.publicKey);

    const jsonCall = await supabase.functions.invoke("echo", {
      body: { hello: "world" },
      headers: { "x-custom": "yes" },
    });
    assertEquals(jsonCall.error, null);
    assertEquals(jsonCall.data.method, "POST");
    assertEquals(jsonCall.data.url, "http://localhost/echo");
    assertEquals(jsonCall.data.type, "application/json");
    assertEquals(jsonCall.data.custom, "yes");
    assertEquals([jsonCall.data.apikey, jsonCall.data.authorization], [null, null]);
    assertEquals(JSON.parse(atob(jsonCall.data.body)), { hello: "world" });
    assertEquals(jsonCall.data.user, null);

    const text = await supabase.functions.invoke("text", { body: "there" });
    assertEquals([text.error, text.data], [null, "hello there"]);

    const bytes = new Uint8Array([0, 1, 2, 250, 255]);
    const binary = await supabase.functions.invoke("bytes", { body: bytes.buffer });
    assertEquals(binary.error, null);
    assert(binary.data instanceof Blob);
    assertEquals([...new Uint8Array(await binary.data.arrayBuffer())], [255, 254, 253, 5, 0]);

    const get = await supabase.functions.invoke("echo/items/7?sort=desc&q=a%20b", { method: "GET" });
    assertEquals(get.error, null);
    assertEquals([get.data.method, get.data.url, get.data.body], [
      "GET",
      "http://localhost/echo/items/7?sort=desc&q=a%20b",
      "",
    ]);

    const put = await supabase.functions.invoke("echo", {
      method: "PUT",
      body: "a=1&b=2",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    assertEquals([put.data.method, put.data.type, atob(put.data.body)], [
      "PUT",
      "application/x-www-form-urlencoded",
      "a=1&b=2",
    ]);

    const stream = await supabase.functions.invoke("stream");
    assertEquals(stream.error, null);
    assert(stream.data instanceof Response);
    assertEquals(await stream.data.text(), "data: 0\n\ndata: 1\n\ndata: 2\n\n");

    const teapot = await supabase.functions.invoke("teapot");
    assert(teapot.error instanceof FunctionsHttpError, String(teapot.error));
    assertEquals(teapot.error.context.status, 418);
    assertEquals(teapot.error.context.headers.get("x-why"), "tea");
    assertEquals(await teapot.error.context.json(), { error: "short and stout" });

    const missing = await supabase.functions.invoke("nowhere");
    assert(missing.error instanceof FunctionsRelayError, String(missing.error));
    assertEquals(missing.error.context.status, 404);
    assertEquals((await missing.error.context.json()).error.code, "NOT_FOUND");

    // Signed in: the function receives the verified user, never the token itself.
    const { data } = await supabase.auth.signUp({ email: "fn@example.com", password: "plum-orchard-42" });
    const asUser = await supabase.functions.invoke("echo", { body: {} });
    assertEquals([asUser.data.user, asUser.data.authorization], [data.user!.id, null]);
  } finally {
    await s.close();
  }
});
