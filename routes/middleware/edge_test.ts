import { assertEquals } from "../../tests/assert.ts";
import { errors } from "../../lib/errors.ts";
import type { Platform } from "../../services/platform.ts";
import type { EdgeEnv } from "../env.ts";
import { edge, type EdgeNext } from "./edge.ts";

const options = (ownPath: string) => ({
  platform: {} as Platform,
  origins: "*" as const,
  allowHeaders: [],
  exposeHeaders: [],
  maxBodyBytes: 8,
  bodyTimeoutMs: 1_000,
  ownBody: {
    accepts: (req: Request) => new URL(req.url).pathname === ownPath,
    maxBytes: 4,
    tooLarge: () => errors.unavailable("too large for this route"),
  },
});

const post = (path: string, body: string) =>
  new Request(`http://localhost${path}`, { method: "POST", body, headers: { "x-request-id": "r1" } });

Deno.test("edge: a failure thrown or rejected by the handler is rendered in the envelope, with its id", async () => {
  const thrown: EdgeNext = () => {
    throw errors.notFound("no such thing");
  };
  const rejected: EdgeNext = () => Promise.reject(errors.unauthorized("who are you"));
  for (const [next, status, code] of [[thrown, 404, "NOT_FOUND"], [rejected, 401, "UNAUTHORIZED"]] as const) {
    const res = await edge(options("/own"), next)(post("/x", ""));
    assertEquals(res.status, status);
    assertEquals(res.headers.get("x-request-id"), "r1");
    assertEquals(res.headers.get("access-control-allow-origin"), null);
    const body = await res.json();
    assertEquals([body.error.code, body.error.request_id], [code, "r1"]);
  }
});

Deno.test("edge: a route that reads its own body gets it unread, with its own limits in the env", async () => {
  let seen: { env: EdgeEnv; used: boolean } | undefined;
  const next: EdgeNext = (req, env) => {
    seen = { env, used: req.bodyUsed };
    return new Response("ok");
  };
  const handler = edge(options("/own"), next);
  assertEquals((await handler(post("/own", "123456789"))).status, 200); // above the edge's 8 bytes
  assertEquals([seen?.used, seen?.env.body.maxBytes, seen?.env.project], [false, 4, undefined]);
  assertEquals((await handler(post("/other", "123456789"))).status, 413);
  assertEquals((await handler(post("/other", "1234"))).status, 200);
  assertEquals(seen?.env.body.maxBytes, 8);
});

Deno.test("edge: PostgREST's CORS on /rest/v1; an origin an allow-list refuses gets no allowance", async () => {
  const allowList = { ...options("/own"), origins: ["http://app.example"] };
  // The route answers OPTIONS as PostgREST does, with `*`: the edge keeps it only for an allowed origin.
  const next: EdgeNext = () => new Response(null, { headers: { "access-control-allow-origin": "*" } });
  const handler = edge(allowList, next);
  const options_ = (origin: string) =>
    handler(new Request("http://localhost/rest/v1/items", { method: "OPTIONS", headers: { origin } }));
  assertEquals(
    (await options_("http://app.example")).headers.get("access-control-allow-origin"),
    "http://app.example",
  );
  assertEquals((await options_("http://evil.example")).headers.get("access-control-allow-origin"), null);
  const plain = await handler(new Request("http://localhost/rest/v1/items", { method: "OPTIONS" }));
  assertEquals(plain.headers.get("access-control-allow-origin"), "*"); // no Origin: no CORS request, as PostgREST

  // A preflight to the mount's root, with or without its slash, answers as PostgREST; the names asked are
  // capped at 100 (a repeated one kept, as wai-cors keeps it).
  const asked = ["authorization", "x-a", "x-a", ...Array.from({ length: 200 }, (_, i) => `x-${i}`)].join(",");
  for (const path of ["/rest/v1", "/rest/v1/", "/rest/v1?x=1"]) {
    const res = await handler(
      new Request(`http://localhost${path}`, {
        method: "OPTIONS",
        headers: {
          origin: "http://app.example",
          "access-control-request-method": "GET",
          "access-control-request-headers": asked,
        },
      }),
    );
    assertEquals(res.status, 200, path);
    const names = res.headers.get("access-control-allow-headers")!.split(", ");
    assertEquals(names.slice(0, 4), ["Authorization", "authorization", "x-a", "x-a"], path);
    assertEquals(names.length, 1 + 100 + 3, path); // Authorization, 100 asked, the 3 simple headers
  }
});
