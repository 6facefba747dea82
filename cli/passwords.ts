// `deno task passwords`: writes services/auth/common_passwords.txt from the zxcvbn package (after upgrading it).
import { commonPasswordsText } from "../services/auth/common_passwords.ts";
import { MIN_PASSWORD_LENGTH } from "../services/auth/password_policy.ts";

const file = new URL("../services/auth/common_passwords.txt", import.meta.url);
await Deno.writeTextFile(file, commonPasswordsText(MIN_PASSWORD_LENGTH));
console.log(`wrote ${file.pathname}`);
