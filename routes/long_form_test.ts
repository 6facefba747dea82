import { assertEquals } from "../tests/assert.ts";
import { splitLongForm } from "./long_form.ts";

const projects = new Set(["default", "demo", "hello"]);
const isProject = (ref: string) => Promise.resolve(projects.has(ref));

Deno.test("splitLongForm: long-form paths name their project", async () => {
  const cases: [string, { ref: string; path: string } | null][] = [
    ["/v1/functions/demo/hello/invoke", { ref: "demo", path: "/v1/functions/hello/invoke" }],
    ["/v1/functions/demo/hello", { ref: "demo", path: "/v1/functions/hello" }],
    ["/v1/functions/demo/jobs", { ref: "demo", path: "/v1/functions/jobs" }],
    ["/v1/functions/demo/jobs/dlq/requeue", { ref: "demo", path: "/v1/functions/jobs/dlq/requeue" }],
    ["/v1/functions/demo/cron/nightly", { ref: "demo", path: "/v1/functions/cron/nightly" }],
    ["/v1/functions/demo/hello/env", { ref: "demo", path: "/v1/functions/hello/env" }],
  ];
  for (const [path, want] of cases) assertEquals(await splitLongForm(path, isProject), want, path);
});

Deno.test("splitLongForm: short-form paths stay as they are", async () => {
  for (
    const path of [
      "/v1/functions",
      "/v1/functions/hello", // the function "hello", even though a project "hello" exists
      "/v1/functions/hello/invoke",
      "/v1/functions/demo/code", // the code of the function "demo"
      "/v1/functions/unknown/hello/invoke", // "unknown" is no project
      "/v1/functions/jobs/123/retry",
      "/v1/functions/cron/nightly",
      "/v1/db/demo/x",
    ]
  ) {
    assertEquals(await splitLongForm(path, isProject), null, path);
  }
});
