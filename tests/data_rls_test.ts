import { assertEquals } from "./assert.ts";
import { ownerSql, restClient } from "./data_fixture.ts";
import { type Json, startPlatform, type TestPlatform } from "./harness.ts";

const POLICIES_SQL = `
create table notes (
  id serial primary key,
  owner uuid not null default auth.uid(),
  body text not null,
  public boolean not null default false
);
alter table notes enable row level security;
create policy notes_read on notes for select using (public or owner = auth.uid());
create policy notes_insert on notes for insert to authenticated with check (owner = auth.uid());
create policy notes_update on notes for update to authenticated
  using (owner = auth.uid()) with check (owner = auth.uid());
create policy notes_delete on notes for delete to authenticated using (owner = auth.uid());

create table profiles (email text primary key, bio text);
alter table profiles enable row level security;
create policy profiles_by_email on profiles for all to authenticated
  using (email = auth.jwt() ->> 'email') with check (email = auth.jwt() ->> 'email');

create table audit (
  id serial primary key,
  role text default auth.role(),
  sub uuid default auth.uid(),
  email text default auth.email()
);
`;

interface User {
  id: string;
  email: string;
  token: string;
}

async function signUp(p: TestPlatform, email: string): Promise<User> {
  const res = await p.fetch("/v1/auth/signup", {
    method: "POST",
    headers: { apikey: p.publicKey },
    json: { email, password: "correct-horse-1" },
  });
  const body = await res.json();
  assertEquals(res.status, 200, JSON.stringify(body));
  return { id: body.data.user.id, email, token: body.data.session.access_token };
}

