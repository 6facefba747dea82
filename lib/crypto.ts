import { decodeBase64Url, encodeBase64Url } from "./encoding.ts";

const encoder = new TextEncoder();

/** Returns the lowercase hex SHA-256 digest of a string or bytes. */
export async function sha256Hex(input: string | Uint8Array): Promise<string> {
  const bytes = typeof input === "string" ? encoder.encode(input) : input;
  const digest = await crypto.subtle.digest("SHA-256", bytes as BufferSource);
  return toHex(new Uint8Array(digest));
}

/** Returns `bytes` random bytes as lowercase hex. */
export function randomHex(bytes: number): string {
  return toHex(crypto.getRandomValues(new Uint8Array(bytes)));
}

/** Returns `bytes` random bytes as base64url without padding. */
export function randomToken(bytes = 32): string {
  return encodeBase64Url(crypto.getRandomValues(new Uint8Array(bytes)));
}

function toHex(bytes: Uint8Array): string {
  let out = "";
  for (const b of bytes) out += b.toString(16).padStart(2, "0");
  return out;
}

/** Compares two strings in time that depends only on their length. */
export function timingSafeEqual(a: string, b: string): boolean {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  if (x.length !== y.length) return false;
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x[i]! ^ y[i]!;
  return diff === 0;
}

/**
 * Cipher encrypts secrets at rest with AES-256-GCM. Its key is derived with HKDF from the platform secret,
 * so one secret serves every purpose without reuse across them.
 */
export class Cipher {
  private constructor(private readonly key: CryptoKey) {}

  /** Derives the cipher for `purpose` from the platform secret. */
  static async fromSecret(secret: string, purpose = "secrets-at-rest/v1"): Promise<Cipher> {
    const material = await crypto.subtle.importKey("raw", encoder.encode(secret), "HKDF", false, [
      "deriveKey",
    ]);
    const key = await crypto.subtle.deriveKey(
      { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(32), info: encoder.encode(purpose) },
      material,
      { name: "AES-GCM", length: 256 },
      false,
      ["encrypt", "decrypt"],
    );
    return new Cipher(key);
  }

  /** Encrypts a string into `v1.<iv>.<ciphertext>` (base64url parts). */
  async encrypt(plaintext: string): Promise<string> {
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const ct = await crypto.subtle.encrypt({ name: "AES-GCM", iv }, this.key, encoder.encode(plaintext));
    return `v1.${encodeBase64Url(iv)}.${encodeBase64Url(new Uint8Array(ct))}`;
  }

  /** Decrypts what {@linkcode Cipher.encrypt} produced; throws when it was tampered with. */
  async decrypt(sealed: string): Promise<string> {
    const [version, iv, ct] = sealed.split(".");
    if (version !== "v1" || !iv || !ct) throw new Error("Unknown ciphertext format");
    const pt = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: decodeBase64Url(iv) as BufferSource },
      this.key,
      decodeBase64Url(ct) as BufferSource,
    );
    return new TextDecoder().decode(pt);
  }
}
