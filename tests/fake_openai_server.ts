// Runs the fake OpenAI-compatible server in its own process (benchmarks): prints "listening <port>".
import { startFakeOpenAI } from "./fake_openai.ts";

const fake = startFakeOpenAI();
console.log(`listening ${new URL(fake.url).port}`);
Deno.addSignalListener("SIGTERM", async () => {
  await fake.close();
  Deno.exit(0);
});
