import { scrypt } from "node:crypto";
import { decodeBase64, encodeBase64 } from "../../lib/encoding.ts";
import { timingSafeEqual } from "../../lib/crypto.ts";

/** OWASP's minimum scrypt parameters (Password Storage Cheat Sheet): N=2^17, r=8, p=1. */
const PARAMS = { N: 2 ** 17, r: 8, p: 1 } as const;
const KEY_LENGTH = 32;
const MAX_MEMORY = 256 * 1024 * 1024;

function derive(password: string, salt: Uint8Array, N: number, r: number, p: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) =>
    scrypt(password.normalize("NFKC"), salt, KEY_LENGTH, { N, r, p, maxmem: MAX_MEMORY }, (err, key) => {
      if (err) reject(err);
      else resolve(new Uint8Array(key));
    })
  );
}

/** Hashes a password with scrypt into `scrypt$N$r$p$<salt>$<hash>` (the parameters travel with the hash). */
export async function hashPassword(password: string): Promise<string> {
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const key = await derive(password, salt, PARAMS.N, PARAMS.r, PARAMS.p);
  return ["scrypt", PARAMS.N, PARAMS.r, PARAMS.p, encodeBase64(salt), encodeBase64(key)].join("$");
}

/** Checks a password against a stored hash in constant time. A malformed hash never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split("$");
  if (scheme !== "scrypt" || !n || !r || !p || !salt || !hash) return false;
  const key = await derive(password, decodeBase64(salt), Number(n), Number(r), Number(p));
  return timingSafeEqual(encodeBase64(key), hash);
}

/** A hash of a random password, verified against when a user does not exist so timing reveals nothing. */
export const DUMMY_HASH =
  "scrypt$131072$8$1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
