import { assert, assertEquals, assertNotEquals, assertRejects } from "../tests/assert.ts";
import { Cipher, sha256Hex, timingSafeEqual } from "./crypto.ts";
import { hashPassword, verifyPassword } from "../services/auth/passwords.ts";

const SECRET = "a-platform-secret-of-at-least-32-bytes!!";

Deno.test("Cipher: round trip, fresh IV each time, tamper detected, other secret refused", async () => {
  const cipher = await Cipher.fromSecret(SECRET);
  const a = await cipher.encrypt("sk_value");
  const b = await cipher.encrypt("sk_value");
  assertNotEquals(a, b);
  assert(!a.includes("sk_value"));
  assertEquals(await cipher.decrypt(a), "sk_value");
  const flipped = a.slice(0, -2) + (a.at(-2) === "A" ? "B" : "A") + a.at(-1);
  await assertRejects(() => cipher.decrypt(flipped));
  const other = await Cipher.fromSecret(SECRET + "x");
  await assertRejects(() => other.decrypt(a));
  await assertRejects(() => cipher.decrypt("v2.x.y"), /Unknown ciphertext format/);
});

Deno.test("sha256Hex and timingSafeEqual", async () => {
  assertEquals(await sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  assert(timingSafeEqual("abc", "abc"));
  assert(!timingSafeEqual("abc", "abd"));
  assert(!timingSafeEqual("abc", "abcd"));
});

Deno.test("passwords: scrypt hash verifies, carries its parameters, and never contains the password", async () => {
  const hash = await hashPassword("hunter2-hunter2");
  assert(hash.startsWith("scrypt$131072$8$1$"));
  assert(!hash.includes("hunter2"));
  assert(await verifyPassword("hunter2-hunter2", hash));
  assert(!(await verifyPassword("hunter2-hunter3", hash)));
  assert(!(await verifyPassword("hunter2-hunter2", "md5$garbage")));
  assertNotEquals(await hashPassword("hunter2-hunter2"), hash, "salted");
});
