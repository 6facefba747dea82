import { createClient } from "../client/mod.ts";
import { assertEquals } from "./assert.ts";
import { rejects, servePlatform } from "./client_fixture.ts";

const SETUP =
  `create table public.todos (id bigserial primary key, title text not null, owner uuid default auth.uid());
alter table public.todos enable row level security;
create policy own on public.todos for all to authenticated using (owner = auth.uid()) with check (owner = auth.uid());`;

Deno.test("client db and sql: postgrest-js on /rest/v1 with the session's token", async () => {
  const s = await servePlatform();
  const admin = createClient(s.url, s.p.secretKey);
  const platform = createClient(s.url, s.p.publicKey);
  try {
    assertEquals(await admin.sql(SETUP), []);
    assertEquals((await rejects(() => admin.sql("select nope"))).status, 400);
    assertEquals((await rejects(() => platform.sql("select 1"))).code, "FORBIDDEN");

    await platform.auth.signUp({ email: "db@example.com", password: "correct horse 1" });
    const inserted = await platform.db.from("todos").insert({ title: "write the client" }).select("title")
      .single();
    assertEquals(inserted.error, null);
    assertEquals(inserted.data, { title: "write the client" });
    const { data } = await platform.db.from("todos").select("title");
    assertEquals(data, [{ title: "write the client" }]);

    // db keeps postgrest-js's shape: errors are returned, not thrown.
    const missing = await platform.db.from("nope").select("*");
    assertEquals([missing.data, missing.status, missing.error?.code], [null, 404, "PGRST205"]);

    // Signed out, the same read is anon's: RLS hides the row.
    await platform.auth.signOut();
    const anon = await platform.db.from("todos").select("title");
    assertEquals([anon.error, anon.data], [null, []]);
  } finally {
    admin.close();
    platform.close();
    await s.close();
  }
});
