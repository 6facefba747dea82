import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "./env.ts";
import { limitUsers } from "./ai.ts";
import { allow, authenticate } from "./middleware/auth.ts";
import { failures, jsonBody, ok, PROJECT_SECURITY } from "./schemas.ts";

const NamespaceName = z.string().regex(
  /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/,
  "must be 1-64 letters, digits, _ . -",
);

const IngestRequest = z.strictObject({
  namespace: NamespaceName,
  document: z.strictObject({
    id: z.string().min(1).max(200).optional(),
    text: z.string().min(1).max(5_000_000),
    metadata: z.record(z.string(), z.unknown()).optional(),
  }),
  model: z.string().min(1).max(200).optional().openapi({
    description: "Embedding model of a new namespace; an existing namespace keeps the one it records",
  }),
  chunk_size: z.number().int().min(50).max(20_000).optional().openapi({
    description: "Default 800 characters",
  }),
  chunk_overlap: z.number().int().min(0).max(10_000).optional().openapi({
    description: "Default 150 characters",
  }),
}).openapi("AiIngestRequest");

const Hit = z.object({
  document_id: z.string(),
  chunk_id: z.string(),
  text: z.string(),
  score: z.number(),
  metadata: z.record(z.string(), z.unknown()),
}).openapi("AiSearchResult");

const Citation = z.object({
  document_id: z.string(),
  chunk_id: z.string(),
  text: z.string(),
  score: z.number(),
});

const SearchRequest = z.strictObject({
  query: z.string().min(1).max(100_000),
  namespace: NamespaceName,
  top_k: z.number().int().min(1).max(100).optional().openapi({ description: "Default 5" }),
  threshold: z.number().min(-1).max(1).optional().openapi({
    description: "Least cosine similarity, default 0",
  }),
}).openapi("AiSearchRequest");

const RagRequest = z.strictObject({
  namespace: NamespaceName,
  query: z.string().min(1).max(100_000),
  top_k: z.number().int().min(1).max(50).optional().openapi({ description: "Default 4" }),
  threshold: z.number().min(-1).max(1).optional(),
  model: z.string().min(1).max(200).optional(),
  provider: z.string().min(1).max(32).optional(),
}).openapi("AiRagRequest");

const Namespace = z.object({
  name: z.string(),
  documents: z.number().int(),
  chunks: z.number().int(),
  embedding_model: z.string(),
  created_at: z.string(),
}).openapi("AiNamespace");

const NsParam = z.object({ ns: NamespaceName });

/** RAG, semantic search and namespaces (docs/ai.md). */
export const aiRagRoutes = new OpenAPIHono<AppEnv>();

aiRagRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/ai/rag/ingest",
    tags: ["AI"],
    summary: "Ingest a document: chunks with overlap, embeddings, stored in the namespace (service_role)",
    security: PROJECT_SECURITY,
    middleware: [authenticate, allow("service_role")] as const,
    request: jsonBody(IngestRequest),
    responses: {
      200: ok(z.object({ document_id: z.string(), chunks: z.number().int(), model: z.string() }), "Stored"),
      ...failures(400, 401, 403, 409, 503),
    },
  }),
  async (c) => {
    const result = await c.env.platform.ai.rag.ingest(c.var.project.ref, c.req.valid("json"));
    return c.json({ data: result, meta: null }, 200);
  },
);

aiRagRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/ai/rag",
    tags: ["AI"],
    summary: "Answer a question from a namespace, with citations of the chunks used",
    security: PROJECT_SECURITY,
    middleware: [authenticate, allow("service_role", "authenticated"), limitUsers] as const,
    request: jsonBody(RagRequest),
    responses: {
      200: ok(
        z.object({ answer: z.string(), citations: z.array(Citation), model: z.string() }),
        "The answer",
      ),
      ...failures(400, 401, 403, 404, 409, 503),
    },
  }),
  async (c) => {
    const result = await c.env.platform.ai.rag.answer(
      c.var.project.ref,
      c.req.valid("json"),
      c.req.raw.signal,
    );
    return c.json({ data: result, meta: null }, 200);
  },
);

aiRagRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/ai/search",
    tags: ["AI"],
    summary: "Semantic search of a namespace: the top_k chunks with similarity >= threshold",
    security: PROJECT_SECURITY,
    middleware: [authenticate, allow("service_role", "authenticated"), limitUsers] as const,
    request: jsonBody(SearchRequest),
    responses: { 200: ok(z.array(Hit), "Chunks, best first"), ...failures(400, 401, 403, 404, 409, 503) },
  }),
  async (c) => {
    const hits = await c.env.platform.ai.rag.search(c.var.project.ref, c.req.valid("json"));
    return c.json({ data: hits, meta: null }, 200);
  },
);

aiRagRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/ai/namespaces",
    tags: ["AI"],
    summary: "Namespaces with their counts and embedding model (service_role)",
    security: PROJECT_SECURITY,
    middleware: [authenticate, allow("service_role")] as const,
    responses: { 200: ok(z.array(Namespace), "Namespaces by name"), ...failures(401, 403) },
  }),
  async (c) => c.json({ data: await c.env.platform.ai.rag.namespaces(c.var.project.ref), meta: null }, 200),
);

aiRagRoutes.openapi(
  createRoute({
    method: "delete",
    path: "/v1/ai/namespaces/{ns}",
    tags: ["AI"],
    summary: "Delete a namespace and its whole corpus (service_role)",
    security: PROJECT_SECURITY,
    middleware: [authenticate, allow("service_role")] as const,
    request: { params: NsParam },
    responses: {
      200: ok(
        z.object({ name: z.string(), documents: z.number().int(), chunks: z.number().int() }),
        "What was deleted",
      ),
      ...failures(400, 401, 403, 404),
    },
  }),
  async (c) => {
    const result = await c.env.platform.ai.rag.deleteNamespace(c.var.project.ref, c.req.valid("param").ns);
    return c.json({ data: result, meta: null }, 200);
  },
);

aiRagRoutes.openapi(
  createRoute({
    method: "post",
    path: "/v1/ai/namespaces/{ns}/reindex",
    tags: ["AI"],
    summary: "Re-embed a namespace with the current embedding model, or the one given (service_role)",
    security: PROJECT_SECURITY,
    middleware: [authenticate, allow("service_role")] as const,
    request: {
      params: NsParam,
      body: {
        content: {
          "application/json": { schema: z.strictObject({ model: z.string().min(1).max(200).optional() }) },
        },
        required: false,
      },
    },
    responses: {
      200: ok(Namespace, "The namespace, with its new model"),
      ...failures(400, 401, 403, 404, 503),
    },
  }),
  async (c) => {
    const body = c.req.header("content-type")?.includes("json") ? c.req.valid("json") : {};
    const result = await c.env.platform.ai.rag.reindex(
      c.var.project.ref,
      c.req.valid("param").ns,
      body.model,
    );
    return c.json({ data: result, meta: null }, 200);
  },
);
