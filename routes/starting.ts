import { errors } from "../lib/errors.ts";
import { failureResponse } from "./errors.ts";
import type { Handler } from "./mod.ts";

/**
 * The handler of a process whose platform is still opening (migrations, the first admin's password hash, the
 * databases of a first start): liveness answers at once, readiness answers 503 until the platform is open, and
 * every other request waits for it and is then served as usual. Once `opening` resolves, requests go straight
 * to its handler.
 */
export function whileOpening(opening: Promise<Handler>): Handler {
  let ready: Handler | null = null;
  opening.then((handler) => ready = handler, () => {});
  return (req, info) => {
    if (ready) return ready(req, info);
    const path = new URL(req.url).pathname;
    if (path === "/v1/health") {
      return Response.json({ data: { status: "ok" }, meta: null });
    }
    if (path === "/v1/ready") {
      const requestId = req.headers.get("x-request-id") ?? crypto.randomUUID();
      return failureResponse(errors.unavailable("The platform is starting"), requestId, path);
    }
    return opening.then((handler) => handler(req, info));
  };
}
