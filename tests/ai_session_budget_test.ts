import { promptTokenBound } from "../services/ai/chat.ts";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { startFakeOpenAI } from "./fake_openai.ts";
import { json, startPlatform } from "./harness.ts";

/** `n` distinct words: the fake counts a token per word. */
function words(n: number, prefix: string): string {
  return Array.from({ length: n }, (_, i) => `${prefix}${i + 1}`).join(" ");
}

/** The bound a ticket call is admitted and capped on, for one user message. */
function bound(question: string): number {
  return promptTokenBound([{ role: "user", content: question }]);
}

/** Reads an SSE body into its `data:` payloads. */
async function sseData(res: Response): Promise<string[]> {
  const text = await res.text();
  return text.split("\n\n").filter((f) => f.startsWith("data: ")).map((f) => f.slice(6));
}

/** The content an SSE stream carried, and its content-bearing chunks. */
function streamed(frames: string[]): { content: string; pieces: number; finish: string[] } {
  let content = "";
  let pieces = 0;
  const finish: string[] = [];
  for (const f of frames) {
    if (f === "[DONE]") continue;
    for (const c of JSON.parse(f).choices ?? []) {
      if (c.delta?.content) {
        content += c.delta.content;
        pieces++;
      }
      if (c.finish_reason) finish.push(c.finish_reason);
    }
  }
  return { content, pieces, finish };
}

