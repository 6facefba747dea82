import { assertEquals } from "../../tests/assert.ts";
import { cgiEnv, parseCgi } from "./wagi.ts";

const text = (s: string) => new TextEncoder().encode(s);
const decode = (b: Uint8Array) => new TextDecoder().decode(b);

Deno.test("wagi: CGI output and environment", async (t) => {
  const cases: {
    name: string;
    out: string;
    status: number;
    type: string;
    body: string;
    extra?: [string, string];
  }[] = [
    {
      name: "no header block",
      out: "just text",
      status: 200,
      type: "text/plain; charset=utf-8",
      body: "just text",
    },
    {
      name: "status and type",
      out: "Status: 404 Not Found\nContent-Type: application/json\n\n{}",
      status: 404,
      type: "application/json",
      body: "{}",
    },
    {
      name: "CRLF block",
      out: "Content-Type: text/html\r\n\r\n<p>",
      status: 200,
      type: "text/html",
      body: "<p>",
    },
    {
      name: "location without status redirects",
      out: "Location: /there\n\n",
      status: 302,
      type: "text/plain; charset=utf-8",
      body: "",
      extra: ["location", "/there"],
    },
    {
      name: "a blank line in a body without headers",
      out: "line one\n\nline two",
      status: 200,
      type: "text/plain; charset=utf-8",
      body: "line one\n\nline two",
    },
    {
      name: "invalid status is a plain body",
      out: "Status: abc\n\nx",
      status: 200,
      type: "text/plain; charset=utf-8",
      body: "Status: abc\n\nx",
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const r = parseCgi(text(c.out));
      assertEquals(r.status, c.status);
      assertEquals(Object.fromEntries(r.headers)["content-type"], c.type);
      assertEquals(decode(r.body), c.body);
      if (c.extra) assertEquals(Object.fromEntries(r.headers)[c.extra[0]], c.extra[1]);
    });
  }
  await t.step("CGI variables (RFC 3875)", () => {
    const env = cgiEnv({
      method: "POST",
      url: "http://localhost/a%20b/c?x=1",
      headers: [["content-type", "text/plain"], ["x-trace-id", "t1"], ["content-length", "3"]],
      body: text("abc"),
      env: { REQUEST_METHOD: "forged", MINE: "1" },
      name: "fn",
    });
    assertEquals(env.REQUEST_METHOD, "POST");
    assertEquals(env.PATH_INFO, "/a b/c");
    assertEquals(env.QUERY_STRING, "x=1");
    assertEquals(env.CONTENT_TYPE, "text/plain");
    assertEquals(env.CONTENT_LENGTH, "3");
    assertEquals(env.HTTP_X_TRACE_ID, "t1");
    assertEquals(env.MINE, "1");
    assertEquals(env.HTTP_CONTENT_LENGTH, undefined);
  });
  await t.step("a path whose escapes are not UTF-8 is PATH_INFO as sent (not a function error)", () => {
    const env = cgiEnv({
      method: "GET",
      url: "http://localhost/%E0/x",
      headers: [],
      body: null,
      env: {},
      name: "fn",
    });
    assertEquals(env.PATH_INFO, "/%E0/x");
  });
});
