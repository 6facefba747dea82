import { assert, assertEquals } from "./assert.ts";
import { type Json, json, startPlatform, type TestPlatform } from "./harness.ts";
import { Corpus } from "../services/ai/corpus.ts";

// The platform's own HNSW index (forced, so that it runs on PGlite, which has pgvector, as on PostgreSQL).
const ENV = { AI_VECTOR_STORE: "hnsw" };

function post(p: TestPlatform, path: string, body: unknown) {
  return p.fetch(path, { method: "POST", headers: { apikey: p.secretKey }, json: body }).then(json);
}

// Seeded sentences over a small vocabulary: the local lexical embedder sees words.
let seed = 11;
const rand = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
const VOCAB = Array.from({ length: 400 }, (_, i) => `w${i.toString(36)}${"xyzqk"[i % 5]}`);
const sentence = (n: number) =>
  Array.from({ length: n }, () => VOCAB[Math.floor(rand() * VOCAB.length)]).join(" ");

async function search(p: TestPlatform, query: string, topK = 10) {
  const res = await post(p, "/v1/ai/search", { namespace: "gen", query, top_k: topK });
  assertEquals(res.status, 200, JSON.stringify(res.body));
  return res.body.data as { chunk_id: string; document_id: string; text: string; score: number }[];
}

/** The exact scan's top 10 (dot product in SQL), as AI_VECTOR_STORE=array computes it. */
async function exactTop(p: TestPlatform, query: string) {
  const [vector] = (await post(p, "/v1/ai/embeddings", { input: query })).body.data.embeddings;
  return await p.internalSql(
    `select id::text as chunk_id,
            round((select sum(a::float8 * b::float8) from unnest(c.embedding, $1::real[]) as t(a, b))::numeric, 4)
              ::float8 as score
       from platform.ai_chunks c
      where namespace_id = (select id from platform.ai_namespaces where name = 'gen')
      order by 2 desc, 1 limit 10`,
    [`{${vector.join(",")}}`],
  ) as { chunk_id: string; score: number }[];
}

