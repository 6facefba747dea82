// The client's types are the server's: client/api_types.ts is generated from the OpenAPI document the platform
// serves, and every route the client calls is named by its key there. This test fails when a route or a field
// changes on the server without the client following.
import { CLIENT_TYPES_PATH, generateClientTypes, type OpenApiDocument } from "../cli/client_types.ts";
import { assertEquals } from "./assert.ts";
import { startPlatform } from "./harness.ts";

/** Operations of the API the client leaves out on purpose, and why. */
const NOT_IN_CLIENT: Record<string, string> = {
  "GET /v1/health": "a probe for load balancers",
  "GET /v1/ready": "a probe for load balancers",
  "POST /v1/admin/login": "the admin console's own session",
  "POST /v1/admin/logout": "the admin console's own session",
  "GET /v1/admin/projects": "the admin console",
  "POST /v1/admin/projects": "the admin console",
  "GET /v1/admin/projects/{ref}": "the admin console",
  "DELETE /v1/admin/projects/{ref}": "the admin console",
  "POST /v1/admin/projects/{ref}/keys/rotate": "the admin console",
  "GET /v1/auth/.well-known/jwks.json": "for servers that verify tokens themselves",
  "GET /v1/project/data-settings":
    "the data API's settings, changed by the project owner with the secret key (curl)",
  "PATCH /v1/project/data-settings":
    "the data API's settings, changed by the project owner with the secret key (curl)",
  "GET /v1/project/auth-settings":
    "where recovery links land, set by the project owner with the secret key (curl)",
  "PATCH /v1/project/auth-settings":
    "where recovery links land, set by the project owner with the secret key (curl)",
  "GET /v1/db/{table}": "db is postgrest-js on /rest/v1",
  "POST /v1/db/{table}": "db is postgrest-js on /rest/v1",
  "PUT /v1/db/{table}": "db is postgrest-js on /rest/v1",
  "PATCH /v1/db/{table}": "db is postgrest-js on /rest/v1",
  "DELETE /v1/db/{table}": "db is postgrest-js on /rest/v1",
  "POST /v1/db/rpc/{fn}": "db is postgrest-js on /rest/v1 (db.rpc)",
  "GET /v1/db/rpc/{fn}": "db is postgrest-js on /rest/v1 (db.rpc)",
  "POST /v1/notifications/providers/sms/status": "Twilio's delivery callback, signed by Twilio",
  "POST /v1/notifications/events": "not an operation of the notifications client (the rules engine's input)",
  "GET /v1/ai/usage": "not an operation of the AI client",
  "GET /realtime/v1/websocket":
    "supabase-js's realtime (Phoenix protocol); the client speaks /v1/realtime/ws",
};

/** The route keys (`"METHOD /path"`) the client's source names. */
async function clientRoutes(): Promise<Set<string>> {
  const routes = new Set<string>();
  for await (
    const entry of Deno.readDir(new URL("../client/", import.meta.url))
  ) {
    if (!entry.name.endsWith(".ts") || entry.name === "api_types.ts") continue;
    const text = await Deno.readTextFile(
      new URL(`../client/${entry.name}`, import.meta.url),
    );
    for (
      const m of text.matchAll(/"((?:GET|POST|PUT|PATCH|DELETE) \/v1\/[^"]*)"/g)
    ) routes.add(m[1]!);
  }
  return routes;
}

Deno.test("client types: generated from the server's OpenAPI document, every route covered", async (t) => {
  const p = await startPlatform();
  try {
    const doc: OpenApiDocument = await (await p.fetch("/v1/openapi.json"))
      .json();
    const operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).filter((m) => ["get", "post", "put", "patch", "delete"].includes(m)).map((m) =>
        `${m.toUpperCase()} ${path}`
      )
    );

    await t.step(
      "client/api_types.ts is what the running server's document generates",
      async () => {
        const committed = await Deno.readTextFile(CLIENT_TYPES_PATH);
        if (committed !== generateClientTypes(doc)) {
          throw new Error(
            "client/api_types.ts differs from the server's OpenAPI document: run the platform, then " +
              "`deno task client:types`, and update the client where `deno check` then fails",
          );
        }
      },
    );

    await t.step(
      "every operation has a client method or a reason not to",
      async () => {
        const used = await clientRoutes();
        const uncovered = operations.filter((op) => !used.has(op) && !NOT_IN_CLIENT[op]);
        assertEquals(uncovered, []);
        const unknown = [...used, ...Object.keys(NOT_IN_CLIENT)].filter((op) => !operations.includes(op));
        assertEquals(unknown, []);
      },
    );
    await t.step(
      "the npm package depends on postgrest-js alone, at the version deno.json pins",
      async () => {
        const pkg = JSON.parse(
          await Deno.readTextFile(
            new URL("../client/package.json", import.meta.url),
          ),
        );
        const config = JSON.parse(
          await Deno.readTextFile(new URL("../deno.json", import.meta.url)),
        );
        const pinned = String(config.imports["@supabase/postgrest-js"]).split(
          "@",
        ).pop();
        assertEquals(pkg.dependencies, { "@supabase/postgrest-js": pinned });
        assertEquals(config.exports["./client"], "./client/mod.ts");
      },
    );
  } finally {
    await p.close();
  }
});
