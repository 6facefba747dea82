import { encodeBase64 } from "../lib/encoding.ts";
import { assertEquals } from "./assert.ts";
import { type Json, json, type TestPlatform } from "./harness.ts";
import { deploy } from "./jobs_fixtures.ts";

/** A fresh Standard Webhooks secret. */
export const newSecret = (): string => `whsec_${encodeBase64(crypto.getRandomValues(new Uint8Array(24)))}`;

/**
 * A function whose calls fail (throw) with `?fail=1`, answer `?status=<code>` and answer after `?sleep=<ms>`:
 * each test decides its error rate and its durations call by call.
 */
export const SWITCH_FN = `export default { async fetch(req) {
  const q = new URL(req.url).searchParams;
  const sleep = Number(q.get("sleep") ?? 0);
  if (sleep > 0) await new Promise((r) => setTimeout(r, sleep));
  if (q.get("fail")) throw new Error("failing on purpose");
  return new Response("ok", { status: Number(q.get("status") ?? 200) });
} };`;

/** Calls of one test platform as service_role. */
export function alertClient(p: TestPlatform, ref = "default") {
  const svc = { apikey: p.secretKey };
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = svc) =>
    await json(await p.fetch(path, { method, headers, json: body }));
  return {
    call,
    /** Deploys the switchable function under `name`. */
    deploy: (name: string) => deploy(p, p.secretKey, name, SWITCH_FN),
    /** Calls `name` `times` times with the query `query` (fail=1, sleep=300). */
    async invoke(name: string, times: number, query = ""): Promise<void> {
      for (let i = 0; i < times; i++) {
        const res = await p.fetch(`/v1/functions/${name}/invoke`, {
          method: "POST",
          headers: { apikey: p.publicKey },
          json: { path: `/?${query}` },
        });
        await res.body?.cancel();
      }
    },
    /** Creates (or updates) an alert and returns it; throws unless it was accepted. */
    async alert(body: Record<string, unknown>): Promise<Json> {
      const res = await call("POST", "/v1/functions/alerts", body);
      if (res.status !== 201 && res.status !== 200) throw new Error(`alert: ${JSON.stringify(res.body)}`);
      return res.body.data;
    },
    /** Creates a webhook alert to `destination` from a rule such as "error_rate gt 0.5". */
    async watch(destination: string, name: string, rule: string, extra: Record<string, unknown> = {}) {
      const [metric, condition, threshold] = rule.split(" ");
      return await this.alert({
        name,
        metric,
        condition,
        threshold: Number(threshold),
        channel: "webhook",
        destination,
        ...extra,
      });
    },
    /** The events of one alert, newest first. */
    async events(id: string): Promise<Json[]> {
      const res = await call("GET", `/v1/functions/alerts/${id}/events?limit=500`);
      assertEquals(res.status, 200);
      return res.body.data;
    },
    /** One alert as listed. */
    async get(id: string): Promise<Json> {
      return (await call("GET", "/v1/functions/alerts")).body.data.find((a: Json) => a.id === id);
    },
    /** Sets the webhook secret and lets the platform reach local receivers. */
    async webhookSettings(secret: string): Promise<void> {
      const res = await call("PATCH", "/v1/notifications/settings", { webhook: { secret } });
      assertEquals(res.status, 200);
    },
    ref,
  };
}

/** A tick counter: each call of `next()` is a later tick than any before it. */
export function ticks(start = 1) {
  let n = start;
  return { next: () => n++ };
}
