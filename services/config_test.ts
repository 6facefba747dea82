import { assertEquals, assertMatch } from "../tests/assert.ts";
import { Env, loadConfig } from "./config.ts";

Deno.test("loadConfig: defaults with an empty environment", () => {
  const c = loadConfig({});
  assertEquals([c.PORT, c.DATA_DIR, c.BASE_DOMAIN, c.DEFAULT_PROJECT_REF, c.LOG_LEVEL], [
    8000,
    `${Deno.cwd()}/data`,
    "localhost",
    "default",
    "info",
  ]);
  assertEquals(c.DATABASE_URL, undefined);
});

Deno.test("loadConfig: values are parsed and empty strings count as unset", () => {
  const c = loadConfig({ PORT: "9001", DATABASE_URL: "", QUIET: "1", MAX_BODY_BYTES: "2048" });
  assertEquals([c.PORT, c.DATABASE_URL, c.QUIET, c.MAX_BODY_BYTES], [9001, undefined, true, 2048]);
});

Deno.test("loadConfig: every bad variable is named in one error", () => {
  let message = "";
  try {
    loadConfig({
      PORT: "http",
      PLATFORM_SECRET: "short",
      DEFAULT_PUBLIC_KEY: "sk_wrongkind_0123456789abcdef",
    });
  } catch (err) {
    message = (err as Error).message;
  }
  assertMatch(message, /PORT/);
  assertMatch(message, /PLATFORM_SECRET: must be at least 32 bytes/);
  assertMatch(message, /DEFAULT_PUBLIC_KEY/);
});

Deno.test("every configuration variable is documented in the README's table", async () => {
  const readme = await Deno.readTextFile(new URL("../README.md", import.meta.url));
  const missing = Object.keys(Env.shape).filter((name) =>
    !new RegExp(`^\\| [^|]*\`${name}\``, "m").test(readme)
  );
  assertEquals(missing, []);
});
