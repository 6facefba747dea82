// PostgREST's negotiateContent with media type handlers, row by row: Accept, the handlers, what answers.
import { assertEquals } from "../../tests/assert.ts";
import type { MediaHandler } from "../../db/rest/schema.ts";
import { handlerLookup, handlerMedia, handlerMediaType, negotiate } from "./media.ts";

const h = (mediaType: string, kind: MediaHandler["kind"], target: string | number | null): MediaHandler => ({
  mediaType,
  resolved: mediaType === "*/*" ? "application/octet-stream" : mediaType,
  kind,
  // A cast handler is named by its domain's oid: the calls of the overloads returning that domain.
  ...(typeof target === "number" ? { target: null, domain: target } : { target }),
  sql: `"public"."${mediaType}:${target}"`,
  binary: false,
});

const HANDLERS = [
  h("text/csv", "aggregate", "lines"),
  h("application/vnd.geo+json", "aggregate", "lines"),
  h("*/*", "aggregate", "xml_view"),
  h("text/plain", "aggregate", null),
  h("text/plain", "cast", 101),
  h("application/vnd.twkb", "cast", 102),
];

/** [Accept, resource, default select, what answers: a handler's sql, a built-in kind, or a 406]. */
const CASES: [string | null, { relation: string } | { returns: number | undefined }, boolean, string][] = [
  ["text/csv", { relation: "lines" }, true, '"public"."text/csv:lines"'],
  ["text/csv", { relation: "lines" }, false, "csv"],
  ["text/csv", { relation: "other" }, true, "csv"],
  [null, { relation: "lines" }, true, "json"],
  ["application/vnd.twkb", { relation: "lines" }, true, "406"],
  ["application/vnd.twkb, text/csv", { relation: "lines" }, true, '"public"."text/csv:lines"'],
  [
    "text/csv;q=0.5, application/vnd.geo+json",
    { relation: "lines" },
    true,
    '"public"."application/vnd.geo+json:lines"',
  ],
  ["Application/Vnd.Geo+Json", { relation: "lines" }, true, "406"],
  ["TEXT/CSV", { relation: "lines" }, true, '"public"."text/csv:lines"'],
  [null, { relation: "xml_view" }, true, '"public"."*/*:xml_view"'],
  ["application/json", { relation: "xml_view" }, true, '"public"."*/*:xml_view"'],
  ["application/vnd.pgrst.object+json", { relation: "xml_view" }, true, "object"],
  ["application/json", { relation: "xml_view" }, false, "json"],
  ["text/plain", { relation: "lines" }, true, '"public"."text/plain:null"'],
  ["text/plain", { relation: "lines" }, false, '"public"."text/plain:null"'],
  ["text/plain", { returns: 101 }, true, '"public"."text/plain:101"'],
  ["text/plain", { returns: 101 }, false, '"public"."text/plain:null"'],
  ["text/xml", { returns: 101 }, true, "406"],
  // Another overload of the same name returns int4 (oid 23): only the anyelement aggregate answers it.
  ["text/plain", { returns: 23 }, true, '"public"."text/plain:null"'],
  ["application/vnd.twkb", { returns: 23 }, true, "406"],
  ["application/vnd.twkb", { returns: 102 }, true, '"public"."application/vnd.twkb:102"'],
  ["application/vnd.twkb", { returns: undefined }, true, "406"],
];

Deno.test("negotiate with media type handlers: PostgREST's precedence", () => {
  for (const [accept, resource, defaultSelect, expected] of CASES) {
    const label = `${accept} ${JSON.stringify(resource)} ${defaultSelect}`;
    const handlers = handlerLookup(HANDLERS, resource, defaultSelect);
    let answer: string;
    try {
      const media = negotiate(accept, { handlers });
      answer = media.handler?.sql ?? media.kind;
    } catch (err) {
      answer = (err as { code?: string }).code === "PGRST107" ? "406" : String(err);
    }
    assertEquals(answer, expected, label);
  }
});

Deno.test("a plan for a handler's media type: answered when plans are on and a handler answers it", () => {
  const handlers = handlerLookup(HANDLERS, { relation: "lines" }, true);
  const geo = 'application/vnd.pgrst.plan+json; for="application/vnd.geo+json"';
  const media = negotiate(geo, { plan: true, handlers });
  assertEquals([media.kind, media.handler?.sql], ["plan", '"public"."application/vnd.geo+json:lines"']);
  for (
    const [accept, plan] of [[geo, false], ['application/vnd.pgrst.plan; for="application/vnd.twkb"', true]]
  ) {
    let code = "";
    try {
      negotiate(accept as string, { plan: plan as boolean, handlers });
    } catch (err) {
      code = (err as { code?: string }).code ?? "";
    }
    assertEquals(code, "PGRST107", String(accept));
  }
});

Deno.test("handler Content-Type: a known media type with charset, another as named, */* as octet-stream", () => {
  const typeOf = (resolved: string) => handlerMedia({ ...h("x/y", "cast", "f"), resolved }).contentType;
  assertEquals(typeOf("text/csv"), "text/csv; charset=utf-8");
  assertEquals(typeOf("text/plain"), "text/plain; charset=utf-8");
  assertEquals(typeOf("application/vnd.geo+json"), "application/vnd.geo+json");
  assertEquals(typeOf("application/octet-stream"), "application/octet-stream");
  assertEquals(handlerMediaType("application/vnd.pgrst.object+json"), null);
  assertEquals(handlerMediaType("text/csv"), "text/csv");
});
