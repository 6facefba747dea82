import { assertEquals } from "../tests/assert.ts";
import { encodeBase64 } from "../lib/encoding.ts";
import type { InvokeResult } from "../services/functions/invoke.ts";
import type { AppError } from "../lib/errors.ts";
import { envelopeText, invokeBody, isInvoke } from "./invoke.ts";

const bytes = (s: string) => new TextEncoder().encode(s);
const result = (type: string | null, body: Uint8Array, extra: [string, string][] = []): InvokeResult => ({
  status: 200,
  headers: [...(type === null ? [] : [["content-type", type] as [string, string]]), ...extra],
  body,
  logs: ["a line"],
  duration_ms: 1.25,
});
const envelope = (r: InvokeResult) => JSON.parse(envelopeText(r));

Deno.test("invoke envelope: each kind of body, as valid JSON with the envelope's fields", () => {
  assertEquals(envelope(result("application/json", bytes('{"ok":true,"n":[1,2]}'))), {
    data: {
      status: 200,
      headers: { "content-type": "application/json" },
      body: { ok: true, n: [1, 2] },
      logs: ["a line"],
      duration_ms: 1.25,
    },
    meta: null,
  });
  // A JSON type with a body that is not JSON: the text, as a string.
  assertEquals(envelope(result("application/json", bytes('{"ok":'))).data.body, '{"ok":');
  // Text, and a body without a content type, stay text; quotes and control characters escaped.
  assertEquals(envelope(result("text/plain", bytes('say "hi"\n'))).data.body, 'say "hi"\n');
  assertEquals(envelope(result(null, bytes("plain"))).data.body, "plain");
  // Bytes, and text that is not UTF-8, travel as base64 with the flag.
  const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 255]);
  const binary = envelope(result("image/png", png)).data;
  assertEquals([binary.body, binary.body_encoding], [encodeBase64(png), "base64"]);
  const latin1 = envelope(result("text/plain", new Uint8Array([0x63, 0x61, 0x66, 0xe9]))).data;
  assertEquals(latin1.body_encoding, "base64");
  // No body: null, and no body_encoding.
  const empty = envelope(result("application/json", new Uint8Array(0))).data;
  assertEquals([empty.body, "body_encoding" in empty], [null, false]);
  // Repeated headers are joined as one, as fetch's Headers does.
  assertEquals(
    envelope(result("text/plain", bytes("x"), [["x-a", "1"], ["x-a", "2"]])).data.headers,
    { "content-type": "text/plain", "x-a": "1, 2" },
  );
});

Deno.test("invoke envelope: a JSON body keeps the function's exact text (numbers to the last digit)", () => {
  const text = envelopeText(result("application/json; charset=utf-8", bytes('{"id":12345678901234567890}')));
  assertEquals(text.includes('"body":{"id":12345678901234567890}'), true);
  // JSON with surrounding whitespace is still one value inside the envelope.
  assertEquals(envelope(result("application/vnd.api+json", bytes(' [1, "two"]\n'))).data.body, [1, "two"]);
});

Deno.test("invoke envelope: answers one after another each get their own headers and body", () => {
  const json = result("application/json", bytes('{"a":1}'), [["x-n", "1"]]);
  const same = result("application/json", bytes('{"a":1}'), [["x-n", "1"]]);
  const otherValue = result("application/json", bytes('{"a":'), [["x-n", "2"]]);
  const text = result("text/plain", bytes('{"a":1}'));
  const named = result("text/plain", bytes("x"), [["constructor", "c"], ["__proto__", "p"]]);
  for (let round = 0; round < 2; round++) {
    assertEquals(envelope(json).data.headers, { "content-type": "application/json", "x-n": "1" });
    assertEquals(envelope(same).data.body, { a: 1 });
    assertEquals(envelope(otherValue).data.headers, { "content-type": "application/json", "x-n": "2" });
    assertEquals(envelope(otherValue).data.body, '{"a":');
    // The same bytes under a text type are a string, even right after they were JSON.
    assertEquals(envelope(text).data.body, '{"a":1}');
    assertEquals(envelope(json).data.body, { a: 1 });
    const headers = envelope(named).data.headers;
    assertEquals([headers.constructor, headers.__proto__, headers["content-type"]], ["c", "p", "text/plain"]);
  }
  // A header list changed after its answer was rendered does not change what the next identical answer gets.
  const mutable = result("text/plain", bytes("x"), [["x-m", "1"]]);
  envelopeText(mutable);
  mutable.headers[1]![1] = "changed";
  assertEquals(envelope(result("text/plain", bytes("x"), [["x-m", "1"]])).data.headers["x-m"], "1");
});

Deno.test("invoke: the edge matches the route's own path, in short form and (for its body) long form", () => {
  const request = (path: string, method = "POST") => new Request(`http://localhost${path}`, { method });
  const short = "/v1/functions/hello/invoke";
  assertEquals(isInvoke(request(short), short), true);
  assertEquals(isInvoke(request(short, "GET"), short), false);
  for (
    const path of ["/v1/functions/hello", "/v1/functions/demo/hello/invoke", "/v1/functions/hello/invoke/x"]
  ) {
    assertEquals(isInvoke(request(path), path), false, path);
  }
  const own = invokeBody(16);
  assertEquals(own.maxBytes, 16);
  assertEquals(own.accepts(request(short)), true);
  assertEquals(own.accepts(request("/v1/functions/demo/hello/invoke?x=1")), true);
  assertEquals(own.accepts(request("/v1/functions/demo/hello/invoke", "PUT")), false);
  assertEquals(own.accepts(request("/v1/functions/a/b/c/invoke")), false);
  assertEquals((own.tooLarge() as AppError).status, 503);
});
