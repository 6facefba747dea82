import { TrieRouter } from "hono/router/trie-router";
import { assertEquals } from "../tests/assert.ts";
import { CachedRouter } from "./router.ts";

Deno.test("CachedRouter answers exactly as the trie, from memory the second time, and sees later routes", () => {
  const cached = new CachedRouter<string>();
  const trie = new TrieRouter<string>();
  const add = (method: string, path: string, name: string) => {
    cached.add(method, path, name);
    trie.add(method, path, name);
  };
  add("ALL", "*", "edge");
  add("GET", "/v1/notifications/stats", "stats");
  add("GET", "/v1/notifications/:id", "one");
  for (const path of ["/v1/notifications/stats", "/v1/notifications/abc", "/v1/notifications/abc", "/nope"]) {
    assertEquals(cached.match("GET", path), trie.match("GET", path));
    assertEquals(cached.match("POST", path), trie.match("POST", path));
  }
  const [[, params]] = cached.match("GET", "/v1/notifications/xyz")[0].filter(([h]) => h === "one") as [
    [string, Record<string, string>],
  ];
  assertEquals({ ...params }, { id: "xyz" });
  add("GET", "/v1/notifications/queue", "queue");
  assertEquals(cached.match("GET", "/v1/notifications/queue"), trie.match("GET", "/v1/notifications/queue"));
  assertEquals(cached.match("GET", "/v1/notifications/queue")[0].some(([h]) => h === "queue"), true);
});
