import { assertEquals } from "../../tests/assert.ts";
import { publicErrorText } from "./error_text.ts";

Deno.test("publicErrorText: no source, no platform paths, bounded", () => {
  const source = btoa('import x from "npm:left-pad"; export default () => new Response(x)');
  const raw =
    `Import "npm:left-pad" not a dependency\n    at data:application/typescript;base64,${source}:1:15\n` +
    "    at file:///work/main/runtime/worker.ts:146:9";
  assertEquals(
    publicErrorText(raw),
    'Import "npm:left-pad" not a dependency\n    at <function>:1:15\n    at <runtime>:146:9',
  );
  assertEquals(
    publicErrorText("Boom\n    at handler (blob:null/3dd1f7e2-83cb-4475-a7bb-d480a917f7a4:368:38)"),
    "Boom\n    at handler (<function>:368:38)",
  );
  assertEquals(publicErrorText("x".repeat(5000)).length, 2001);
});
