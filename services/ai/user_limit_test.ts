import { assertEquals } from "../../tests/assert.ts";
import type { AppError } from "../../lib/errors.ts";
import { UserLimit } from "./user_limit.ts";

Deno.test("UserLimit: a fixed window per project and user, with Retry-After", () => {
  const limit = new UserLimit(2);
  const t0 = 1_000_000;
  limit.take("p", "u1", t0);
  limit.take("p", "u1", t0 + 1);
  limit.take("p", "u2", t0 + 2); // another user
  limit.take("q", "u1", t0 + 3); // another project
  let refused: AppError | undefined;
  try {
    limit.take("p", "u1", t0 + 30_000);
  } catch (err) {
    refused = err as AppError;
  }
  assertEquals([refused?.status, refused?.code, refused?.headers["retry-after"]], [
    429,
    "rate_limit_exceeded",
    "30",
  ]);
  limit.take("p", "u1", t0 + 60_000); // the next window
});
