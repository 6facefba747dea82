import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { errors } from "../lib/errors.ts";
import { upgradeWebSocket } from "../lib/serve.ts";
import { CHANNEL_NAME } from "../services/realtime/protocol.ts";
import { PhoenixProtocol } from "../services/realtime/phoenix.ts";
import { serveSse, serveWebSocket } from "../services/realtime/transports.ts";
import type { AppEnv } from "./env.ts";
import { projectOf } from "./middleware/project.ts";
import { failures } from "./schemas.ts";

const Credentials = {
  apikey: z.string().max(200).optional().openapi({ description: "The project key (or the apikey header)" }),
  access_token: z.string().max(8192).optional().openapi({ description: "A user access token (JWT)" }),
  project_id: z.string().max(40).optional().openapi({ description: "The project; default: from the host" }),
};

const WsQuery = z.object(Credentials);

const PhoenixQuery = z.object({
  apikey: Credentials.apikey,
  vsn: z.enum(["1.0.0", "2.0.0"]).default("1.0.0").openapi({
    description: "Phoenix serializer: 1.0.0 JSON objects, 2.0.0 JSON arrays and binary broadcasts",
  }),
  log_level: z.string().max(20).optional().openapi({ description: "Accepted and ignored" }),
});

const SseQuery = z.object({
  ...Credentials,
  channel: z.string().regex(CHANNEL_NAME, "must be 1-255 letters, digits or _-:.@/").openapi({
    description: "`<project_id>:<table or topic>`; the prefix may be left out when project_id is given",
    example: "default:messages",
  }),
  event: z.enum(["INSERT", "UPDATE", "DELETE", "*"]).optional().openapi({
    description: "Change kind of a table",
  }),
  filter: z.string().max(1024).optional().openapi({
    description: "`column=op.value` (eq, neq, lt, lte, gt, gte, in)",
  }),
});

/** Realtime over WebSocket and SSE (docs/realtime.md). */
export const realtimeRoutes = new OpenAPIHono<AppEnv>();

realtimeRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/realtime/ws",
    tags: ["Realtime"],
    summary: "WebSocket of realtime: JSON messages subscribe, broadcast, presence_update, ping, access_token",
    description:
      "Credentials at connect: `apikey` (and optionally `access_token`) as query parameters, since " +
      "browsers cannot set headers on a WebSocket. Protocol v1.0, see docs/realtime.md.",
    request: { query: WsQuery },
    responses: { 101: { description: "Switching to the WebSocket protocol" }, ...failures(400, 401, 404) },
  }),
  async (c) => {
    const query = c.req.valid("query");
    const { platform } = c.env;
    const project = query.project_id ? await platform.projects.get(query.project_id) : await projectOf(c);
    const credentials = await platform.realtime.authenticate(
      project,
      query.apikey ?? c.req.header("apikey"),
      query.access_token,
    );
    if (c.req.header("upgrade")?.toLowerCase() !== "websocket") {
      throw errors.validation('Expected a WebSocket upgrade request ("Upgrade: websocket")');
    }
    const { socket, response } = upgradeWebSocket(c.req.raw, { idleTimeout: 60 });
    serveWebSocket(platform.realtime, socket, project, credentials);
    return response;
  },
);

realtimeRoutes.openapi(
  createRoute({
    method: "get",
    path: "/v1/realtime/sse",
    tags: ["Realtime"],
    summary: "One-way realtime stream (Server-Sent Events) of one channel",
    description:
      "Frames `event: <postgres_changes|broadcast|presence_state|error>`, `id: <n>`, `data: <json>`; " +
      "a `: heartbeat` comment every 15 s.",
    request: { query: SseQuery },
    responses: {
      200: { content: { "text/event-stream": { schema: z.string() } }, description: "The event stream" },
      ...failures(400, 401, 403, 404),
    },
  }),
  async (c) => {
    const query = c.req.valid("query");
    const { platform } = c.env;
    const colon = query.channel.indexOf(":");
    const prefix = colon > 0 ? query.channel.slice(0, colon) : undefined;
    let ref = query.project_id ?? prefix;
    let name = query.channel;
    if (prefix !== undefined && (query.project_id === undefined || prefix === query.project_id)) {
      name = query.channel.slice(colon + 1);
      ref = prefix;
    }
    if (!name) throw errors.validation('Invalid query: channel must be "<project_id>:<table or topic>"');
    const project = ref ? await platform.projects.get(ref) : await projectOf(c);
    const credentials = await platform.realtime.authenticate(
      project,
      query.apikey ?? c.req.header("apikey"),
      query.access_token,
    );
    const subscription = await platform.realtime.streamSubscription(project, credentials, {
      name,
      event: query.event,
      filter: query.filter,
    });
    const stream = await serveSse(platform.realtime, { project, credentials, subscription });
    return c.body(stream, 200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      "x-accel-buffering": "no",
    });
  },
);

realtimeRoutes.openapi(
  createRoute({
    method: "get",
    path: "/realtime/v1/websocket",
    tags: ["Realtime"],
    summary: "Realtime in the Phoenix channel protocol of supabase-js (realtime-js), on the same hub",
    description:
      "`apikey` (or the header) and `vsn` in the query, as realtime-js sends them; the user token comes in " +
      '`phx_join` and `access_token` messages. See docs/realtime.md, "Realtime from supabase-js".',
    request: { query: PhoenixQuery },
    responses: { 101: { description: "Switching to the WebSocket protocol" }, ...failures(400, 401, 404) },
  }),
  async (c) => {
    const query = c.req.valid("query");
    const { platform } = c.env;
    const project = await projectOf(c);
    const credentials = await platform.realtime.authenticate(project, query.apikey ?? c.req.header("apikey"));
    if (c.req.header("upgrade")?.toLowerCase() !== "websocket") {
      throw errors.validation('Expected a WebSocket upgrade request ("Upgrade: websocket")');
    }
    const { socket, response } = upgradeWebSocket(c.req.raw, { idleTimeout: 60 });
    serveWebSocket(
      platform.realtime,
      socket,
      project,
      credentials,
      () => new PhoenixProtocol(platform.realtime, query.vsn),
    );
    return response;
  },
);
