import { assertEquals } from "../../tests/assert.ts";
import { bearerToken } from "./auth.ts";

Deno.test("bearerToken reads the scheme in any case, one or more spaces, and refuses anything else", () => {
  assertEquals(bearerToken("Bearer abc.def"), "abc.def");
  assertEquals(bearerToken("bearer abc"), "abc");
  assertEquals(bearerToken("BEARER   abc  "), "abc");
  assertEquals(bearerToken("Bearer\tabc"), "abc");
  assertEquals(bearerToken(undefined), undefined);
  assertEquals(bearerToken("Bearer"), undefined);
  assertEquals(bearerToken("Bearer "), undefined);
  assertEquals(bearerToken("Bearerabc"), undefined);
  assertEquals(bearerToken("Basic abc"), undefined);
  assertEquals(bearerToken("Bearer abc def"), undefined);
  assertEquals(bearerToken("Token abc"), undefined);
});