Deno.test("AI sessions: a ticket call never spends more than the budget left", async (t) => {
  const fake = startFakeOpenAI();
  const p = await startPlatform({ AI_BASE_URL: fake.baseUrl, AI_CHAT_MODEL: "fake-chat" });
  const mint = async (budget: number): Promise<string> => {
    const { status, body } = await json(
      await p.fetch("/v1/ai/default/session", {
        method: "POST",
        headers: { apikey: p.secretKey },
        json: { budget },
      }),
    );
    assertEquals(status, 200, JSON.stringify(body));
    return body.data.ticket;
  };
  const ticketCall = (path: string, ticket: string, body: unknown) =>
    p.fetch(`/v1/ai/session/${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${ticket}` },
      json: body,
    });
  const ticketChat = async (ticket: string, body: Record<string, unknown>) =>
    await json(await ticketCall("chat", ticket, body));
  const keyChat = async (body: Record<string, unknown>) =>
    await json(
      await p.fetch("/v1/ai/chat", { method: "POST", headers: { apikey: p.secretKey }, json: body }),
    );
  const ask = (content: string) => [{ role: "user", content }];
  /** Waits (bounded) for a stream's settlement: an embed of "x" stops being 429 once the stream let go. */
  const settledBudget = async (ticket: string) => {
    for (let i = 0; i < 20; i++) {
      const { status, body } = await json(await ticketCall("embed", ticket, { input: "x" }));
      if (status !== 429) return { status, body };
      await new Promise((r) => setTimeout(r, 25 * i));
    }
    throw new Error("the stream's reservation was never settled");
  };

  try {
    await t.step("the prompt's bound: one token per UTF-8 byte plus the chat template", () => {
      assertEquals(bound("count the words"), 15 + 8 + 16);
      assertEquals(bound("été"), 5 + 8 + 16);
    });

    let ticket = "";
    await t.step(
      "a nearly spent ticket runs a capped call: max_tokens is what the budget leaves",
      async () => {
        const q = "count the words";
        ticket = await mint(bound(q) + 5);
        fake.replies.push(words(30, "w"));
        const { status, body } = await ticketChat(ticket, { messages: ask(q) });
        assertEquals(status, 200, JSON.stringify(body));
        assertEquals(fake.calls.at(-1)!.body.max_tokens, 5);
        assertEquals(body.data.message.content, "w1 w2 w3 w4 w5");
        assertEquals(body.data.finish_reason, "length");
        assertEquals(body.data.usage, { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 });
        assertEquals(body.data.budget_remaining, bound(q) + 5 - 8);
      },
    );

    await t.step("a max_tokens that fits is sent as asked", async () => {
      const { status, body } = await ticketChat(ticket, { messages: ask("hi"), max_tokens: 2 });
      assertEquals(status, 200, JSON.stringify(body));
      assertEquals(fake.calls.at(-1)!.body.max_tokens, 2);
      assertEquals(body.data.budget_remaining, bound("count the words") + 5 - 8 - 3);
    });

    await t.step(
      "a prompt whose bound exceeds the budget is 403 QUOTA_EXCEEDED; nothing sent or spent",
      async () => {
        const left = bound("count the words") + 5 - 8 - 3;
        const q = "this prompt is too long for it";
        assert(bound(q) >= left);
        const before = fake.count("chat");
        for (const path of ["chat", "chat/stream"]) {
          const { status, body } = await json(await ticketCall(path, ticket, { messages: ask(q) }));
          assertEquals([status, body.error.code, body.error.type], [403, "QUOTA_EXCEEDED", "quota"], path);
          assertMatch(
            body.error.message,
            new RegExp(`may need up to ${bound(q) + 1} tokens and ${left} are left`),
          );
        }
        assertEquals(fake.count("chat"), before);
        const { body } = await json(await ticketCall("embed", ticket, { input: "x" }));
        assertEquals(body.data.budget_remaining, left - 1);
      },
    );

    await t.step("a provider that reports no usage is charged an estimate, never nothing", async () => {
      const budget = 1000;
      const fresh = await mint(budget);
      fake.replies.push("a reply of a few words");
      const { status, body } = await ticketChat(fresh, {
        model: "no-usage",
        messages: ask("how much does this cost"),
      });
      assertEquals(status, 200, JSON.stringify(body));
      assert(body.data.usage.total_tokens > 0, JSON.stringify(body.data.usage));
      assertEquals(body.data.budget_remaining, budget - body.data.usage.total_tokens);
    });

    await t.step(
      "a provider that ignores max_tokens takes the budget to 0, never below; then 403",
      async () => {
        fake.replies.push(words(200, "x"));
        const { status, body } = await ticketChat(ticket, {
          model: "ignores-max-tokens",
          messages: ask("go"),
        });
        assertEquals(status, 200, JSON.stringify(body));
        assertEquals(body.data.budget_remaining, 0);
        const before = fake.count("chat");
        for (const [path, req] of [["chat", { messages: ask("go") }], ["embed", { input: "go" }]] as const) {
          const spent = await json(await ticketCall(path, ticket, req));
          assertEquals([spent.status, spent.body.error.code], [403, "QUOTA_EXCEEDED"], path);
          assertMatch(spent.body.error.message, /budget is spent/);
        }
        assertEquals(fake.count("chat"), before);
      },
    );

    const q1 = "tell me about the ocean";
    const full1 = words(100, "ocean");
    await t.step(
      "cache: a full answer cached by a key caller is served free to a ticket it fits",
      async () => {
        fake.replies.push(full1);
        const first = await keyChat({ messages: ask(q1) });
        assertEquals(first.body.data.cache.status, "miss");
        assertEquals(first.body.data.usage.total_tokens, 105);
        const rich = await mint(1000);
        const before = fake.count("chat");
        const { body } = await ticketChat(rich, { messages: ask(q1) });
        assertEquals(body.data.cache.status, "hit");
        assertEquals(body.data.message.content, full1);
        assertEquals(body.data.budget_remaining, 1000);
        assertEquals(fake.count("chat"), before);
      },
    );

    await t.step(
      "cache: a cached answer that costs more than the ticket's budget is not served",
      async () => {
        const poor = await mint(80); // fits the prompt (bound 47), not the cached answer (105 tokens)
        fake.replies.push(full1);
        const before = fake.count("chat");
        const { status, body } = await ticketChat(poor, { messages: ask(q1) });
        assertEquals(status, 200, JSON.stringify(body));
        assertEquals(body.data.cache.status, "miss");
        assertEquals(fake.count("chat"), before + 1);
        assertEquals(fake.calls.at(-1)!.body.max_tokens, 80 - bound(q1));
        assertEquals(body.data.message.content, words(80 - bound(q1), "ocean"));
        assertEquals(body.data.budget_remaining, 80 - (5 + 80 - bound(q1)));
        // The capped, cut answer did not replace the full one.
        const again = await keyChat({ messages: ask(q1) });
        assertEquals(again.body.data.cache.status, "hit");
        assertEquals(again.body.data.message.content, full1);
      },
    );

    await t.step(
      "cache: a capped answer cut short is never served to a caller who asked for more",
      async () => {
        const q2 = "describe the mountains please";
        fake.replies.push(words(100, "peak"));
        const capped = await ticketChat(await mint(80), { messages: ask(q2) });
        assertEquals(capped.body.data.finish_reason, "length");
        fake.replies.push(words(100, "summit"));
        const { body } = await keyChat({ messages: ask(q2) });
        assertEquals(body.data.cache.status, "miss");
        assertEquals(body.data.message.content, words(100, "summit"));
        // A ticket that asked the same is not served the cut answer either: the full one, if it fits.
        const rich = await ticketChat(await mint(1000), { messages: ask(q2) });
        assertEquals([rich.body.data.cache.status, rich.body.data.message.content], [
          "hit",
          words(100, "summit"),
        ]);
      },
    );

    await t.step("cache: a capped answer that completed is stored and serves everyone", async () => {
      const q3 = "say something short";
      const capped = await ticketChat(await mint(bound(q3) + 10), { messages: ask(q3) });
      assertEquals(fake.calls.at(-1)!.body.max_tokens, 10);
      assertEquals([capped.body.data.finish_reason, capped.body.data.cache.status], ["stop", "miss"]);
      const before = fake.count("chat");
      const { body } = await keyChat({ messages: ask(q3) });
      assertEquals(body.data.cache.status, "hit");
      assertEquals(body.data.message.content, "echo: say something short");
      assertEquals(fake.count("chat"), before);
    });

    await t.step("cache: the partition is the request's max_tokens, not the budget's cap", async () => {
      const q4 = "list four colours";
      const own = await ticketChat(await mint(200), { messages: ask(q4), max_tokens: 2 });
      assertEquals([own.body.data.message.content, own.body.data.finish_reason], ["echo: list", "length"]);
      const before = fake.count("chat");
      const same = await keyChat({ messages: ask(q4), max_tokens: 2 });
      assertEquals([same.body.data.cache.status, same.body.data.message.content], ["hit", "echo: list"]);
      assertEquals(fake.count("chat"), before);
      const more = await keyChat({ messages: ask(q4) });
      assertEquals([more.body.data.cache.status, more.body.data.message.content], [
        "miss",
        "echo: list four colours",
      ]);
    });

    await t.step("streaming with a ticket: the provider gets the cap, the debit is its usage", async () => {
      const q = "stream the words";
      const budget = bound(q) + 20;
      const streamer = await mint(budget);
      fake.replies.push(words(50, "s"));
      const res = await ticketCall("chat/stream", streamer, { messages: ask(q) });
      assertEquals(res.status, 200);
      const frames = await sseData(res);
      assertEquals(frames.at(-1), "[DONE]");
      assertEquals(fake.calls.at(-1)!.body.max_tokens, 20);
      const got = streamed(frames);
      assertEquals(got.content.trim(), words(20, "s"));
      assertEquals(got.finish, ["length"]);
      const after = await settledBudget(streamer);
      assertEquals(after.body.data.budget_remaining, budget - (3 + 20) - 1);
      // Cut at the cap, it was not cached for callers who ask for more.
      fake.replies.push(words(50, "t"));
      const { body } = await keyChat({ messages: ask(q) });
      assertEquals([body.data.cache.status, body.data.message.content], ["miss", words(50, "t")]);
    });

    await t.step("streaming with a ticket: a provider that streams past the cap is cut there", async () => {
      const q = "stream the words again";
      const budget = bound(q) + 20;
      const streamer = await mint(budget);
      fake.replies.push(words(200, "g"));
      const res = await ticketCall("chat/stream", streamer, {
        model: "ignores-max-tokens",
        messages: ask(q),
      });
      assertEquals(res.status, 200);
      const frames = await sseData(res);
      assertEquals(frames.at(-1), "[DONE]");
      const got = streamed(frames);
      assertEquals(got.pieces, 20);
      assertEquals(got.content.trim(), words(20, "g"));
      assertEquals(got.finish, ["length"]);
      // The whole reservation is debited, never more: the budget is 0, and the ticket is spent.
      const after = await settledBudget(streamer);
      assertEquals([after.status, after.body.error.code], [403, "QUOTA_EXCEEDED"]);
    });

    await t.step(
      "a call without max_tokens holds the rest of the budget: a concurrent one is 429",
      async () => {
        const holder = await mint(500);
        const res = await ticketCall("chat/stream", holder, {
          model: "slow-stream",
          messages: ask("slowly"),
        });
        assertEquals(res.status, 200);
        const reader = res.body!.getReader();
        await reader.read();
        const busy = await json(await ticketCall("embed", holder, { input: "x" }));
        assertEquals([busy.status, busy.body.error.code], [429, "rate_limit_exceeded"]);
        assertMatch(busy.body.error.message, /reserved by a call in flight/);
        assertEquals(busy.body.error.type, "rate_limit");
        await reader.cancel();
        const after = await settledBudget(holder);
        assertEquals(after.status, 200, JSON.stringify(after.body));
        assert(after.body.data.budget_remaining > 0 && after.body.data.budget_remaining < 500);
      },
    );
  } finally {
    await p.close();
    await fake.close();
  }
});
