// A fake OpenAI-compatible model server for tests and benchmarks: it speaks the real wire protocol
// (chat completions, SSE chunks, embeddings, errors) on a local port, and never reaches the internet.

/** A request the fake received. */
export interface FakeCall {
  path: string;
  body: Record<string, unknown>;
  authorization: string | null;
}

/** Options of {@linkcode startFakeOpenAI}. */
export interface FakeOptions {
  /** The API key it expects as `Authorization: Bearer …`; unset: any. */
  apiKey?: string;
}

/** A running fake server and what it observed. */
export interface FakeOpenAI {
  url: string;
  /** The base URL to give as AI_BASE_URL. */
  baseUrl: string;
  calls: FakeCall[];
  /** Streams whose client went away before the end. */
  aborted: number;
  /** Replies served next, in order, before the default echo. */
  replies: string[];
  /** Chat calls by path kind. */
  count(kind: "chat" | "embeddings"): number;
  close(): Promise<void>;
}

const STOP = new Set(["the", "a", "an", "of", "is", "what", "please", "tell", "me", "to"]);

/**
 * The fake's embedding: a bag of words without a few stopwords, hashed into `dims` dimensions, unit length.
 * A reordered or lightly reworded question stays close; a different subject does not.
 */
export function fakeEmbedding(text: string, dims: number): number[] {
  const v = new Array<number>(dims).fill(0);
  for (const w of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    if (STOP.has(w)) continue;
    let h = 2166136261;
    for (let i = 0; i < w.length; i++) h = Math.imul(h ^ w.charCodeAt(i), 16777619);
    v[(h >>> 0) % dims]! += 1;
  }
  const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0)) || 1;
  return v.map((x) => x / norm);
}

function words(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(t);
      resolve();
    }, { once: true });
  });

/**
 * Starts the fake on port 0. Behaviour by model name: `slow` answers after 3 s; `fail-500` and `fail-429`
 * fail once per distinct last message then succeed; `always-500` always fails; `bad-request` answers 400;
 * `slow-stream` streams one word every 100 ms. Embedding models: `fake-embed-2` has 32 dimensions, any other
 * 64. Other chat replies: `replies` in order, else `echo: <last user message>`. A token is a word: the reply is
 * cut at `max_tokens` words (`finish_reason: "length"`), as OpenAI does, except by `ignores-max-tokens`, which
 * answers in full like a server that disregards it. `no-usage` (chat and embeddings) reports no usage at all.
 */
