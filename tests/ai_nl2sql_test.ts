import { assertEquals, assertMatch, assertNotMatch } from "./assert.ts";
import { startFakeOpenAI } from "./fake_openai.ts";
import { json, startPlatform, type TestPlatform } from "./harness.ts";

async function sql(p: TestPlatform, query: string) {
  const res = await p.fetch("/v1/sql", { method: "POST", headers: { apikey: p.secretKey }, json: { query } });
  const body = await res.json();
  if (res.status !== 200) throw new Error(JSON.stringify(body));
  return body.data;
}

Deno.test("AI NL-to-SQL: schema limited to the caller, one read-only SELECT, run under RLS", async (t) => {
  const fake = startFakeOpenAI();
  const p = await startPlatform({
    AI_BASE_URL: fake.baseUrl,
    AI_CHAT_MODEL: "fake-chat",
    AI_SQL_TIMEOUT_MS: "500",
  });
  try {
    const signup = async (email: string) => {
      const { body } = await json(
        await p.fetch("/v1/auth/signup", {
          method: "POST",
          headers: { apikey: p.publicKey },
          json: { email, password: "password-123" },
        }),
      );
      return { id: body.data.user.id as string, token: body.data.session.access_token as string };
    };
    const alice = await signup("alice@example.com");
    const bob = await signup("bob@example.com");
    await sql(
      p,
      `create table public.notes (id int primary key, owner uuid not null, body text not null);
       alter table public.notes enable row level security;
       create policy own_notes on public.notes for select to authenticated using (owner = auth.uid());
       insert into public.notes values (1, '${alice.id}', 'alice one'), (2, '${alice.id}', 'alice two'),
                                       (3, '${bob.id}', 'bob one');
       create table public.secrets (id int primary key, value text);
       revoke all on public.secrets from anon, authenticated;
       insert into public.secrets values (1, 'the launch code');
       create table public.numbers (n int);
       insert into public.numbers select generate_series(1, 2000);`,
    );
    const asAlice = { apikey: p.publicKey, authorization: `Bearer ${alice.token}` };
    const ask = (headers: Record<string, string>, body: Record<string, unknown>) =>
      p.fetch("/v1/ai/nl2sql", { method: "POST", headers, json: body }).then(json);
    const unchanged = async () => {
      const [{ notes, secrets }] = await sql(
        p,
        "select (select count(*) from public.notes)::int as notes, (select count(*) from public.secrets)::int as secrets",
      );
      assertEquals([notes, secrets], [3, 1]);
    };

    await t.step("the prompt carries only tables the caller can read, and the examples", async () => {
      fake.replies.push("SELECT body FROM notes ORDER BY id");
      const { status, body } = await ask(asAlice, {
        question: "list my notes",
        dialect: "postgresql",
        examples: [{ question: "how many notes", sql: "SELECT count(*) FROM notes" }],
      });
      assertEquals(status, 200, JSON.stringify(body));
      assertMatch(body.data.sql, /^SELECT body\s+FROM notes/);
      assertEquals(body.data.rows, undefined);
      const messages = fake.calls.at(-1)!.body.messages as { role: string; content: string }[];
      assertMatch(
        messages[0]!.content,
        /table "public"\."notes" \("id" integer, "owner" uuid, "body" text\)/,
      );
      assertNotMatch(messages[0]!.content, /secrets|auth|platform|ai_chunks/);
      assertEquals(messages[1], { role: "user", content: "how many notes" });
      assertEquals(messages[2], { role: "assistant", content: "SELECT count(*) FROM notes" });
      assertEquals(messages.at(-1), { role: "user", content: "list my notes" });
    });

    await t.step("execute: runs as the user under RLS, with the row limit", async () => {
      fake.replies.push("```sql\nSELECT body FROM notes ORDER BY id;\n```");
      const all = await ask(asAlice, { question: "list my notes", execute: true });
      assertEquals(all.status, 200, JSON.stringify(all.body));
      assertEquals(all.body.data.rows, [{ body: "alice one" }, { body: "alice two" }]);
      fake.replies.push("SELECT body FROM notes ORDER BY id");
      const one = await ask(asAlice, { question: "list my notes", execute: true, limit: 1 });
      assertEquals(one.body.data.rows, [{ body: "alice one" }]);
    });

    await t.step("service_role sees every table in its prompt and every row", async () => {
      fake.replies.push("SELECT value FROM secrets");
      const { status, body } = await ask({ apikey: p.secretKey }, { question: "secrets?", execute: true });
      assertEquals(status, 200, JSON.stringify(body));
      assertEquals(body.data.rows, [{ value: "the launch code" }]);
      assertMatch((fake.calls.at(-1)!.body.messages as { content: string }[])[0]!.content, /"secrets"/);
    });

    const attacks: { name: string; reply: string; status: number; message: RegExp }[] = [
      { name: "DROP TABLE", reply: "DROP TABLE notes", status: 400, message: /DROP/ },
      {
        name: "SELECT then DELETE",
        reply: "SELECT * FROM notes; DELETE FROM notes",
        status: 400,
        message: /2 statements/,
      },
      {
        name: "pg_sleep",
        reply: "SELECT pg_sleep(100)",
        status: 400,
        message: /function "pg_sleep" is not allowed/,
      },
      {
        name: "a table the caller cannot read",
        reply: "SELECT value FROM secrets",
        status: 400,
        message: /table "public.secrets" is not readable/,
      },
      {
        name: "a data-modifying CTE",
        reply: "WITH d AS (DELETE FROM notes RETURNING *) SELECT * FROM d",
        status: 400,
        message: /DELETE/,
      },
      { name: "FOR UPDATE", reply: "SELECT * FROM notes FOR UPDATE", status: 400, message: /FOR UPDATE/ },
      {
        name: "SELECT INTO",
        reply: "SELECT * INTO stolen FROM notes",
        status: 400,
        message: /does not parse/,
      },
      {
        name: "claims rewritten with set_config",
        reply: `SELECT set_config('request.jwt.claims', '{"sub":"${bob.id}"}', true)`,
        status: 400,
        message: /function "set_config"/,
      },
      {
        name: "an endless recursive query",
        reply: "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
        status: 400,
        message: /WITH RECURSIVE can run without bound/,
      },
      {
        name: "a huge join (a valid SELECT, refused on the planner's cost before it runs)",
        reply: "SELECT count(*) FROM numbers a, numbers b, numbers c",
        status: 400,
        message: /estimated cost \d+ is above the bound 1000000/,
      },
    ];
    for (const a of attacks) {
      await t.step(`a model answering ${a.name} is refused or contained; data unchanged`, async () => {
        fake.replies.push(a.reply);
        const { status, body } = await ask(asAlice, { question: "do it", execute: true });
        assertEquals(status, a.status, JSON.stringify(body));
        assertMatch(body.error.message, a.message);
        assertEquals(body.data, undefined);
        await unchanged();
      });
    }

    await t.step(
      "literals shaped like the printer's quantifier run exactly as checked; data unchanged",
      async () => {
        // The printer's `("any" (…) )` is put back as `ANY (…)`: text inside literals must never be touched,
        // and no literal can smuggle a second statement or a write through that rewrite.
        fake.replies.push(
          `SELECT '("any" (x)' AS s, '"all" (' AS t, id FROM notes ` +
            `WHERE body <> ')); DELETE FROM notes; --' AND id = ANY(ARRAY[1, 3]) ORDER BY id`,
        );
        const kept = await ask(asAlice, { question: "literals", execute: true });
        assertEquals(kept.status, 200, JSON.stringify(kept.body));
        assertEquals(kept.body.data.rows, [{ s: '("any" (x)', t: '"all" (', id: 1 }]);
        fake.replies.push(
          `SELECT id FROM notes WHERE body = '("any" (' OR body = ')); DELETE FROM notes; SELECT ((' ORDER BY id`,
        );
        const smuggled = await ask(asAlice, { question: "smuggle", execute: true });
        assertEquals(smuggled.status, 200, JSON.stringify(smuggled.body));
        assertEquals(smuggled.body.data.rows, []);
        assertMatch(smuggled.body.data.sql, /'\)\); DELETE FROM notes; SELECT \(\('/);
        await unchanged();
      },
    );

    await t.step("a SELECT over a column without privilege fails closed as 403", async () => {
      await sql(
        p,
        "revoke select on public.notes from authenticated; grant select (id, owner) on public.notes to authenticated",
      );
      fake.replies.push("SELECT id FROM notes ORDER BY id");
      const ok = await ask(asAlice, { question: "ids", execute: true });
      assertEquals(ok.status, 200, JSON.stringify(ok.body));
      assertEquals(ok.body.data.rows, [{ id: 1 }, { id: 2 }]);
      const prompt = (fake.calls.at(-1)!.body.messages as { content: string }[])[0]!.content;
      assertNotMatch(prompt, /"body"/);
      fake.replies.push("SELECT * FROM notes");
      const star = await ask(asAlice, { question: "all", execute: true });
      assertEquals(star.status, 403);
      assertEquals(star.body.error.code, "FORBIDDEN");
      await unchanged();
    });

    await t.step("defense in depth: the executor alone refuses writes and other statements", async () => {
      const nl2sql = p.platform.ai.nl2sql;
      const caller = { role: "authenticated" as const, claims: { sub: alice.id, role: "authenticated" } };
      const bypassing = [
        "WITH d AS (DELETE FROM notes RETURNING *) SELECT * FROM d", // data-modifying WITH not at top level
        "SELECT 1) AS x; DELETE FROM notes; SELECT * FROM (SELECT 1", // a second statement: extended protocol
        "SELECT set_config('request.jwt.claims', '{}', false)", // unguarded: runs, but only for its transaction
      ];
      for (const sqlText of bypassing) {
        await nl2sql.run("default", caller, sqlText, 10).catch(() => null);
        await unchanged();
      }
      const rows = await nl2sql.run("default", caller, "SELECT id FROM notes ORDER BY id", 10);
      assertEquals(rows, [{ id: 1 }, { id: 2 }]); // still RLS-bound: the claims set above did not persist
    });

    if (p.platform.dbs.kind === "postgres") {
      await t.step("PostgreSQL: the statement timeout stops a slow query (504)", async () => {
        const caller = { role: "service_role" as const, claims: { role: "service_role" } };
        let code = "";
        await p.platform.ai.nl2sql.run("default", caller, "SELECT pg_sleep(5)", 1).catch((err) =>
          code = err.code
        );
        assertEquals(code, "TIMEOUT");
      });
    }

    await t.step("anon is refused; bad dialect and bad limit are 400", async () => {
      assertEquals((await ask({ apikey: p.publicKey }, { question: "x" })).status, 403);
      const bad = await ask({ apikey: p.secretKey }, { question: "x", dialect: "mysql", limit: 0 });
      assertEquals(bad.status, 400);
      assertMatch(bad.body.error.message, /dialect/);
      assertMatch(bad.body.error.message, /limit/);
    });
  } finally {
    await p.close();
    await fake.close();
  }
});
