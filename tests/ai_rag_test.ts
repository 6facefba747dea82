import { assert, assertEquals, assertMatch } from "./assert.ts";
import { startFakeOpenAI } from "./fake_openai.ts";
import { type Json, json, startPlatform, type TestPlatform } from "./harness.ts";

function post(p: TestPlatform, path: string, body: unknown, key = p.secretKey) {
  return p.fetch(path, { method: "POST", headers: { apikey: key }, json: body }).then(json);
}

// Reads the platform's own AI tables: straight on the database, since the owner's SQL may not.
function sql(p: TestPlatform, query: string): Promise<Json[]> {
  return p.internalSql(query);
}

const FRANCE = "Paris is the capital of France. The Eiffel Tower stands in Paris on the Seine river.";
const GERMANY = "Berlin is the capital of Germany. The Brandenburg Gate stands in Berlin.";
const LONG = Array.from({ length: 60 }, (_, i) => `Sentence ${i} talks about gardening tomatoes and basil.`)
  .join(" ");

Deno.test("AI RAG: ingest, search, rag with citations, namespaces, reindex, delete", async (t) => {
  const fake = startFakeOpenAI();
  const p = await startPlatform({
    AI_BASE_URL: fake.baseUrl,
    AI_CHAT_MODEL: "fake-chat",
    AI_EMBEDDING_MODEL: "fake-embed-1",
  });
  try {
    const [{ present: pgvector }] = await sql(
      p,
      "select exists (select 1 from pg_extension where extname = 'vector') as present",
    );

    await t.step(
      "ingest: documents are chunked with overlap, embedded and stored with the model",
      async () => {
        const a = await post(p, "/v1/ai/rag/ingest", {
          namespace: "geo",
          document: { id: "france", text: FRANCE, metadata: { lang: "en" } },
        });
        assertEquals(a.status, 200, JSON.stringify(a.body));
        assertEquals(a.body.data, { document_id: "france", chunks: 1, model: "fake-embed-1" });
        const b = await post(p, "/v1/ai/rag/ingest", { namespace: "geo", document: { text: GERMANY } });
        assertMatch(b.body.data.document_id, /^[0-9a-f-]{36}$/);
        const c = await post(p, "/v1/ai/rag/ingest", {
          namespace: "geo",
          document: { id: "garden", text: LONG },
          chunk_size: 300,
          chunk_overlap: 60,
        });
        assert(c.body.data.chunks > 5, JSON.stringify(c.body));
        const rows = await sql(
          p,
          "select ordinal, text from platform.ai_chunks where document_id = 'garden' order by ordinal",
        );
        assertEquals(rows.length, c.body.data.chunks);
        const firstWords = rows[1].text.split(" ").slice(0, 2).join(" ");
        assert(rows[0].text.includes(firstWords), "neighbouring chunks overlap");
      },
    );

    await t.step(
      `storage: ${pgvector ? "pgvector with an HNSW index per namespace" : "real[] exact scan"}`,
      async () => {
        const indexes = await sql(
          p,
          "select indexdef from pg_indexes where schemaname = 'platform' and indexname like 'ai_chunks_ns_%'",
        );
        if (pgvector) {
          assertEquals(indexes.length, 1);
          assertMatch(
            indexes[0].indexdef,
            /USING hnsw .*vector\(64\).*vector_cosine_ops.*WHERE \(\(namespace_id = .*array_length/,
          );
          // The search's shape uses the namespace's index.
          const [{ id }] = await sql(p, "select id from platform.ai_namespaces where name = 'geo'");
          const v = `[${Array.from({ length: 64 }, (_, i) => (i === 0 ? 1 : 0)).join(",")}]`;
          const plan = await sql(
            p,
            `set local enable_seqscan = off;
             explain select id from platform.ai_chunks c
              where c.namespace_id = ${id} and array_length(c.embedding, 1) = 64
              order by c.embedding::vector(64) <=> '${v}'::vector(64) limit 5`,
          );
          assertMatch(JSON.stringify(plan), /Index Scan using ai_chunks_ns_/);
        } else {
          assertEquals(indexes.length, 0);
        }
      },
    );

    await t.step(
      "search: the right chunk first, with metadata; top_k and threshold bound the list",
      async () => {
        const all = await post(p, "/v1/ai/search", { query: "capital of France", namespace: "geo" });
        assertEquals(all.status, 200);
        assertEquals(all.body.data[0].document_id, "france");
        assertEquals(all.body.data[0].metadata, { lang: "en" });
        assert(all.body.data.length >= 2);
        for (let i = 1; i < all.body.data.length; i++) {
          assert(all.body.data[i - 1].score >= all.body.data[i].score, "sorted by score");
        }
        const one = await post(p, "/v1/ai/search", {
          query: "capital of France",
          namespace: "geo",
          top_k: 1,
        });
        assertEquals(one.body.data.length, 1);
        const top = all.body.data[0].score;
        const strict = await post(p, "/v1/ai/search", {
          query: "capital of France",
          namespace: "geo",
          threshold: top - 0.0001,
        });
        assertEquals(strict.body.data.map((h: { document_id: string }) => h.document_id), ["france"]);
        const none = await post(p, "/v1/ai/search", {
          query: "capital of France",
          namespace: "geo",
          threshold: 0.999,
        });
        assertEquals(none.body.data, []);
      },
    );

    await t.step("rag: the answer cites the chunk the model used", async () => {
      fake.replies.push("Paris [1].");
      const { status, body } = await post(p, "/v1/ai/rag", { namespace: "geo", query: "capital of France" });
      assertEquals(status, 200);
      assertEquals(body.data.answer, "Paris [1].");
      assertEquals(body.data.model, "fake-chat");
      assertEquals(body.data.citations.length, 1);
      assertEquals(body.data.citations[0].document_id, "france");
      assertEquals(body.data.citations[0].text, FRANCE);
      const prompt = (fake.calls.at(-1)!.body.messages as { content: string }[])[1]!.content;
      assertMatch(prompt, /\[1\] Paris is the capital of France/);
    });

    await t.step("re-ingesting a document id replaces its chunks", async () => {
      await post(p, "/v1/ai/rag/ingest", {
        namespace: "geo",
        document: { id: "france", text: "Lyon is in France." },
      });
      const rows = await sql(p, "select text from platform.ai_chunks where document_id = 'france'");
      assertEquals(rows, [{ text: "Lyon is in France." }]);
    });

    await t.step("namespaces: counts and the recorded model", async () => {
      const { body } = await p.fetch("/v1/ai/namespaces", { headers: { apikey: p.secretKey } }).then(json);
      assertEquals(body.data.length, 1);
      const ns = body.data[0];
      assertEquals([ns.name, ns.documents, ns.embedding_model], ["geo", 3, "fake-embed-1"]);
      assert(ns.chunks > 5);
      assertMatch(ns.created_at, /^\d{4}-\d\d-\d\dT/);
    });

    await t.step("reindex: re-embeds with another model, then back with the current one", async () => {
      const other = await post(p, "/v1/ai/namespaces/geo/reindex", { model: "fake-embed-2" });
      assertEquals(other.status, 200, JSON.stringify(other.body));
      assertEquals(other.body.data.embedding_model, "fake-embed-2");
      const [{ dims }] = await sql(
        p,
        "select distinct array_length(embedding, 1) as dims from platform.ai_chunks",
      );
      assertEquals(dims, 32);
      const hit = await post(p, "/v1/ai/search", { query: "Brandenburg Gate", namespace: "geo", top_k: 1 });
      assertEquals(hit.body.data[0].text, GERMANY);
      if (pgvector) {
        const [idx] = await sql(p, "select indexdef from pg_indexes where indexname like 'ai_chunks_ns_%'");
        assertMatch(idx.indexdef, /vector\(32\)/);
      }
      const current = await p.fetch("/v1/ai/namespaces/geo/reindex", {
        method: "POST",
        headers: { apikey: p.secretKey },
      }).then(json);
      assertEquals(current.body.data.embedding_model, "fake-embed-1");
      const again = await post(p, "/v1/ai/search", { query: "Brandenburg Gate", namespace: "geo", top_k: 1 });
      assertEquals(again.body.data[0].text, GERMANY);
    });

    await t.step("ingest with another model into an existing namespace is 409", async () => {
      const { status, body } = await post(p, "/v1/ai/rag/ingest", {
        namespace: "geo",
        model: "fake-embed-2",
        document: { text: "x y" },
      });
      assertEquals(status, 409);
      assertMatch(body.error.message, /reindex/);
    });

    await t.step(
      "roles: a signed-in user searches and asks, but cannot ingest; anon cannot search",
      async () => {
        const signup = await post(p, "/v1/auth/signup", {
          email: "rag@example.com",
          password: "password-123",
        }, p.publicKey);
        const headers = {
          apikey: p.publicKey,
          authorization: `Bearer ${signup.body.data.session.access_token}`,
        };
        const search = await p.fetch("/v1/ai/search", {
          method: "POST",
          headers,
          json: { query: "Berlin", namespace: "geo" },
        }).then(json);
        assertEquals(search.status, 200);
        const ingest = await p.fetch("/v1/ai/rag/ingest", {
          method: "POST",
          headers,
          json: { namespace: "geo", document: { text: "intruder" } },
        }).then(json);
        assertEquals(ingest.status, 403);
        const anon = await post(p, "/v1/ai/search", { query: "Berlin", namespace: "geo" }, p.publicKey);
        assertEquals(anon.status, 403);
      },
    );

    await t.step("bad input and unknown namespaces", async () => {
      const bad = await post(p, "/v1/ai/search", { query: "", namespace: "no spaces allowed", top_k: 0 });
      assertEquals(bad.status, 400);
      assertMatch(bad.body.error.message, /query/);
      assertMatch(bad.body.error.message, /namespace/);
      assertMatch(bad.body.error.message, /top_k/);
      const missing = await post(p, "/v1/ai/search", { query: "x", namespace: "nowhere" });
      assertEquals(missing.status, 404);
      assertEquals(missing.body.error.message, 'Namespace "nowhere" does not exist');
    });

    await t.step("delete: the namespace and its whole corpus go", async () => {
      const res = await p.fetch("/v1/ai/namespaces/geo", {
        method: "DELETE",
        headers: { apikey: p.secretKey },
      })
        .then(json);
      assertEquals(res.status, 200);
      assertEquals(res.body.data.name, "geo");
      assertEquals(res.body.data.documents, 3);
      const [{ chunks, documents, indexes }] = await sql(
        p,
        `select (select count(*) from platform.ai_chunks)::int as chunks,
                (select count(*) from platform.ai_documents)::int as documents,
                (select count(*) from pg_indexes where indexname like 'ai_chunks_ns_%')::int as indexes`,
      );
      assertEquals([chunks, documents, indexes], [0, 0, 0]);
      const gone = await post(p, "/v1/ai/search", { query: "Paris", namespace: "geo" });
      assertEquals(gone.status, 404);
      const again = await p.fetch("/v1/ai/namespaces/geo", {
        method: "DELETE",
        headers: { apikey: p.secretKey },
      });
      assertEquals(again.status, 404);
    });
  } finally {
    await p.close();
    await fake.close();
  }
});