Deno.test("data API under row-level security", async (t) => {
  const p = await startPlatform();
  try {
    await ownerSql(p, POLICIES_SQL);
    const a = await signUp(p, "a@example.com");
    const b = await signUp(p, "b@example.com");
    await ownerSql(
      p,
      `insert into notes (owner, body, public) values
        ('${a.id}', 'a private', false), ('${a.id}', 'a public', true),
        ('${b.id}', 'b private', false), ('${b.id}', 'b public', true);
       insert into profiles values ('a@example.com', 'I am A'), ('b@example.com', 'I am B');`,
    );
    const as = (user: User | null, key = p.publicKey): Record<string, string> =>
      user ? { apikey: key, authorization: `Bearer ${user.token}` } : { apikey: key };
    const bodies = async (headers: Record<string, string>, path = "/v1/db/notes?select=body&order=id") => {
      const res = await p.fetch(path, { headers });
      const json = await res.json();
      assertEquals(res.status, 200, JSON.stringify(json));
      return json.data.map((r: Json) => r.body ?? r.bio);
    };
    const allNotes = async () =>
      (await ownerSql(p, "select body, owner from notes order by id")) as { body: string; owner: string }[];

    await t.step("user A reads A's rows and public rows only", async () => {
      assertEquals(await bodies(as(a)), ["a private", "a public", "b public"]);
      assertEquals(await bodies(as(b)), ["a public", "b private", "b public"]);
    });

    await t.step("anon sees only public rows", async () => {
      assertEquals(await bodies(as(null)), ["a public", "b public"]);
    });

    await t.step("service_role and admin see everything (bypass RLS)", async () => {
      assertEquals(await bodies({ apikey: p.secretKey }), ["a private", "a public", "b private", "b public"]);
      const admin = { authorization: `Bearer ${await p.adminToken()}` };
      assertEquals(await bodies(admin), ["a private", "a public", "b private", "b public"]);
    });

    await t.step("postgrest-js with a user token gets the same view", async () => {
      const { data, error } = await restClient(p, p.publicKey, a.token).from("notes").select("body").order(
        "id",
      );
      assertEquals(error, null);
      assertEquals(data?.map((r: Json) => r.body), ["a private", "a public", "b public"]);
    });

    await t.step("A inserts A's row; the owner defaults to auth.uid()", async () => {
      const res = await p.fetch("/v1/db/notes?select=body,owner", {
        method: "POST",
        headers: as(a),
        json: { body: "a new" },
      });
      assertEquals(res.status, 201);
      assertEquals((await res.json()).data, [{ body: "a new", owner: a.id }]);
    });

    await t.step("an insert violating with check is 403 42501 (authenticated), 401 (anon)", async () => {
      const before = await allNotes();
      const forged = await p.fetch("/v1/db/notes", {
        method: "POST",
        headers: as(a),
        json: { body: "forged", owner: b.id },
      });
      const body = await forged.json();
      assertEquals([forged.status, body.error.code, body.error.type], [403, "42501", "forbidden"]);
      const anon = await p.fetch("/rest/v1/notes", {
        method: "POST",
        headers: as(null),
        json: { body: "x" },
      });
      assertEquals([anon.status, (await anon.json()).code], [401, "42501"]);
      assertEquals(await allNotes(), before);
    });

    await t.step("A cannot update or delete B's rows", async () => {
      const before = await allNotes();
      const upd = await p.fetch("/v1/db/notes?body=eq.b private", {
        method: "PATCH",
        headers: as(a),
        json: { body: "hacked" },
      });
      assertEquals([upd.status, (await upd.json()).data], [200, []]);
      const del = await p.fetch("/v1/db/notes?body=like.b*", { method: "DELETE", headers: as(a) });
      assertEquals([del.status, (await del.json()).data], [200, []]);
      assertEquals(await allNotes(), before);
    });

    await t.step("A cannot give A's row to B (with check on update)", async () => {
      const res = await p.fetch("/v1/db/notes?body=eq.a private", {
        method: "PATCH",
        headers: as(a),
        json: { owner: b.id },
      });
      assertEquals([res.status, (await res.json()).error.code], [403, "42501"]);
    });

    await t.step("A updates and deletes A's own rows", async () => {
      const upd = await p.fetch("/v1/db/notes?body=eq.a new&select=body", {
        method: "PATCH",
        headers: as(a),
        json: { body: "a edited" },
      });
      assertEquals((await upd.json()).data, [{ body: "a edited" }]);
      const del = await p.fetch("/v1/db/notes?body=eq.a edited&select=body", {
        method: "DELETE",
        headers: as(a),
      });
      assertEquals((await del.json()).data, [{ body: "a edited" }]);
    });

    await t.step("a policy on auth.jwt() ->> 'email'", async () => {
      assertEquals(await bodies(as(a), "/v1/db/profiles?select=bio"), ["I am A"]);
      assertEquals(await bodies(as(null), "/v1/db/profiles?select=bio"), []);
      const other = await p.fetch("/v1/db/profiles", {
        method: "POST",
        headers: as(a),
        json: { email: "c@example.com", bio: "not mine" },
      });
      assertEquals([other.status, (await other.json()).error.code], [403, "42501"]);
    });

    await t.step("auth.role(), auth.uid(), auth.email() see the caller's claims", async () => {
      const row = async (headers: Record<string, string>) => {
        const res = await p.fetch("/v1/db/audit?select=role,sub,email", {
          method: "POST",
          headers,
          json: {},
        });
        return (await res.json()).data[0];
      };
      assertEquals(await row(as(a)), { role: "authenticated", sub: a.id, email: a.email });
      assertEquals(await row(as(null)), { role: "anon", sub: null, email: null });
      assertEquals(await row({ apikey: p.secretKey }), { role: "service_role", sub: null, email: null });
    });

    await t.step(
      "auth.uid() follows claims that the request's SQL sets itself, and none outside a request",
      async () => {
        // The data API hands auth.uid() the caller's subject as a shortcut; SQL that sets other claims (to act
        // as another user, as test helpers do) gets the subject of the claims it set.
        await ownerSql(
          p,
          `create function act_as(who text) returns json language plpgsql as $$ begin
           perform set_config('request.jwt.claims', json_build_object('sub', who)::text, true);
           return json_build_object('sub', auth.uid(), 'seen', (select count(*) from notes));
         end $$;
         create function uid_now() returns uuid language sql stable as $$ select auth.uid() $$;`,
        );
        const call = async (fn: string, body: Json) => {
          const res = await p.fetch(`/v1/db/rpc/${fn}`, { method: "POST", headers: as(a), json: body });
          return (await res.json()).data;
        };
        assertEquals(await call("uid_now", {}), a.id);
        // As B: B's own rows (private and public) and A's public one.
        assertEquals(await call("act_as", { who: b.id }), { sub: b.id, seen: 3 });
        assertEquals(await call("act_as", { who: "" }), { sub: null, seen: 2 });
        assertEquals(await ownerSql(p, "select auth.uid() as sub"), [{ sub: null }]);
      },
    );

    await t.step("a table without grants is 401 42501 for anon, 403 for a user", async () => {
      await ownerSql(p, "create table vault (id int); revoke all on vault from anon, authenticated;");
      const anon = await p.fetch("/rest/v1/vault", { headers: as(null) });
      assertEquals([anon.status, (await anon.json()).code], [401, "42501"]);
      const user = await p.fetch("/v1/db/vault", { headers: as(a) });
      assertEquals([user.status, (await user.json()).error.code], [403, "42501"]);
      const service = await p.fetch("/v1/db/vault", { headers: { apikey: p.secretKey } });
      assertEquals(service.status, 200);
      await service.body?.cancel();
    });

    await t.step("a bad or foreign token is 401", async () => {
      const res = await p.fetch("/v1/db/notes", {
        headers: { apikey: p.publicKey, authorization: "Bearer a.b.c" },
      });
      assertEquals(res.status, 401);
      await res.body?.cancel();
      const none = await p.fetch("/rest/v1/notes");
      assertEquals(none.status, 401);
      assertEquals(typeof (await none.json()).code, "string");
    });

    await t.step("the same table in two projects never leaks", async () => {
      await p.platform.projects.create({ ref: "other" });
      const keys = await p.platform.projects.keys("other");
      const host = "http://other.localhost";
      const res = await p.fetch(`${host}/v1/sql`, {
        method: "POST",
        headers: { apikey: keys.secret_key },
        json: {
          query:
            "create table notes (id serial primary key, body text); insert into notes (body) values ('other');",
        },
      });
      assertEquals(res.status, 200);
      await res.body?.cancel();
      const other = await p.fetch(`${host}/v1/db/notes?select=body`, {
        headers: { apikey: keys.secret_key },
      });
      assertEquals((await other.json()).data, [{ body: "other" }]);
      const mine = await bodies({ apikey: p.secretKey }, "/v1/db/notes?select=body&order=id");
      assertEquals(mine.includes("other"), false);
      const crossKey = await p.fetch(`${host}/v1/db/notes`, { headers: { apikey: p.secretKey } });
      assertEquals(crossKey.status, 401);
      await crossKey.body?.cancel();
      const crossToken = await p.fetch(`${host}/v1/db/notes`, {
        headers: { apikey: keys.public_key, authorization: `Bearer ${a.token}` },
      });
      assertEquals(crossToken.status, 401);
      await crossToken.body?.cancel();
    });
  } finally {
    await p.close();
  }
});
