import { assertEquals } from "../../tests/assert.ts";
import { globToRegExp, isRedirectAllowed, redirectTarget } from "./redirects.ts";

const settings = {
  siteUrl: "https://app.example.com",
  redirectUrls: [
    "https://*.preview.example.com/**",
    "http://localhost:3000/*",
    "https://{a,b}.example.org/cb",
  ],
};

Deno.test("redirect globs: * stays within a label or segment, ** crosses them", () => {
  const re = globToRegExp("https://*.example.com/*");
  assertEquals(re.test("https://x.example.com/reset"), true);
  assertEquals(re.test("https://x.y.example.com/reset"), false);
  assertEquals(re.test("https://x.example.com/a/b"), false);
  assertEquals(globToRegExp("https://example.com/**").test("https://example.com/a/b?c=d"), true);
  assertEquals(globToRegExp("https://example.com/a?c").test("https://example.com/abc"), true);
  assertEquals(globToRegExp("https://example.com/a\\*").test("https://example.com/ab"), false);
});

Deno.test("redirects: the site, loopback IPs and allow-listed addresses; nothing else", () => {
  const allowed = [
    "https://app.example.com/reset",
    "https://pr-1.preview.example.com/reset/done",
    "http://localhost:3000/reset",
    "http://localhost:3000/reset#x",
    "https://b.example.org/cb",
    "http://127.0.0.1:5173/",
  ];
  for (const url of allowed) assertEquals(isRedirectAllowed(settings, url), true, url);
  const refused = [
    "",
    "https://evil.example.net/",
    "http://app.example.com/reset",
    "https://app.example.com:8443/",
    "http://localhost:3000/a/b",
    "http://10.0.0.1/",
    "https://c.example.org/cb",
    " https://app.example.com/",
    "javascript:alert(1)",
    "https://app.example.com.evil.net/",
  ];
  for (const url of refused) assertEquals(isRedirectAllowed(settings, url), false, url);
  assertEquals(redirectTarget(settings, "https://evil.example.net/"), "https://app.example.com");
  assertEquals(redirectTarget(settings, undefined), "https://app.example.com");
  assertEquals(redirectTarget({ siteUrl: null, redirectUrls: [] }, "https://evil.example.net/"), null);
});
