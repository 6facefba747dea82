import { createClient } from "../client/mod.ts";
import { assert, assertEquals, assertMatch, assertNotEquals } from "./assert.ts";
import { rejects, servePlatform } from "./client_fixture.ts";
import { startFakeOpenAI } from "./fake_openai.ts";

Deno.test("client ai: every operation, a session with its budget and renewal, a stream aborted upstream", async (t) => {
  const fake = startFakeOpenAI();
  const s = await servePlatform({
    AI_BASE_URL: fake.baseUrl,
    AI_CHAT_MODEL: "fake-chat",
    AI_EMBEDDING_MODEL: "fake-embed-1",
  });
  const admin = createClient(s.url, s.p.secretKey);
  const anon = createClient(s.url, s.p.publicKey);
  try {
    await t.step("chat; anon without a session is 403", async () => {
      const answer = await admin.ai.chat([{ role: "user", content: "hello there" }], { cache: false });
      assertEquals(answer.message, { role: "assistant", content: "echo: hello there" });
      assertEquals(answer.cache.status, "miss");
      const err = await rejects(() => anon.ai.chat([{ role: "user", content: "hi" }]));
      assertEquals([err.status, err.code], [403, "FORBIDDEN"]);
    });

    await t.step("chatStream yields chunks; an error before the stream is a PlatformError", async () => {
      let text = "";
      for await (const chunk of admin.ai.chatStream([{ role: "user", content: "stream me" }])) {
        text += chunk.choices[0]?.delta.content ?? "";
      }
      assertEquals(text, "echo: stream me");
      const err = await rejects(async () => {
        for await (const _ of admin.ai.chatStream([])) { /* never */ }
      });
      assertEquals(err.status, 400);
    });

    await t.step("chatStream: aborting the signal stops the provider's request", async () => {
      const before = fake.aborted;
      const controller = new AbortController();
      const stream = admin.ai.chatStream([{ role: "user", content: "go on forever" }], {
        model: "slow-stream",
        signal: controller.signal,
      });
      let chunks = 0;
      const err = await rejects(async () => {
        for await (const _ of stream) {
          if (++chunks === 2) controller.abort();
        }
      });
      assertEquals(err.code, "ABORTED");
      for (let i = 0; i < 100 && fake.aborted === before; i++) await new Promise((r) => setTimeout(r, 50));
      assertEquals(fake.aborted, before + 1);
    });

    await t.step("embed one input and several; an empty list is 400", async () => {
      assertEquals((await admin.ai.embed("one")).embeddings.length, 1);
      const many = await admin.ai.embed(["one", "two"]);
      assertEquals([many.embeddings.length, many.model], [2, "fake-embed-1"]);
      assertEquals((await rejects(() => admin.ai.embed([]))).code, "VALIDATION_ERROR");
    });

    await t.step(
      "ragIngest, rag, semanticSearch, listNamespaces, reindexNamespace, deleteNamespace",
      async () => {
        const ingested = await admin.ai.ragIngest(
          { text: "The platform is written in TypeScript for Deno." },
          "docs",
        );
        assert(ingested.chunks >= 1);
        const hits = await admin.ai.semanticSearch("platform typescript deno", "docs", { top_k: 1 });
        assertEquals(hits[0]!.document_id, ingested.document_id);
        const answer = await admin.ai.rag({ namespace: "docs", query: "what is the platform written in?" });
        assertEquals(answer.citations[0]!.document_id, ingested.document_id);
        assertEquals((await admin.ai.listNamespaces()).map((n) => n.name), ["docs"]);
        assertEquals((await admin.ai.reindexNamespace("docs")).name, "docs");
        assertEquals((await admin.ai.deleteNamespace("docs")).name, "docs");
        assertEquals((await rejects(() => admin.ai.rag({ namespace: "docs", query: "x" }))).status, 404);
        assertEquals((await rejects(() => admin.ai.semanticSearch("x", "docs"))).status, 404);
        assertEquals((await rejects(() => admin.ai.deleteNamespace("docs"))).status, 404);
        assertEquals((await rejects(() => admin.ai.reindexNamespace("docs"))).status, 404);
        assertEquals((await rejects(() => anon.ai.listNamespaces())).status, 403);
        assertEquals((await rejects(() => admin.ai.ragIngest({ text: "" }, "docs"))).status, 400);
      },
    );

    await t.step("nl2sql: SQL, then rows; an answer that is not a SELECT is 400", async () => {
      await admin.sql(
        "create table public.notes (id int primary key, body text); insert into notes values (1, 'a')",
      );
      fake.replies.push("SELECT body FROM notes ORDER BY id");
      assertMatch((await admin.ai.nl2sql("list notes")).sql, /^SELECT body\s+FROM notes\s+ORDER BY id$/);
      fake.replies.push("SELECT body FROM notes ORDER BY id");
      assertEquals((await admin.ai.nl2sql("list notes", { execute: true })).rows, [{ body: "a" }]);
      fake.replies.push("DELETE FROM notes");
      assertEquals((await rejects(() => admin.ai.nl2sql("delete notes"))).status, 400);
    });

    await t.step(
      "session: chat, chatStream and embed with the ticket alone; budget spent is 403",
      async () => {
        const session = await anon.ai.session();
        const full = session.budgetRemaining;
        const embedded = await session.embed({ input: "hello" });
        assert(embedded.embedding.length > 0);
        assert(session.budgetRemaining < full);
        const chat = await session.chat([{ role: "user", content: "hi" }]);
        assertEquals(chat.message.content, "echo: hi");
        assertEquals(session.budgetRemaining, chat.budget_remaining);
        let text = "";
        for await (const chunk of session.chatStream([{ role: "user", content: "streamed" }])) {
          text += chunk.choices[0]?.delta.content ?? "";
        }
        assertEquals(text, "echo: streamed");

        const small = await admin.ai.session({ budget: 60 });
        let err;
        for (let i = 0; i < 20 && !err; i++) {
          err = await small.chat([{ role: "user", content: "spend the budget please" }], { cache: false })
            .then(
              () => undefined,
              (e) => e,
            );
        }
        assertEquals([err?.status, err?.code, err?.type], [403, "QUOTA_EXCEEDED", "quota"]);
        assertMatch(err.message, /budget/i);
        // Only a secret key may choose the budget.
        assertEquals((await rejects(() => anon.ai.session({ budget: 10 }))).status, 403);
      },
    );

    await t.step("session: an expiring ticket is renewed", async () => {
      const session = await admin.ai.session({ ttl_secs: 10 });
      const first = session.ticket;
      await new Promise((r) => setTimeout(r, 5500));
      await session.embed({ input: "still here" });
      assertNotEquals(session.ticket, first);
    });

    await t.step(
      "session: a revoked ticket stops working; the session's next call mints a new one",
      async () => {
        const session = await admin.ai.session();
        const revoked = session.ticket;
        await session.revoke();
        const again = await fetch(`${s.url}/v1/ai/session/embed`, {
          method: "POST",
          headers: { authorization: `Bearer ${revoked}`, "content-type": "application/json" },
          body: JSON.stringify({ input: "x" }),
        });
        assertEquals(again.status, 401);
        await again.body?.cancel();
        await session.embed({ input: "after" });
        assertNotEquals(session.ticket, revoked);
      },
    );
  } finally {
    admin.close();
    anon.close();
    await s.close();
    await fake.close();
  }
});