export function startFakeOpenAI(options: FakeOptions = {}): FakeOpenAI {
  const calls: FakeCall[] = [];
  const failedOnce = new Set<string>();
  const state = { aborted: 0 };
  const replies: string[] = [];

  const error = (status: number, message: string, headers: Record<string, string> = {}) =>
    Response.json({ error: { message, type: "fake_error", code: null } }, { status, headers });

  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (req) => {
    const path = new URL(req.url).pathname;
    if (options.apiKey && req.headers.get("authorization") !== `Bearer ${options.apiKey}`) {
      return error(401, "Incorrect API key provided");
    }
    if (req.method === "GET" && path === "/v1/models") {
      return Response.json({ object: "list", data: [{ id: "fake-chat", object: "model" }] });
    }
    const body = await req.json() as Record<string, unknown>;
    calls.push({ path, body, authorization: req.headers.get("authorization") });

    if (path === "/v1/embeddings") {
      const inputs = typeof body.input === "string" ? [body.input] : body.input as string[];
      const dims = body.model === "fake-embed-2" ? 32 : 64;
      const tokens = inputs.reduce((n, t) => n + words(t), 0);
      return Response.json({
        object: "list",
        model: body.model,
        data: inputs.map((t, index) => ({ object: "embedding", index, embedding: fakeEmbedding(t, dims) })),
        ...(body.model === "no-usage" ? {} : { usage: { prompt_tokens: tokens, total_tokens: tokens } }),
      });
    }
    if (path !== "/v1/chat/completions") return error(404, `Unknown path ${path}`);

    const model = String(body.model);
    const messages = body.messages as { role: string; content: string }[];
    const last = messages.at(-1)?.content ?? "";
    if (model === "always-500") return error(500, "The server had an error");
    if (model === "bad-request") return error(400, "This model does not accept that request");
    if (model === "fail-500" || model === "fail-429") {
      const key = `${model}:${last}`;
      if (!failedOnce.has(key)) {
        failedOnce.add(key);
        return model === "fail-500"
          ? error(500, "Temporary failure", { "retry-after-ms": "1" })
          : error(429, "Rate limit reached", { "retry-after-ms": "1", "retry-after": "1" });
      }
    }
    if (model === "slow") await sleep(3000, req.signal);
    const full = replies.shift() ?? `echo: ${last}`;
    const limit = typeof body.max_tokens === "number" && model !== "ignores-max-tokens"
      ? body.max_tokens
      : Infinity;
    const cut = words(full) > limit;
    const content = cut
      ? full.split(/(?<= )/).filter((w) => w.trim()).slice(0, limit).join("").trimEnd()
      : full;
    const finishReason = cut ? "length" : "stop";
    const prompt = messages.reduce((n, m) => n + words(m.content), 0);
    const usage = {
      prompt_tokens: prompt,
      completion_tokens: words(content),
      total_tokens: prompt + words(content),
    };
    const id = `chatcmpl-${crypto.randomUUID()}`;
    const created = Math.floor(Date.now() / 1000);

    if (!body.stream) {
      return Response.json({
        id,
        object: "chat.completion",
        created,
        model,
        choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: finishReason }],
        ...(model === "no-usage" ? {} : { usage }),
      });
    }
    const pieces = content.split(/(?<= )/);
    const delay = model === "slow-stream" ? 100 : 0;
    const count = model === "slow-stream" ? 200 : pieces.length;
    const encoder = new TextEncoder();
    const frame = (
      delta: Record<string, string>,
      finish: string | null,
      extra: Record<string, unknown> = {},
    ) =>
      encoder.encode(
        `data: ${
          JSON.stringify({
            id,
            object: "chat.completion.chunk",
            created,
            model,
            choices: [{ index: 0, delta, finish_reason: finish }],
            ...extra,
          })
        }\n\n`,
      );
    let i = 0;
    let closed = false;
    req.signal.addEventListener("abort", () => {
      if (!closed) state.aborted++;
      closed = true;
    });
    return new Response(
      new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(frame({ role: "assistant", content: "" }, null));
        },
        async pull(controller) {
          if (delay) await sleep(delay, req.signal);
          if (req.signal.aborted || closed) return;
          if (i < count) {
            controller.enqueue(frame({ content: pieces[i % pieces.length]! }, null));
            i++;
            return;
          }
          controller.enqueue(frame({}, finishReason));
          const includeUsage = (body.stream_options as { include_usage?: boolean } | undefined)
            ?.include_usage;
          if (includeUsage) {
            controller.enqueue(
              encoder.encode(
                `data: ${
                  JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [], usage })
                }\n\n`,
              ),
            );
          }
          controller.enqueue(encoder.encode("data: [DONE]\n\n"));
          closed = true;
          controller.close();
        },
        cancel() {
          if (!closed) state.aborted++;
          closed = true;
        },
      }),
      { headers: { "content-type": "text/event-stream" } },
    );
  });
  const url = `http://127.0.0.1:${server.addr.port}`;
  return {
    url,
    baseUrl: `${url}/v1`,
    calls,
    replies,
    get aborted() {
      return state.aborted;
    },
    count: (kind) =>
      calls.filter((c) => c.path === (kind === "chat" ? "/v1/chat/completions" : "/v1/embeddings")).length,
    async close() {
      await server.shutdown();
    },
  };
}
