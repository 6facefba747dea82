import { assert, assertEquals, assertMatch } from "./assert.ts";
import { startFakeOpenAI } from "./fake_openai.ts";
import { awayFromMinuteEnd, json, startPlatform, type TestPlatform } from "./harness.ts";

function mint(p: TestPlatform, headers: Record<string, string>, body?: unknown, project = "default") {
  return p.fetch(`/v1/ai/${project}/session`, { method: "POST", headers, json: body }).then(json);
}

function withTicket(
  p: TestPlatform,
  path: string,
  ticket: string,
  body: unknown,
  extra: Record<string, string> = {},
) {
  return p.fetch(path, {
    method: "POST",
    headers: { authorization: `Bearer ${ticket}`, ...extra },
    json: body,
  });
}

Deno.test("AI sessions: tickets, budget debits, exhaustion, expiry, ticket alone", async (t) => {
  const fake = startFakeOpenAI();
  const p = await startPlatform({
    AI_BASE_URL: fake.baseUrl,
    AI_CHAT_MODEL: "fake-chat",
    AI_SESSION_BUDGET: "200",
    AI_SESSION_MINT_PER_MIN: "3",
  });
  try {
    let ticket = "";
    await t.step("minting with the public key gives a 15-minute ticket with the default budget", async () => {
      await awayFromMinuteEnd(); // the mint limit counts per UTC minute: this step's mints and the next two's
      const before = Date.now();
      const { status, body } = await mint(p, { apikey: p.publicKey });
      assertEquals(status, 200, JSON.stringify(body));
      assertMatch(body.data.ticket, /^ait_[A-Za-z0-9_-]{40,}$/);
      assertEquals(body.data.budget_remaining, 200);
      const ttl = Date.parse(body.data.expires_at) - before;
      assert(ttl > 14 * 60_000 && ttl <= 15 * 60_000 + 5_000, `ttl ${ttl}`);
      ticket = body.data.ticket;
    });

    await t.step("minting needs a key of that project; only service_role picks the budget", async () => {
      assertEquals((await mint(p, {})).status, 401);
      assertEquals((await mint(p, { apikey: "pk_default_wrongwrongwrongwrong" })).status, 401);
      assertEquals((await mint(p, { apikey: p.publicKey }, {}, "nope")).body.error.code, "PROJECT_NOT_FOUND");
      assertEquals((await mint(p, { apikey: p.publicKey }, { budget: 1_000_000 })).status, 403);
      const big = await mint(p, { apikey: p.secretKey }, { budget: 5000, ttl_secs: 60 });
      assertEquals(big.body.data.budget_remaining, 5000);
    });

    await t.step(
      "minting with the public key is rate limited per client; the secret key is not",
      async () => {
        assertEquals((await mint(p, { apikey: p.publicKey })).status, 200);
        assertEquals((await mint(p, { apikey: p.publicKey })).status, 200);
        const limited = await mint(p, { apikey: p.publicKey });
        assertEquals([limited.status, limited.body.error.code], [429, "rate_limit_exceeded"]);
        assertMatch(limited.body.error.message, /Too many AI session mints/);
        assertEquals((await mint(p, { apikey: p.secretKey })).status, 200);
      },
    );

    await t.step("chat with the ticket alone debits the tokens used", async () => {
      const res = await withTicket(p, "/v1/ai/session/chat", ticket, {
        messages: [{ role: "user", content: "one two three" }],
      });
      const { status, body } = await json(res);
      assertEquals(status, 200, JSON.stringify(body));
      assertEquals(body.data.message.content, "echo: one two three");
      assertEquals(body.data.finish_reason, "stop");
      assertEquals(body.data.usage.total_tokens, 7); // 3 prompt words + 4 reply words (fake count)
      assertEquals(body.data.budget_remaining, 193);
      // No max_tokens asked: the provider is told what the budget leaves after the prompt's bound (13 bytes + 24).
      assertEquals(fake.calls.at(-1)!.body.max_tokens, 200 - 37);
    });

    await t.step("a cache hit costs nothing", async () => {
      const { body } = await json(
        await withTicket(p, "/v1/ai/session/chat", ticket, {
          messages: [{ role: "user", content: "one two three" }],
        }),
      );
      assertEquals(body.data.cache.status, "hit");
      assertEquals(body.data.budget_remaining, 193);
    });

    await t.step("embed answers {embedding, budget_remaining} and debits", async () => {
      const { status, body } = await json(
        await withTicket(p, "/v1/ai/session/embed", ticket, { input: "a b c d e" }),
      );
      assertEquals(status, 200, JSON.stringify(body));
      assertEquals(body.data.embedding.length, 256);
      assertEquals(body.data.budget_remaining, 188);
    });

    await t.step("streaming with the ticket debits when the stream ends", async () => {
      const res = await withTicket(p, "/v1/ai/session/chat/stream", ticket, {
        messages: [{ role: "user", content: "stream six words here please now" }],
      });
      assertEquals(res.status, 200);
      const text = await res.text();
      assert(text.trimEnd().endsWith("data: [DONE]"));
      // 6 prompt words + 7 reply words = 13; the settlement lands right after the last frame. Until then the
      // stream holds the rest of the budget (it asked no max_tokens), so a poll is 429; each poll that passes
      // spends one token itself (bounded wait, not a timing assertion).
      let left = -1;
      let polls = 0;
      for (let i = 0; i < 10 && left !== 188 - 13 - polls; i++) {
        await new Promise((r) => setTimeout(r, 50 * i));
        const { status, body } = await json(
          await withTicket(p, "/v1/ai/session/embed", ticket, { input: "x" }),
        );
        if (status === 429) continue;
        assertEquals(status, 200, JSON.stringify(body));
        polls++;
        left = body.data.budget_remaining;
      }
      assertEquals(left, 188 - 13 - polls);
    });

    await t.step(
      "a provider that overspends its cap brings the budget to 0, not below; the next is 403 QUOTA_EXCEEDED",
      async () => {
        fake.replies.push(Array.from({ length: 400 }, (_, i) => `w${i}`).join(" "));
        const { status, body } = await json(
          await withTicket(p, "/v1/ai/session/chat", ticket, {
            model: "ignores-max-tokens",
            messages: [{ role: "user", content: "a long answer please" }],
          }),
        );
        assertEquals(status, 200, JSON.stringify(body));
        assert(body.data.usage.total_tokens > 200, "the fake answered past max_tokens");
        assertEquals(body.data.budget_remaining, 0);
        const before = fake.count("chat");
        for (
          const [path, req] of [
            ["/v1/ai/session/chat", { messages: [{ role: "user", content: "more" }] }],
            ["/v1/ai/session/embed", { input: "more" }],
            ["/v1/ai/session/chat/stream", { messages: [{ role: "user", content: "more" }] }],
          ] as const
        ) {
          const spent = await json(await withTicket(p, path, ticket, req));
          assertEquals(spent.status, 403, path);
          assertEquals(spent.body.error.code, "QUOTA_EXCEEDED");
          assertEquals(spent.body.error.type, "quota");
        }
        assertEquals(fake.count("chat"), before);
      },
    );

    await t.step("concurrent calls never spend more than the budget", async () => {
      const minted = await mint(p, { apikey: p.secretKey }, { budget: 10 });
      const fresh = minted.body.data.ticket;
      const results = await Promise.all(
        Array.from(
          { length: 8 },
          (_, i) => withTicket(p, "/v1/ai/session/embed", fresh, { input: `w${i} x y` }).then(json),
        ),
      );
      // 3 tokens each, reserved whole: 10 → 7 → 4 → 1; one token cannot pay for a fourth. A refusal is 403
      // QUOTA_EXCEEDED, or 429 when it came while others still held their reservation.
      assertEquals(results.filter((r) => r.status === 200).length, 3);
      for (const r of results.filter((r) => r.status !== 200)) {
        assert(
          (r.status === 403 && r.body.error.code === "QUOTA_EXCEEDED") ||
            (r.status === 429 && r.body.error.code === "rate_limit_exceeded"),
          JSON.stringify(r),
        );
      }
      const left = results.filter((r) => r.status === 200).map((r) => r.body.data.budget_remaining);
      assertEquals(Math.min(...left), 1);
      const after = await json(await withTicket(p, "/v1/ai/session/embed", fresh, { input: "a b" }));
      assertEquals([after.status, after.body.error.code], [403, "QUOTA_EXCEEDED"]);
      assertMatch(after.body.error.message, /may need up to 2 tokens and 1 are left/);
    });

    await t.step("ticket with apikey is refused (401); the ticket is not an API key elsewhere", async () => {
      const both = await json(
        await withTicket(p, "/v1/ai/session/chat", ticket, { messages: [{ role: "user", content: "x" }] }, {
          apikey: p.publicKey,
        }),
      );
      assertEquals(both.status, 401);
      assertMatch(both.body.error.message, /sent alone: remove the apikey header/);
      const elsewhere = await p.fetch("/v1/ai/chat", {
        method: "POST",
        headers: { authorization: `Bearer ${ticket}` },
        json: { messages: [{ role: "user", content: "x" }] },
      });
      assertEquals(elsewhere.status, 401);
      const none = await json(
        await p.fetch("/v1/ai/session/embed", { method: "POST", json: { input: "x" } }),
      );
      assertEquals(none.status, 401);
      const forged = await json(await withTicket(p, "/v1/ai/session/embed", "ait_forged", { input: "x" }));
      assertEquals([forged.status, forged.body.error.code], [401, "INVALID_TOKEN"]);
    });

    await t.step("an expired ticket is 401 INVALID_TOKEN", async () => {
      const short = await mint(p, { apikey: p.secretKey }, { ttl_secs: 10 });
      const expiring = short.body.data.ticket;
      assertEquals((await withTicket(p, "/v1/ai/session/embed", expiring, { input: "x" })).status, 200);
      // Age the stored session rather than sleeping 10 s: the same row, expiry in the past.
      await p.platform.dbs.control.query(
        "update platform.ai_sessions set expires_at = now() - interval '1 second' where expires_at < now() + interval '11 seconds'",
      );
      const { status, body } = await json(
        await withTicket(p, "/v1/ai/session/embed", expiring, { input: "x" }),
      );
      assertEquals([status, body.error.code], [401, "INVALID_TOKEN"]);
    });

    await t.step("a revoked ticket is 401 INVALID_TOKEN; revoking needs the ticket alone", async () => {
      const minted = await mint(p, { apikey: p.secretKey });
      const ticket = minted.body.data.ticket;
      assertEquals((await withTicket(p, "/v1/ai/session/embed", ticket, { input: "x" })).status, 200);
      const withKey = await json(
        await p.fetch("/v1/ai/session", {
          method: "DELETE",
          headers: { authorization: `Bearer ${ticket}`, apikey: p.publicKey },
        }),
      );
      assertEquals(withKey.status, 401);
      const revoke = () =>
        p.fetch("/v1/ai/session", { method: "DELETE", headers: { authorization: `Bearer ${ticket}` } }).then(
          json,
        );
      const revoked = await revoke();
      assertEquals([revoked.status, revoked.body.data], [200, { revoked: true }]);
      const after = await json(await withTicket(p, "/v1/ai/session/embed", ticket, { input: "x" }));
      assertEquals([after.status, after.body.error.code], [401, "INVALID_TOKEN"]);
      const again = await revoke();
      assertEquals([again.status, again.body.error.code], [401, "INVALID_TOKEN"]);
      const rows = await p.platform.dbs.control.query(
        "select 1 from platform.ai_sessions where project_ref = $1",
        [
          "default",
        ],
      );
      assert(rows.length > 0, "the other tickets stay");
    });
  } finally {
    await p.close();
    await fake.close();
  }
});
