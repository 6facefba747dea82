import { assert, assertEquals, assertMatch } from "./assert.ts";
import { json, startPlatform, type TestPlatform } from "./harness.ts";

function post(p: TestPlatform, path: string, body: unknown) {
  return p.fetch(path, { method: "POST", headers: { apikey: p.secretKey }, json: body }).then(json);
}

Deno.test("AI offline: no provider, local lexical embedder, exact-scan storage forced", async (t) => {
  const p = await startPlatform({ AI_VECTOR_STORE: "array" });
  try {
    await t.step("chat without a provider is 503 and says how to configure one", async () => {
      for (const path of ["/v1/ai/chat", "/v1/ai/chat/stream"]) {
        const { status, body } = await post(p, path, { messages: [{ role: "user", content: "hi" }] });
        assertEquals(status, 503);
        assertEquals(body.error.code, "SERVICE_UNAVAILABLE");
        assertMatch(body.error.message, /No AI provider is configured: set AI_BASE_URL/);
        assertMatch(body.error.message, /Ollama/);
      }
    });

    await t.step(
      "embeddings come from the local lexical embedder, deterministic and unit length",
      async () => {
        const a = await post(p, "/v1/ai/embeddings", { input: ["The cat sat", "the CAT sat!"] });
        assertEquals(a.status, 200);
        assertEquals(a.body.data.model, "local-lexical-v1");
        const [x, y] = a.body.data.embeddings;
        assertEquals(x.length, 256);
        assertEquals(x, y); // same words, case and punctuation aside
        const norm = Math.sqrt(x.reduce((s: number, v: number) => s + v * v, 0));
        assert(Math.abs(norm - 1) < 1e-5);
        const b = await post(p, "/v1/ai/embeddings", { input: "The cat sat" });
        assertEquals(b.body.data.embeddings[0], x);
        const other = await post(p, "/v1/ai/embeddings", { input: "x", model: "text-embedding-3-small" });
        assertEquals(other.status, 400);
        assertMatch(other.body.error.message, /no embedding provider is configured/);
      },
    );

    await t.step("RAG and search work offline over the exact scan", async () => {
      const docs = [
        { id: "tea", text: "Green tea is brewed at 80 degrees for two minutes." },
        { id: "coffee", text: "Espresso is brewed under pressure with finely ground coffee." },
        { id: "bread", text: "Sourdough bread rises slowly with a wild yeast starter." },
      ];
      for (const document of docs) {
        const { status, body } = await post(p, "/v1/ai/rag/ingest", { namespace: "kitchen", document });
        assertEquals(status, 200);
        assertEquals(body.data.model, "local-lexical-v1");
      }
      const indexes = await post(p, "/v1/sql", {
        query: "select count(*)::int as n from pg_indexes where indexname like 'ai_chunks_ns_%'",
      });
      assertEquals(indexes.body.data, [{ n: 0 }]);
      const hits = await post(p, "/v1/ai/search", {
        query: "how long to brew green tea",
        namespace: "kitchen",
      });
      assertEquals(hits.body.data[0].document_id, "tea");
      const top2 = await post(p, "/v1/ai/search", { query: "brewed", namespace: "kitchen", top_k: 2 });
      assertEquals(top2.body.data.length, 2);
      assertEquals(
        top2.body.data.map((h: { document_id: string }) => h.document_id).sort(),
        ["coffee", "tea"],
      );
      const above = await post(p, "/v1/ai/search", { query: "brewed", namespace: "kitchen", threshold: 0.2 });
      assert(above.body.data.every((h: { score: number }) => h.score >= 0.2));
      assert(!above.body.data.some((h: { document_id: string }) => h.document_id === "bread"));

      const rag = await post(p, "/v1/ai/rag", { namespace: "kitchen", query: "sourdough starter" });
      assertEquals(rag.status, 200);
      assertEquals(rag.body.data.model, "local-extractive");
      assertEquals(rag.body.data.answer, docs[2]!.text);
      assertEquals(rag.body.data.citations[0].document_id, "bread");
    });

    await t.step("the OpenAPI document lists every AI route", async () => {
      const { body } = await json(await p.fetch("/v1/openapi.json"));
      for (
        const path of [
          "/v1/ai/chat",
          "/v1/ai/chat/stream",
          "/v1/ai/embeddings",
          "/v1/ai/rag",
          "/v1/ai/rag/ingest",
          "/v1/ai/namespaces",
          "/v1/ai/namespaces/{ns}",
          "/v1/ai/namespaces/{ns}/reindex",
          "/v1/ai/search",
          "/v1/ai/nl2sql",
          "/v1/ai/{project_id}/session",
          "/v1/ai/session/chat",
          "/v1/ai/session/chat/stream",
          "/v1/ai/session/embed",
          "/v1/ai/usage",
        ]
      ) assert(body.paths[path], `${path} is documented`);
    });
  } finally {
    await p.close();
  }
});
