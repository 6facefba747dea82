import { assertEquals, assertMatch } from "../../tests/assert.ts";
import { loadConfig } from "../config.ts";
import type { AppError } from "../../lib/errors.ts";
import { providerConfigs, Providers } from "./providers.ts";

const limits = { timeoutMs: 1000, maxRetries: 0 };

Deno.test("providerConfigs: AI_BASE_URL is `default`, AI_PROVIDERS follow; the first is the default", () => {
  const config = loadConfig({
    AI_BASE_URL: "http://127.0.0.1:1/v1",
    AI_CHAT_MODEL: "m1",
    AI_EMBEDDING_MODEL: "e1",
    AI_PROVIDERS: JSON.stringify({ ollama: { base_url: "http://127.0.0.1:2/v1", embedding_model: "nomic" } }),
  });
  const configs = providerConfigs(config);
  assertEquals(configs.map((c) => [c.name, c.chatModel, c.embeddingModel]), [
    ["default", "m1", "e1"],
    ["ollama", "m1", "nomic"],
  ]);
  const providers = new Providers(configs, limits);
  assertEquals(providers.get().name, "default");
  assertEquals(providers.get("ollama").name, "ollama");
  assertEquals(providers.forEmbeddingModel("nomic")?.name, "ollama");
  assertEquals(providers.embeddingDefault()?.name, "default");
});

Deno.test("providerConfigs: a bad AI_PROVIDERS stops the start with a readable error", () => {
  for (
    const bad of ["{not json", JSON.stringify({ Bad: { base_url: "http://x" } }), JSON.stringify({ a: {} })]
  ) {
    let message = "";
    try {
      providerConfigs(loadConfig({ AI_PROVIDERS: bad }));
    } catch (err) {
      message = (err as Error).message;
    }
    assertMatch(message, /AI_PROVIDERS must be a JSON object/);
  }
});

Deno.test("Providers: none configured is 503 saying how; an unknown name is 400", () => {
  const none = new Providers([], limits);
  let err: AppError | undefined;
  try {
    none.get();
  } catch (e) {
    err = e as AppError;
  }
  assertEquals([err?.status, err?.code], [503, "SERVICE_UNAVAILABLE"]);
  assertMatch(err!.message, /set AI_BASE_URL/);
  const one = new Providers([{ name: "default", baseUrl: "http://127.0.0.1:1/v1", chatModel: "m" }], limits);
  try {
    one.get("other");
  } catch (e) {
    err = e as AppError;
  }
  assertEquals([err?.status, err?.message], [
    400,
    'Unknown AI provider "other": configured providers are "default"',
  ]);
});
