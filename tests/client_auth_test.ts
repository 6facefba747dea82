import { createClient, type Session } from "../client/mod.ts";
import { assert, assertEquals, within } from "./assert.ts";
import { rejects, servePlatform } from "./client_fixture.ts";

Deno.test("client auth: sign up, sign in, user, refresh, sign out, storage and auto-refresh", async (t) => {
  const s = await servePlatform();
  try {
    await t.step("signUp then getUser; a taken email is PlatformError 409 CONFLICT", async () => {
      const platform = createClient(s.url, s.p.publicKey);
      const { user, session } = await platform.auth.signUp({
        email: "ada@example.com",
        password: "correct horse 1",
        data: { name: "Ada" },
      });
      assertEquals(user.email, "ada@example.com");
      assert(session.access_token);
      assertEquals((await platform.auth.getUser()).id, user.id);
      const err = await rejects(() =>
        platform.auth.signUp({ email: "ada@example.com", password: "correct horse 1" })
      );
      assertEquals([err.status, err.code, err.type], [409, "CONFLICT", "conflict"]);
      assert(err.requestId);
      platform.close();
    });

    await t.step("signInWithPassword; a wrong password is 401", async () => {
      const platform = createClient(s.url, s.p.publicKey);
      const events: string[] = [];
      platform.auth.onAuthStateChange((event) => events.push(event));
      const { user } = await platform.auth.signInWithPassword({
        email: "ada@example.com",
        password: "correct horse 1",
      });
      assertEquals(user.user_metadata, { name: "Ada" });
      const err = await rejects(() =>
        platform.auth.signInWithPassword({ email: "ada@example.com", password: "wrong password 1" })
      );
      assertEquals(err.status, 401);
      assertEquals(events, ["SIGNED_IN"]);
      platform.close();
    });

    await t.step("refreshSession rotates the refresh token; without a session it is 401", async () => {
      const platform = createClient(s.url, s.p.publicKey);
      const { session } = await platform.auth.signInWithPassword({
        email: "ada@example.com",
        password: "correct horse 1",
      });
      const [a, b] = await Promise.all([platform.auth.refreshSession(), platform.auth.refreshSession()]);
      assertEquals(a, b); // one refresh for concurrent callers: the token rotates
      assert(a.refresh_token !== session.refresh_token);
      assertEquals((await platform.auth.getUser()).email, "ada@example.com");
      const anon = createClient(s.url, s.p.publicKey);
      assertEquals((await rejects(() => anon.auth.refreshSession())).status, 401);
      assertEquals((await rejects(() => anon.auth.getUser())).status, 401);
      platform.close();
    });

    await t.step("signOut ends the session (global: every session); getUser is then 401", async () => {
      const one = createClient(s.url, s.p.publicKey);
      const two = createClient(s.url, s.p.publicKey);
      await one.auth.signInWithPassword({ email: "ada@example.com", password: "correct horse 1" });
      await two.auth.signInWithPassword({ email: "ada@example.com", password: "correct horse 1" });
      const token = (await two.auth.getSession())!.access_token;
      await one.auth.signOut({ scope: "global" });
      assertEquals(await one.auth.getSession(), null);
      const err = await rejects(() => two.auth.getUser());
      assertEquals([err.status, err.code], [401, "INVALID_TOKEN"]);
      assert(token);
      one.close();
      two.close();
    });

    await t.step("a storage adapter keeps the session for the next client", async () => {
      const items = new Map<string, string>();
      const storage = {
        getItem: (k: string) => items.get(k) ?? null,
        setItem: (k: string, v: string) => void items.set(k, v),
        removeItem: (k: string) => void items.delete(k),
      };
      const first = createClient(s.url, s.p.publicKey, { auth: { storage } });
      await first.auth.signInWithPassword({ email: "ada@example.com", password: "correct horse 1" });
      first.close();
      const second = createClient(s.url, s.p.publicKey, { auth: { storage } });
      assertEquals((await second.auth.getUser()).email, "ada@example.com");
      await second.auth.signOut();
      assertEquals(items.size, 0);
      second.close();
    });

    await t.step("the access token is refreshed on a timer before it expires", async () => {
      // Refreshing 3598 s before a 3600 s expiry: the timer fires about 2 s after sign-in.
      const platform = createClient(s.url, s.p.publicKey, { auth: { refreshMarginSeconds: 3598 } });
      const refreshed = Promise.withResolvers<Session>();
      platform.auth.onAuthStateChange((event, session) => {
        if (event === "TOKEN_REFRESHED") refreshed.resolve(session!);
      });
      const { session } = await platform.auth.signInWithPassword({
        email: "ada@example.com",
        password: "correct horse 1",
      });
      // A liveness bound, not a timing claim: a timer that never fires fails here instead of hanging the suite.
      const next = await within(refreshed.promise, 60_000, "the timer's TOKEN_REFRESHED");
      assert(next.refresh_token !== session.refresh_token);
      assertEquals((await platform.auth.getSession())!.access_token, next.access_token);
      assertEquals((await platform.auth.getUser()).email, "ada@example.com");
      platform.close();
    });
  } finally {
    await s.close();
  }
});
