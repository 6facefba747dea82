import { assertEquals, assertMatch } from "../../tests/assert.ts";
import { parseClientMessage } from "./protocol.ts";

Deno.test("realtime client messages", async (t) => {
  await t.step("valid messages get their defaults", () => {
    const r = parseClientMessage(JSON.stringify({
      type: "subscribe",
      ref: 7,
      channel: "room:1",
      postgres_changes: [{ table: "items" }],
    }));
    assertEquals(r.ok && r.message, {
      type: "subscribe",
      ref: 7,
      channel: "room:1",
      postgres_changes: [{ event: "*", schema: "public", table: "items" }],
    });
    for (
      const m of [{ type: "ping" }, { type: "access_token", token: "t" }, {
        type: "unsubscribe",
        channel: "c",
      }]
    ) {
      assertEquals(parseClientMessage(JSON.stringify(m)).ok, true);
    }
  });

  const bad: [string, RegExp, (string | number)?][] = [
    ["nope", /not valid JSON/],
    ["null", /JSON object/],
    ['"str"', /JSON object/],
    ['{"type":"x","ref":"a"}', /Unknown message type "x"/, "a"],
    ['{"type":5}', /Unknown message type missing/],
    ['{"type":"subscribe","ref":3,"channel":""}', /channel/, 3],
    ['{"type":"subscribe","channel":"c","postgres_changes":[{"event":"TRUNCATE","table":"t"}]}', /event/],
    ['{"type":"broadcast","channel":"c"}', /event/],
    ['{"type":"presence_update","channel":"c","state":[1]}', /state/],
    ['{"type":"access_token","token":""}', /token/],
    ['{"type":"ping","__proto__":{"x":1}}', /Unrecognized key/],
  ];
  for (const [text, message, ref] of bad) {
    await t.step(`refuses ${text}`, () => {
      const r = parseClientMessage(text);
      assertEquals(r.ok, false);
      if (r.ok) return;
      assertEquals(r.error.code, "VALIDATION_ERROR");
      assertMatch(r.error.message, message);
      assertEquals(r.ref, ref);
    });
  }
});