Deno.test("AI vector index: recall, writes, reindex, restart, another instance", async (t) => {
  let p = await startPlatform(ENV);
  try {
    for (let d = 0; d < 10; d++) {
      const text = Array.from({ length: 300 }, () => sentence(14) + ".").join(" ");
      const res = await post(p, "/v1/ai/rag/ingest", {
        namespace: "gen",
        document: { id: `doc-${d}`, text, metadata: { n: d } },
        chunk_size: 90,
        chunk_overlap: 0,
      });
      assertEquals(res.status, 200, JSON.stringify(res.body));
    }
    const [{ chunks }] = await p.internalSql(
      "select count(*)::int as chunks from platform.ai_chunks",
    ) as Json[];
    assert(chunks >= 2000, `${chunks} chunks`);
    // Told by readiness once the default project's database is open (the ingest opened it).
    const ready = await p.fetch("/v1/ready").then(json);
    assertEquals(ready.body.data.vector, "platform-hnsw");
    const queries = Array.from({ length: 20 }, () => sentence(4));

    await t.step(
      "recall@10 against the exact scan is at least 0.9, with the exact path's scores",
      async () => {
        let found = 0;
        for (const q of queries) {
          const exact = await exactTop(p, q);
          const approx = await search(p, q);
          assertEquals(approx.length, 10);
          for (let i = 1; i < approx.length; i++) assert(approx[i - 1]!.score >= approx[i]!.score);
          const scores = new Map(exact.map((e) => [e.chunk_id, e.score]));
          for (const hit of approx.filter((h) => scores.has(h.chunk_id))) {
            assertEquals(hit.score, scores.get(hit.chunk_id));
            found++;
          }
        }
        const recall = found / (queries.length * 10);
        assert(recall >= 0.9, `recall@10 ${recall}`);
        const [hit] = await search(p, queries[0]!, 1);
        assertEquals(typeof hit!.document_id, "string");
        const [row] = await p.internalSql("select metadata from platform.ai_documents where id = $1", [
          hit!.document_id,
        ]);
        assertEquals(
          (await post(p, "/v1/ai/search", { namespace: "gen", query: queries[0], top_k: 1 })).body
            .data[0].metadata,
          row!.metadata,
        );
      },
    );

    await t.step("an ingested document is found, a replaced one is not", async () => {
      await post(p, "/v1/ai/rag/ingest", {
        namespace: "gen",
        document: { id: "new", text: "zebra quokka lemur" },
      });
      assertEquals((await search(p, "quokka lemur", 1))[0]!.document_id, "new");
      await post(p, "/v1/ai/rag/ingest", {
        namespace: "gen",
        document: { id: "new", text: "walrus narwhal" },
      });
      const hits = await search(p, "quokka lemur", 10);
      assert(hits.every((h) => h.document_id !== "new" || !h.text.includes("quokka")), JSON.stringify(hits));
      assertEquals((await search(p, "walrus narwhal", 1))[0]!.text, "walrus narwhal");
      const threshold = await post(p, "/v1/ai/search", {
        namespace: "gen",
        query: "walrus",
        threshold: 0.99,
      });
      assertEquals(threshold.body.data, []);
    });

    await t.step("the graph is saved; a reindex rebuilds it for the new vectors", async () => {
      const [before] = await p.internalSql(
        `select g.vectors_version::int as graph, n.vectors_version::int as ns, length(g.graph) > 0 as has
           from platform.ai_vector_graphs g join platform.ai_namespaces n on n.id = g.namespace_id`,
      );
      assertEquals([before!.graph, before!.ns, before!.has], [0, 0, true]);
      const res = await p.fetch("/v1/ai/namespaces/gen/reindex", {
        method: "POST",
        headers: { apikey: p.secretKey },
      })
        .then(json);
      assertEquals(res.status, 200, JSON.stringify(res.body));
      assertEquals(
        await p.internalSql("select count(*)::int as n from platform.ai_vector_graphs"),
        [{ n: 0 }],
        "a reindex drops the saved graph",
      );
      assertEquals((await search(p, "walrus narwhal", 1))[0]!.text, "walrus narwhal");
      const [after] = await p.internalSql("select vectors_version::int as v from platform.ai_vector_graphs");
      assertEquals(after!.v, 1);
    });

    await t.step("after a restart the saved graph is read back, not rebuilt", async () => {
      const expected = await search(p, queries[1]!);
      const [{ saved }] = await p.internalSql(
        "select saved_at::text as saved from platform.ai_vector_graphs",
      ) as Json[];
      await p.close({ keepSandbox: true });
      p = await startPlatform(ENV, { sandbox: p.sandbox });
      assertEquals(await search(p, queries[1]!), expected);
      const [again] = await p.internalSql("select saved_at::text as saved from platform.ai_vector_graphs");
      assertEquals(again!.saved, saved, "a rebuild would have saved the graph again");
    });

    await t.step("chunks another instance writes show up in this instance's searches", async () => {
      await search(p, "anything at all"); // this instance's index is loaded
      const other = new Corpus("hnsw"); // another instance: its own indexes, the same database
      const db = await p.platform.dbs.project("default");
      const ns = (await other.find(db, "gen"))!;
      const [vector] = (await post(p, "/v1/ai/embeddings", { input: "okapi tapir" })).body.data.embeddings;
      await other.putDocument(db, ns, {
        id: "elsewhere",
        metadata: { from: "other" },
        chunks: [{ text: "okapi tapir", embedding: Float32Array.from(vector) }],
      });
      const [hit] = await search(p, "okapi tapir", 1);
      assertEquals([hit!.document_id, hit!.text], ["elsewhere", "okapi tapir"]);
      await other.putDocument(db, ns, { id: "elsewhere", metadata: {}, chunks: [] });
      assert((await search(p, "okapi tapir", 10)).every((h) => h.document_id !== "elsewhere"));
      assertEquals(
        await other.search(db, (await other.find(db, "gen"))!, Float32Array.from(vector), 1, 0.99),
        [],
      );
    });

    await t.step("dropping the namespace drops its graph", async () => {
      const res = await p.fetch("/v1/ai/namespaces/gen", {
        method: "DELETE",
        headers: { apikey: p.secretKey },
      });
      assertEquals(res.status, 200);
      assertEquals(await p.internalSql("select count(*)::int as n from platform.ai_vector_graphs"), [{
        n: 0,
      }]);
    });
  } finally {
    await p.close();
  }
});
