import { Hono } from "hono";
import css from "swagger-ui-dist/swagger-ui.css" with { type: "text" };
import bundle from "swagger-ui-dist/swagger-ui-bundle.js" with { type: "text" };
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

/** The human docs page: Swagger UI served from the npm package, no CDN. */
export const docsRoutes = new Hono<AppEnv>()
  .get("/docs", (c) => c.html(PAGE))
  .get(
    "/docs/swagger-ui.css",
    (c) => c.body(css, 200, { "content-type": "text/css; charset=utf-8", "cache-control": CACHE }),
  )
  .get(
    "/docs/swagger-ui-bundle.js",
    (c) => c.body(bundle, 200, { "content-type": "text/javascript; charset=utf-8", "cache-control": CACHE }),
  )
  .get("/docs/init.js", (c) => c.body(INIT, 200, { "content-type": "text/javascript; charset=utf-8" }));
