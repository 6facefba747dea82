import { type Json, json, type TestPlatform } from "./harness.ts";

/** The statuses a notification stays in until someone retries it. */
const FINAL = ["sent", "delivered", "dead_lettered", "suppressed"];

/** Polls a notification until its status is one of `statuses` (final by default), for up to 30 s. */
export async function settle(p: TestPlatform, id: string, statuses = FINAL): Promise<Json> {
  const deadline = Date.now() + 30_000;
  while (true) {
    const { body } = await json(
      await p.fetch(`/v1/notifications/${id}`, { headers: { apikey: p.secretKey } }),
    );
    if (statuses.includes(body.data?.status)) return body.data;
    if (Date.now() > deadline) throw new Error(`Notification ${id} stuck in ${body.data?.status}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
