import { assert, assertEquals, assertMatch } from "./assert.ts";
import { type Json, json, startPlatform } from "./harness.ts";
import { alertClient, ticks } from "./alerts_fixtures.ts";

const VALID = {
  name: "base",
  metric: "errors",
  condition: "gt",
  threshold: 1,
  channel: "webhook",
  destination: "https://hooks.example.com/alerts",
};

Deno.test("alerts API: bad input, roles, long form, paging, unconfigured channels", async (t) => {
  const p = await startPlatform({ ALERTS_EVAL_SECS: "1" });
  const c = alertClient(p);
  const tick = ticks();
  try {
    await c.deploy("api");
    const base = await c.alert(VALID);

    await t.step(
      "every bad input is 400 VALIDATION_ERROR listing what is allowed; nothing is written",
      async () => {
        const cases: [string, Record<string, unknown>, RegExp][] = [
          [
            "unknown metric",
            { metric: "cpu" },
            /metric: must be one of invocations, errors, error_rate, timeouts, duration_p95_ms, duration_avg_ms, jobs_failed, jobs_dead, dlq_depth/,
          ],
          ["unknown condition", { condition: "above" }, /condition: must be one of gt, gte, lt, lte, eq/],
          ["unknown channel", { channel: "pager" }, /channel: must be one of email, sms, push, webhook/],
          ["threshold not a number", { threshold: "high" }, /threshold: must be a number/],
          ["threshold null", { threshold: null }, /threshold: must be a number/],
          [
            "error_rate above 1",
            { metric: "error_rate", threshold: 1.5 },
            /threshold: must be between 0 and 1/,
          ],
          [
            "error_rate below 0",
            { metric: "error_rate", threshold: -0.1 },
            /threshold: must be between 0 and 1/,
          ],
          ["empty destination", { destination: "" }, /destination: must not be empty/],
          ["webhook not a URL", { destination: "not a url" }, /destination: must be an http\(s\) URL/],
          ["webhook ftp", { destination: "ftp://example.com/x" }, /destination: must be an http\(s\) URL/],
          [
            "email malformed",
            { channel: "email", destination: "nobody" },
            /destination: must be an email address/,
          ],
          [
            "sms not E.164",
            { channel: "sms", destination: "555-1234" },
            /destination: must be a phone number in E\.164/,
          ],
          [
            "push token malformed",
            { channel: "push", destination: "x y" },
            /destination: must be a device token/,
          ],
          ["unknown field", { severity: "high" }, /Unrecognized key.*severity/],
          ["window too short", { window_secs: 59 }, /window_secs: must be 60–86400/],
          ["window too long", { window_secs: 86_401 }, /window_secs: must be 60–86400/],
          ["negative cooldown", { cooldown_secs: -1 }, /cooldown_secs: must be 0–/],
          ["missing name", { name: undefined }, /name/],
          ["unknown function", { function_name: "ghost" }, /function_name: function "ghost" does not exist/],
          [
            "email unconfigured",
            { channel: "email", destination: "ops@example.com" },
            /"email" is not configured.*email\.host and email\.from/,
          ],
          [
            "sms unconfigured",
            { channel: "sms", destination: "+15551234567" },
            /"sms" is not configured.*sms\.account_sid/,
          ],
          [
            "push unconfigured",
            { channel: "push", destination: "fcm:abcdefgh12345" },
            /"push" is not configured.*push\.fcm\.service_account/,
          ],
        ];
        for (const [what, change, message] of cases) {
          const res = await c.call("POST", "/v1/functions/alerts", {
            ...VALID,
            name: `bad ${what}`,
            ...change,
          });
          assertEquals([res.status, res.body.error?.code], [400, "VALIDATION_ERROR"], what);
          assertMatch(res.body.error.message, message, what);
        }
        const list = (await c.call("GET", "/v1/functions/alerts")).body.data;
        assertEquals(list.map((a: Json) => a.name), ["base"]);
        // PATCH: the same rules, unknown ids 404.
        const patches: [Record<string, unknown>, RegExp][] = [
          [{}, /at least one of/],
          [{ enabled: "yes" }, /enabled/],
          [{ name: "renamed" }, /Unrecognized key.*name/],
          [{ window_secs: 10 }, /window_secs: must be 60–86400/],
          [{ threshold: "x" }, /threshold: must be a number/],
          [{ destination: "mailto:x" }, /destination: must be an http\(s\) URL/],
        ];
        for (const [body, message] of patches) {
          const res = await c.call("PATCH", `/v1/functions/alerts/${base.id}`, body);
          assertEquals(res.status, 400, JSON.stringify(body));
          assertMatch(res.body.error.message, message);
        }
        assertEquals((await c.get(base.id)).updated_at, base.updated_at);
        const rate = await c.alert({ ...VALID, name: "rate", metric: "error_rate", threshold: 0.2 });
        const over = await c.call("PATCH", `/v1/functions/alerts/${rate.id}`, { threshold: 2 });
        assertMatch(over.body.error.message, /between 0 and 1/);
        await c.call("DELETE", `/v1/functions/alerts/${rate.id}`);
        const unknown = "00000000-0000-4000-8000-000000000000";
        assertEquals(
          (await c.call("PATCH", `/v1/functions/alerts/${unknown}`, { enabled: false })).status,
          404,
        );
        assertEquals((await c.call("PATCH", "/v1/functions/alerts/nope", { enabled: false })).status, 404);
        assertEquals((await c.call("DELETE", `/v1/functions/alerts/${unknown}`)).status, 404);
        assertEquals((await c.call("GET", `/v1/functions/alerts/${unknown}/events`)).status, 404);
        for (const q of ["limit=0", "limit=501", "offset=-1", "page=2"]) {
          assertEquals((await c.call("GET", `/v1/functions/alerts/events?${q}`)).status, 400, q);
          assertEquals((await c.call("GET", `/v1/functions/alerts/${base.id}/events?${q}`)).status, 400, q);
        }
        for (
          const q of ["window_secs=30", "window_secs=86401", "window_secs=abc", "function_name=ghost", "x=1"]
        ) {
          const res = await c.call("GET", `/v1/functions/metrics?${q}`);
          assertEquals([res.status, res.body.error.code], [400, "VALIDATION_ERROR"], q);
        }
      },
    );

    await t.step("POST on an existing name updates it (200), keeping its id and state", async () => {
      const again = await c.call("POST", "/v1/functions/alerts", {
        ...VALID,
        threshold: 5,
        window_secs: 600,
      });
      assertEquals(again.status, 200);
      assertEquals([again.body.data.id, again.body.data.threshold, again.body.data.window_secs], [
        base.id,
        5,
        600,
      ]);
      assertEquals((await c.call("GET", "/v1/functions/alerts")).body.data.length, 1);
    });

    await t.step("roles: service_role and admin only; the long form works", async () => {
      const signup = await json(
        await p.fetch("/v1/auth/signup", {
          method: "POST",
          headers: { apikey: p.publicKey },
          json: { email: "alerts-user@example.com", password: "password-1-long" },
        }),
      );
      const user = { apikey: p.publicKey, authorization: `Bearer ${signup.body.data.session.access_token}` };
      const routes: [string, string, unknown?][] = [
        ["POST", "/v1/functions/alerts", { ...VALID, name: "anon" }],
        ["GET", "/v1/functions/alerts"],
        ["PATCH", `/v1/functions/alerts/${base.id}`, { enabled: false }],
        ["DELETE", `/v1/functions/alerts/${base.id}`],
        ["GET", `/v1/functions/alerts/${base.id}/events`],
        ["GET", "/v1/functions/alerts/events"],
        ["GET", "/v1/functions/metrics"],
      ];
      for (const [method, path, body] of routes) {
        for (const headers of [{ apikey: p.publicKey }, user]) {
          const res = await c.call(method, path, body, headers);
          assertEquals([res.status, res.body.error?.code], [403, "FORBIDDEN"], `${method} ${path}`);
        }
        assertEquals((await c.call(method, path, body, {})).status, 401, `${method} ${path}`);
      }
      const admin = { authorization: `Bearer ${await p.adminToken()}` };
      assertEquals((await c.call("GET", "/v1/functions/alerts", undefined, admin)).status, 200);
      assertEquals((await c.call("GET", "/v1/functions/metrics", undefined, admin)).status, 200);
      const long = await c.call("GET", "/v1/functions/default/alerts");
      assertEquals(long.body.data.map((a: Json) => a.id), [base.id]);
      assertEquals((await c.call("GET", "/v1/functions/default/alerts/events")).status, 200);
      assertEquals((await c.call("GET", `/v1/functions/default/alerts/${base.id}/events`)).status, 200);
      assertEquals(
        (await c.call("GET", "/v1/functions/default/metrics?window_secs=60")).body.data.window_secs,
        60,
      );
      const made = await c.call("POST", "/v1/functions/default/alerts", { ...VALID, name: "long" }, admin);
      assertEquals(made.status, 201);
      assertEquals((await c.call("DELETE", `/v1/functions/default/alerts/${made.body.data.id}`)).status, 200);
      const doc = await (await p.fetch("/v1/openapi.json")).json();
      for (
        const path of [
          "/v1/functions/alerts",
          "/v1/functions/alerts/{id}",
          "/v1/functions/alerts/{id}/events",
          "/v1/functions/alerts/events",
          "/v1/functions/metrics",
        ]
      ) {
        assert(doc.paths[path], path);
      }
    });

    await t.step("paging of both event routes, newest first", async () => {
      // Each threshold change flips the alert at the next tick: 0 calls > -1 fires, > 5 resolves.
      const other = await c.alert({ ...VALID, name: "other", metric: "invocations", threshold: -1 });
      await c.call("PATCH", `/v1/functions/alerts/${base.id}`, { threshold: -1 });
      for (let i = 0; i < 6; i++) {
        const r = await p.platform.alerts.evaluate("default", tick.next());
        assertEquals(r.evaluated, 2);
        const next = i % 2 === 0 ? 5 : -1;
        await c.call("PATCH", `/v1/functions/alerts/${base.id}`, { threshold: next });
        await c.call("PATCH", `/v1/functions/alerts/${other.id}`, { threshold: next });
      }
      const all = (await c.call("GET", `/v1/functions/alerts/${base.id}/events?limit=500`)).body.data;
      assertEquals(all.map((e: Json) => e.status), [
        "resolved",
        "triggered",
        "resolved",
        "triggered",
        "resolved",
        "triggered",
      ]);
      const times = all.map((e: Json) => Date.parse(e.created_at));
      assert(times.every((t: number, i: number) => i === 0 || times[i - 1] >= t));
      const pages = [];
      for (const offset of [0, 2, 4, 6]) {
        pages.push(
          (await c.call("GET", `/v1/functions/alerts/${base.id}/events?limit=2&offset=${offset}`)).body.data,
        );
      }
      assertEquals(pages.map((page) => page.length), [2, 2, 2, 0]);
      assertEquals(pages.flat().map((e: Json) => e.id), all.map((e: Json) => e.id));
      const everyone = (await c.call("GET", "/v1/functions/alerts/events?limit=500")).body.data;
      assertEquals(everyone.length, 12);
      assertEquals(new Set(everyone.map((e: Json) => e.alert_id)), new Set([base.id, other.id]));
      const paged = [];
      for (let offset = 0; offset < 12; offset += 5) {
        paged.push(
          ...(await c.call("GET", `/v1/functions/alerts/events?limit=5&offset=${offset}`)).body.data,
        );
      }
      assertEquals(paged.map((e: Json) => e.id), everyone.map((e: Json) => e.id));
      assertEquals((await c.call("GET", "/v1/functions/alerts/events")).body.data.length, 12); // default 50
      assertEquals(
        (await c.call("GET", "/v1/functions/alerts/events?limit=1")).body.data[0].id,
        everyone[0].id,
      );
    });

    await t.step(
      "POST /v1/notifications/send on an unconfigured channel: 400 naming the setting, nothing queued",
      async () => {
        const before = (await c.call("GET", "/v1/notifications?limit=500")).body.data.length;
        const cases: [Record<string, unknown>, RegExp][] = [
          [
            { channel: "email", recipient: "ops@example.com", subject: "s", body: "b" },
            /email\.host and email\.from/,
          ],
          [
            { channel: "sms", recipient: "+15551234567", body: "b" },
            /sms\.account_sid, sms\.auth_token and sms\.from/,
          ],
          [{ channel: "push", recipient: "abcdefgh12345", body: "b" }, /push\.fcm\.service_account/],
          [{ channel: "push", recipient: "apns:abcdefgh12345", body: "b" }, /push\.apns\.team_id/],
        ];
        for (const [body, message] of cases) {
          const res = await c.call("POST", "/v1/notifications/send", body);
          assertEquals([res.status, res.body.error?.code], [400, "VALIDATION_ERROR"], JSON.stringify(body));
          assertMatch(res.body.error.message, message);
          assertMatch(res.body.error.message, /PATCH \/v1\/notifications\/settings/);
        }
        const batch = await c.call("POST", "/v1/notifications/send/batch", {
          requests: [{ channel: "email", recipient: "ops@example.com", body: "b" }],
        });
        assertMatch(JSON.stringify(batch.body), /email\.host/);
        assertEquals((await c.call("GET", "/v1/notifications?limit=500")).body.data.length, before);
        // Configured, the same send is queued.
        await c.call("PATCH", "/v1/notifications/settings", {
          email: { host: "127.0.0.1", from: "a@example.com" },
        });
        const ok = await c.call("POST", "/v1/notifications/send", cases[0]![0]);
        assertEquals([ok.status, ok.body.data.status], [200, "queued"]);
        const alert = await c.call("POST", "/v1/functions/alerts", {
          ...VALID,
          name: "mail",
          channel: "email",
          destination: "ops@example.com",
        });
        assertEquals(alert.status, 201);
      },
    );
  } finally {
    await p.close();
  }
});
