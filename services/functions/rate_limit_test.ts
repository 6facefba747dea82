import { AppError } from "../errors.ts";
import { assert, assertEquals } from "../../tests/assert.ts";
import { RateLimiter } from "./rate_limit.ts";

Deno.test("rate limiter: token bucket per key with Retry-After", () => {
  const limiter = new RateLimiter(3);
  const t0 = 1_000_000;
  for (let i = 0; i < 3; i++) limiter.take("a", t0);
  let refused: AppError | null = null;
  try {
    limiter.take("a", t0);
  } catch (err) {
    refused = err as AppError;
  }
  assert(refused instanceof AppError);
  assertEquals(refused.status, 429);
  assertEquals(refused.code, "rate_limit_exceeded");
  assertEquals(refused.type, "rate_limit");
  assertEquals(refused.headers["Retry-After"], "20"); // 3 per minute: one token every 20 s
  limiter.take("b", t0); // another client has its own bucket
  limiter.take("a", t0 + 20_000); // refilled
});
