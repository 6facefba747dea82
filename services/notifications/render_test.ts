import { assertEquals, assertRejects } from "../../tests/assert.ts";
import { renderTemplate } from "./render.ts";

Deno.test("templates render with limits", async (t) => {
  await t.step("variables present", async () => {
    assertEquals(
      await renderTemplate("body", "Hi {{ user.name | upcase }}", { user: { name: "ada" } }),
      "Hi ADA",
    );
  });
  await t.step("a missing variable is refused", async () => {
    await assertRejects(() => renderTemplate("body", "Hi {{ name }}", {}), /body cannot be rendered.*name/);
  });
  const hostile: [string, string][] = [
    ["a huge loop", "{% for i in (1..100000000) %}{{ i }}{% endfor %}"],
    ["nested loops", "{% for a in (1..100000) %}{% for b in (1..100000) %}x{% endfor %}{% endfor %}"],
    ["prototype read", "{{ user.constructor }}"],
    ["proto chain", "{{ user.__proto__ }}"],
    ["include a file", "{% include '/etc/passwd' %}"],
    ["unknown filter", "{{ user | shell }}"],
  ];
  for (const [name, source] of hostile) {
    await t.step(`${name} is refused or bounded`, async () => {
      const started = Date.now();
      await assertRejects(() => renderTemplate("body", source, { user: { name: "x" } }), /body/);
      assertEquals(Date.now() - started < 5_000, true);
    });
  }
});
