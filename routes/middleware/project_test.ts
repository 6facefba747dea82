import { assertEquals } from "../../tests/assert.ts";
import { projectFromHost } from "./project.ts";

Deno.test("projectFromHost: subdomain, bare domain, IP addresses and strangers", () => {
  const cases: [string, string | null][] = [
    ["demo.localhost:8000", "demo"],
    ["Demo.LocalHost", "demo"],
    ["demo.localhost.", "demo"],
    ["localhost:8000", "default"],
    ["127.0.0.1:8000", "default"],
    ["10.0.0.5", "default"],
    ["[::1]:8000", "default"],
    ["a.b.localhost", null],
    ["under_score.localhost", null],
    ["example.com", null],
    ["localhost.evil.com", null],
  ];
  for (const [host, ref] of cases) assertEquals(projectFromHost(host, "localhost", "default"), ref, host);
});

Deno.test("projectFromHost: a custom base domain", () => {
  assertEquals(projectFromHost("shop.api.example.com", "api.example.com", "main"), "shop");
  assertEquals(projectFromHost("api.example.com", "api.example.com", "main"), "main");
  assertEquals(projectFromHost("shop.localhost", "api.example.com", "main"), null);
});
