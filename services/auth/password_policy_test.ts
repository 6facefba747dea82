import { assertEquals, assertMatch } from "../../tests/assert.ts";
import { commonPasswordsText } from "./common_passwords.ts";
import { MIN_PASSWORD_LENGTH, passwordProblem } from "./password_policy.ts";

Deno.test("password policy: blank and common passwords are refused with the reason", () => {
  for (const blank of ["        ", "\t\t\t\t\t\t\t\t", "\u3000".repeat(8)]) {
    assertMatch(passwordProblem(blank)!, /only whitespace/);
  }
  for (
    const common of ["12345678", "password", "Password", "PASSWORD ", "qwertyuiop", "iloveyou", "11111111"]
  ) {
    assertMatch(passwordProblem(common)!, /too common/, common);
  }
  for (
    const fine of ["plum-orchard-42", "correct-horse-battery", "admin-password-1", "  spaced out words  "]
  ) {
    assertEquals(passwordProblem(fine), null, fine);
  }
});

Deno.test("password policy: common_passwords.txt is what the zxcvbn package holds (deno task passwords)", async () => {
  const file = await Deno.readTextFile(new URL("./common_passwords.txt", import.meta.url));
  assertEquals(file, commonPasswordsText(MIN_PASSWORD_LENGTH));
});
