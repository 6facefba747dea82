import { assert, assertEquals, assertMatch } from "./assert.ts";
import { startFakeOpenAI } from "./fake_openai.ts";
import { awayFromMinuteEnd, json, startPlatform, type TestPlatform } from "./harness.ts";

function chat(p: TestPlatform, body: unknown, headers: Record<string, string> = {}) {
  return p.fetch("/v1/ai/chat", {
    method: "POST",
    headers: { apikey: p.secretKey, ...headers },
    json: body,
  });
}

/** Reads an SSE body into its `data:` payloads. */
async function sseData(res: Response): Promise<string[]> {
  const text = await res.text();
  return text.split("\n\n").filter((f) => f.startsWith("data: ")).map((f) => f.slice(6));
}

Deno.test("AI chat: provider, semantic cache, streaming, failures", async (t) => {
  const fake = startFakeOpenAI({ apiKey: "fake-key" });
  const p = await startPlatform({
    AI_BASE_URL: fake.baseUrl,
    AI_API_KEY: "fake-key",
    AI_CHAT_MODEL: "fake-chat",
    AI_EMBEDDING_MODEL: "fake-embed-1",
    AI_CACHE_THRESHOLD: "0.85",
    AI_TIMEOUT_MS: "1000",
    AI_MAX_RETRIES: "2",
    AI_USER_RATE_PER_MIN: "3",
    AI_PROVIDERS: JSON.stringify({
      second: { base_url: fake.baseUrl, api_key: "fake-key", chat_model: "other" },
    }),
  });
  try {
    await t.step("chat answers 200 with the reply, model, usage and a miss", async () => {
      const { status, body } = await json(
        await chat(p, { messages: [{ role: "user", content: "hello there" }] }),
      );
      assertEquals(status, 200);
      assertEquals(body.data.message, { role: "assistant", content: "echo: hello there" });
      assertEquals(body.data.model, "fake-chat");
      assertEquals(body.data.usage, { prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 });
      assertEquals(body.data.cache, { status: "miss" });
      assertEquals(body.meta.cache, { status: "miss" });
      assertEquals(fake.calls.at(-1)!.authorization, "Bearer fake-key");
    });

    const base = {
      system: "You are terse.",
      model: "fake-chat",
      temperature: 0.2,
      messages: [
        { role: "user", content: "Hi" },
        { role: "assistant", content: "Hello" },
        { role: "user", content: "What is the capital of France" },
      ],
    };
    await t.step("cache: the first ask misses and calls the provider", async () => {
      const before = fake.count("chat");
      const { body } = await json(await chat(p, base));
      assertEquals(body.data.cache.status, "miss");
      assertEquals(fake.count("chat"), before + 1);
      const sent = fake.calls.at(-1)!.body;
      assertEquals((sent.messages as unknown[])[0], { role: "system", content: "You are terse." });
      assertEquals(sent.temperature, 0.2);
    });

    await t.step("cache: the identical question hits with similarity 1, no provider call", async () => {
      const before = fake.count("chat");
      const res = await chat(p, base);
      const { body } = await json(res);
      assertEquals(body.data.cache, { status: "hit", similarity: 1 });
      assertEquals(body.data.message.content, "echo: What is the capital of France");
      assertEquals(body.data.usage.total_tokens, 0);
      assertEquals(res.headers.get("x-cache"), "hit");
      assertEquals(fake.count("chat"), before);
    });

    await t.step("cache: a paraphrase above the threshold hits", async () => {
      const before = fake.count("chat");
      const paraphrase = {
        ...base,
        messages: [...base.messages.slice(0, 2), { role: "user", content: "the capital of France is what?" }],
      };
      const { body } = await json(await chat(p, paraphrase));
      assertEquals(body.data.cache.status, "hit");
      assert(body.data.cache.similarity >= 0.85 && body.data.cache.similarity <= 1);
      assertEquals(fake.count("chat"), before);
    });

    await t.step("cache: a different question in the same partition misses", async () => {
      const before = fake.count("chat");
      const other = {
        ...base,
        messages: [...base.messages.slice(0, 2), { role: "user", content: "What is the capital of Germany" }],
      };
      const { body } = await json(await chat(p, other));
      assertEquals(body.data.cache.status, "miss");
      assertEquals(body.data.message.content, "echo: What is the capital of Germany");
      assertEquals(fake.count("chat"), before + 1);
    });

    const misses: { name: string; body: unknown }[] = [
      { name: "different system prompt", body: { ...base, system: "You are verbose." } },
      { name: "no system prompt", body: { ...base, system: undefined } },
      { name: "different model", body: { ...base, model: "fake-chat-2" } },
      { name: "different temperature", body: { ...base, temperature: 0.3 } },
      { name: "max_tokens set", body: { ...base, max_tokens: 50 } },
      {
        name: "different earlier turn",
        body: { ...base, messages: [{ role: "user", content: "Hey" }, ...base.messages.slice(1)] },
      },
      { name: "earlier turns dropped", body: { ...base, messages: base.messages.slice(2) } },
      { name: "another provider", body: { ...base, provider: "second" } },
    ];
    for (const m of misses) {
      await t.step(`cache: same last message, ${m.name}: miss`, async () => {
        const before = fake.count("chat");
        const { status, body } = await json(await chat(p, m.body));
        assertEquals(status, 200);
        assertEquals(body.data.cache.status, "miss");
        assertEquals(fake.count("chat"), before + 1);
      });
    }

    await t.step("cache: false and Cache-Control: no-cache bypass it", async () => {
      const before = fake.count("chat");
      assertEquals((await json(await chat(p, { ...base, cache: false }))).body.data.cache.status, "miss");
      const res = await chat(p, base, { "cache-control": "no-cache" });
      assertEquals((await json(res)).body.data.cache.status, "miss");
      assertEquals(fake.count("chat"), before + 2);
      // and the cached answer is still there for a normal call
      assertEquals((await json(await chat(p, base))).body.data.cache.status, "hit");
    });

    await t.step(
      "per-request provider uses that provider's default model; unknown provider is 400",
      async () => {
        const { body } = await json(
          await chat(p, { provider: "second", messages: [{ role: "user", content: "x" }] }),
        );
        assertEquals(body.data.model, "other");
        const bad = await json(
          await chat(p, { provider: "nope", messages: [{ role: "user", content: "x" }] }),
        );
        assertEquals(bad.status, 400);
        assertMatch(
          bad.body.error.message,
          /Unknown AI provider "nope": configured providers are "default", "second"/,
        );
      },
    );

    await t.step("retries: one 500 or one 429 then success is a 200", async () => {
      for (const model of ["fail-500", "fail-429"]) {
        const before = fake.count("chat");
        const { status, body } = await json(
          await chat(p, { model, cache: false, messages: [{ role: "user", content: `retry ${model}` }] }),
        );
        assertEquals(status, 200, JSON.stringify(body));
        assertEquals(fake.count("chat"), before + 2);
      }
    });

    const failuresTable = [
      {
        model: "always-500",
        status: 503,
        code: "SERVICE_UNAVAILABLE",
        message: /AI provider "default" failed \(500\)/,
      },
      {
        model: "bad-request",
        status: 400,
        code: "VALIDATION_ERROR",
        message: /rejected the request \(400\)/,
      },
      { model: "slow", status: 504, code: "TIMEOUT", message: /did not answer in time/ },
    ];
    for (const f of failuresTable) {
      await t.step(`provider failure: ${f.model} → ${f.status} ${f.code}`, async () => {
        const before = fake.count("chat");
        const { status, body } = await json(
          await chat(p, { model: f.model, messages: [{ role: "user", content: "x" }], cache: false }),
        );
        assertEquals(status, f.status);
        assertEquals(body.error.code, f.code);
        assertMatch(body.error.message, f.message);
        if (f.model === "always-500") assertEquals(fake.count("chat"), before + 3); // 1 + 2 retries
      });
    }

    await t.step("embeddings: one or many inputs through the provider", async () => {
      const one = await json(
        await p.fetch("/v1/ai/embeddings", {
          method: "POST",
          headers: { apikey: p.secretKey },
          json: { input: "hello" },
        }),
      );
      assertEquals(one.status, 200);
      assertEquals(one.body.data.model, "fake-embed-1");
      assertEquals(one.body.data.embeddings.length, 1);
      assertEquals(one.body.data.embeddings[0].length, 64);
      const many = await json(
        await p.fetch("/v1/ai/embeddings", {
          method: "POST",
          headers: { apikey: p.secretKey },
          json: { input: ["a b", "c d e"], model: "local-lexical-v1" },
        }),
      );
      assertEquals(many.body.data.model, "local-lexical-v1");
      assertEquals(many.body.data.embeddings.length, 2);
      assertEquals(many.body.data.usage.total_tokens, 5);
      // A server that reports no usage is counted by estimate (four characters a token), never as free.
      const unreported = await json(
        await p.fetch("/v1/ai/embeddings", {
          method: "POST",
          headers: { apikey: p.secretKey },
          json: { input: ["abcdefgh", "abcd"], model: "no-usage" },
        }),
      );
      assertEquals(unreported.status, 200, JSON.stringify(unreported.body));
      assertEquals(unreported.body.data.usage.total_tokens, 3);
    });

    await t.step("streaming: OpenAI chunks in order, [DONE] last, then a cached stream", async () => {
      const body = { messages: [{ role: "user", content: "stream these four words" }] };
      const res = await p.fetch("/v1/ai/chat/stream", {
        method: "POST",
        headers: { apikey: p.secretKey },
        json: body,
      });
      assertEquals(res.status, 200);
      assertMatch(res.headers.get("content-type") ?? "", /^text\/event-stream/);
      assertEquals(res.headers.get("x-cache"), "miss");
      const frames = await sseData(res);
      assertEquals(frames.at(-1), "[DONE]");
      const chunks = frames.slice(0, -1).map((f) => JSON.parse(f));
      for (const c of chunks) assertEquals(c.object, "chat.completion.chunk");
      const text = chunks.map((c) => c.choices[0]?.delta?.content ?? "").join("");
      assertEquals(text, "echo: stream these four words");
      assertEquals(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0].finish_reason, "stop");

      const again = await p.fetch("/v1/ai/chat/stream", {
        method: "POST",
        headers: { apikey: p.secretKey },
        json: body,
      });
      assertEquals(again.headers.get("x-cache"), "hit");
      const cached = await sseData(again);
      assertEquals(cached.at(-1), "[DONE]");
      assertEquals(JSON.parse(cached[0]!).choices[0].delta.content, "echo: stream these four words");
    });

    await t.step("streaming: a provider failure before the first byte is an ordinary error", async () => {
      const { status, body } = await json(
        await p.fetch("/v1/ai/chat/stream", {
          method: "POST",
          headers: { apikey: p.secretKey },
          json: { model: "always-500", messages: [{ role: "user", content: "x" }] },
        }),
      );
      assertEquals(status, 503);
      assertEquals(body.error.code, "SERVICE_UNAVAILABLE");
    });

    await t.step("streaming: a client that disconnects mid-stream aborts the provider request", async () => {
      const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, p.handler);
      try {
        // Through a real socket, a whole stream arrives in order and ends with [DONE].
        const whole = await fetch(`http://127.0.0.1:${server.addr.port}/v1/ai/chat/stream`, {
          method: "POST",
          headers: { apikey: p.secretKey, "content-type": "application/json" },
          body: JSON.stringify({ cache: false, messages: [{ role: "user", content: "over a real socket" }] }),
        });
        const frames = await sseData(whole);
        assertEquals(frames.at(-1), "[DONE]");
        assertEquals(
          frames.slice(0, -1).map((f) => JSON.parse(f).choices[0]?.delta?.content ?? "").join(""),
          "echo: over a real socket",
        );
        const abortedBefore = fake.aborted;
        const client = new AbortController();
        const res = await fetch(`http://127.0.0.1:${server.addr.port}/v1/ai/chat/stream`, {
          method: "POST",
          headers: { apikey: p.secretKey, "content-type": "application/json" },
          body: JSON.stringify({
            model: "slow-stream",
            messages: [{ role: "user", content: "go on forever" }],
          }),
          signal: client.signal,
        });
        const reader = res.body!.getReader();
        const first = await reader.read();
        assert(!first.done);
        client.abort();
        await reader.cancel().catch(() => {});
        for (let i = 0; i < 100 && fake.aborted === abortedBefore; i++) {
          await new Promise((r) => setTimeout(r, 50));
        }
        assertEquals(fake.aborted, abortedBefore + 1);
      } finally {
        await server.shutdown();
      }
    });

    await t.step(
      "roles: anon is refused (use a session ticket); a signed-in user may chat, within a limit",
      async () => {
        const anon = await json(
          await chat(p, { messages: [{ role: "user", content: "x" }] }, { apikey: p.publicKey }),
        );
        assertEquals(anon.status, 403);
        assertEquals(anon.body.error.code, "FORBIDDEN");
        await awayFromMinuteEnd(); // the user limit counts per UTC minute: the calls below must fall in one
        const signup = await json(
          await p.fetch("/v1/auth/signup", {
            method: "POST",
            headers: { apikey: p.publicKey },
            json: { email: "ai-user@example.com", password: "password-123" },
          }),
        );
        const token = signup.body.data.session.access_token;
        const user = await json(
          await chat(p, { messages: [{ role: "user", content: "hi from a user" }] }, {
            apikey: p.publicKey,
            authorization: `Bearer ${token}`,
          }),
        );
        assertEquals(user.status, 200);
        const usage = await json(
          await p.fetch("/v1/ai/usage", {
            headers: { apikey: p.publicKey, authorization: `Bearer ${token}` },
          }),
        );
        assertEquals(usage.status, 403);

        // AI_USER_RATE_PER_MIN=3: the user's second and third calls pass, the fourth is 429 with Retry-After.
        const userHeaders = { apikey: p.publicKey, authorization: `Bearer ${token}` };
        for (let i = 0; i < 2; i++) {
          assertEquals(
            (await chat(p, { messages: [{ role: "user", content: `n${i}` }] }, userHeaders)).status,
            200,
          );
        }
        const limited = await chat(p, { messages: [{ role: "user", content: "n3" }] }, userHeaders);
        const limitedBody = await limited.json();
        assertEquals([limited.status, limitedBody.error.code], [429, "rate_limit_exceeded"]);
        assertMatch(limited.headers.get("retry-after") ?? "", /^\d+$/);
        // the secret key is not limited
        assertEquals((await chat(p, { messages: [{ role: "user", content: "n4" }] })).status, 200);
      },
    );

    await t.step("bad input: 400 naming the field, nothing sent to the provider", async () => {
      const before = fake.calls.length;
      const { status, body } = await json(await chat(p, { messages: [], temperature: 9 }));
      assertEquals(status, 400);
      assertMatch(body.error.message, /messages/);
      assertMatch(body.error.message, /temperature/);
      assertEquals(fake.calls.length, before);
    });

    await t.step("usage is recorded per project: requests, tokens and cache hits", async () => {
      const { status, body } = await json(
        await p.fetch("/v1/ai/usage", { headers: { apikey: p.secretKey } }),
      );
      assertEquals(status, 200);
      const row = body.data.find((r: { model: string; kind: string }) =>
        r.model === "fake-chat" && r.kind === "chat"
      );
      assert(row, JSON.stringify(body.data));
      assert(row.requests >= 5);
      assert(row.cache_hits >= 3);
      assert(row.total_tokens > 0);
      assert(body.data.some((r: { kind: string }) => r.kind === "embeddings"));
    });
  } finally {
    await p.close();
    await fake.close();
  }
});
