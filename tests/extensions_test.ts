// Supabase projects enable PostgreSQL's contrib modules in their migrations (`create extension if not exists
// "uuid-ossp" with schema extensions`, pgcrypto's crypt(), pg_trgm's similarity()…). The same migrations must run
// on the embedded default as on a PostgreSQL server with its contrib package, as the project's owner.
import { assertEquals } from "./assert.ts";
import { json, startPlatform } from "./harness.ts";

const MIGRATION = `
create extension if not exists pgcrypto with schema extensions;
create extension if not exists "uuid-ossp" with schema extensions;
create extension if not exists pg_trgm with schema extensions;
create extension if not exists citext with schema extensions;
create extension if not exists hstore with schema extensions;
create extension if not exists ltree with schema extensions;
create extension if not exists unaccent with schema extensions;
create extension if not exists fuzzystrmatch with schema extensions;
create extension if not exists btree_gist with schema extensions;
create extension if not exists intarray with schema extensions;
create table public.people (
  id uuid primary key default extensions.uuid_generate_v4(),
  email extensions.citext unique,
  password text,
  path extensions.ltree,
  attrs extensions.hstore
);
create index people_email_trgm on public.people using gin ((email::text) extensions.gin_trgm_ops);
insert into public.people (email, password, path, attrs) values
  ('Ann@Example.com', extensions.crypt('secret', extensions.gen_salt('bf', 4)), 'top.science.physics', 'a=>1');
`;

Deno.test("extensions: Supabase's usual contrib modules install and answer, as the owner", async () => {
  const p = await startPlatform();
  try {
    const sql = async (query: string) =>
      await json(
        await p.fetch("/v1/sql", { method: "POST", headers: { apikey: p.secretKey }, json: { query } }),
      );
    const migrated = await sql(MIGRATION);
    assertEquals(migrated.status, 200, JSON.stringify(migrated.body));
    const { status, body } = await sql(`
      select p.email = 'ann@example.com' as citext_equal,
        p.password = extensions.crypt('secret', p.password) as crypt_checks,
        encode(extensions.hmac('a', 'b', 'sha256'), 'hex') as hmac,
        extensions.similarity('hello', 'hallo') > 0.2 as trigram,
        p.path operator(extensions.<@) 'top.science'::extensions.ltree as ltree_below,
        p.attrs operator(extensions.->) 'a' as hstore_value,
        extensions.unaccent('Crème brûlée') as unaccented,
        extensions.levenshtein('kitten', 'sitting') as levenshtein,
        extensions.icount('{1,2,3}'::int[]) as icount,
        length(p.id::text) as uuid_length
      from public.people p`);
    assertEquals(status, 200, JSON.stringify(body));
    assertEquals(body.data, [{
      citext_equal: true,
      crypt_checks: true,
      hmac: "cb448b440c42ac8ad084fc8a8795c98f5b7802359c305eabd57ecdb20e248896",
      trigram: true,
      ltree_below: true,
      hstore_value: "1",
      unaccented: "Creme brulee",
      levenshtein: 3,
      icount: 3,
      uuid_length: 36,
    }]);
  } finally {
    await p.close();
  }
});
