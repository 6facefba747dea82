import { Hono } from "hono";
import type { AppEnv } from "./env.ts";

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Platform API</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="docs"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>`;

const INIT = `window.ui = SwaggerUIBundle({ url: "/v1/openapi.json", dom_id: "#docs", deepLinking: true });`;

const CACHE = "public, max-age=86400";

// Swagger UI's files (3 MB) are read when the page is first opened, not kept in every process from its start.
const css = () => import("swagger-ui-dist/swagger-ui.css", { with: { type: "text" } });
const bundle = () => import("swagger-ui-dist/swagger-ui-bundle.js", { with: { type: "text" } });

/** The human docs page: Swagger UI served from the npm package, no CDN. */
export const docsRoutes = new Hono<AppEnv>()
  .get("/docs", (c) => c.html(PAGE))
  .get(
    "/docs/swagger-ui.css",
    async (c) =>
      c.body((await css()).default, 200, {
        "content-type": "text/css; charset=utf-8",
        "cache-control": CACHE,
      }),
  )
  .get(
    "/docs/swagger-ui-bundle.js",
    async (c) =>
      c.body((await bundle()).default, 200, {
        "content-type": "text/javascript; charset=utf-8",
        "cache-control": CACHE,
      }),
  )
  .get("/docs/init.js", (c) => c.body(INIT, 200, { "content-type": "text/javascript; charset=utf-8" }));
