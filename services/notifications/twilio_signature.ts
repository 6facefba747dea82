import { createHmac } from "node:crypto";
import { timingSafeEqual } from "../../lib/crypto.ts";

/**
 * Twilio's request signature (`X-Twilio-Signature`): base64 of HMAC-SHA1, keyed with the account's auth
 * token, over the full URL Twilio called followed by every POST parameter sorted by name, each as name then
 * value with no separator (a repeated name contributes each distinct value, sorted).
 */
export function twilioSignature(authToken: string, url: string, params: URLSearchParams): string {
  let data = url;
  for (const name of [...new Set(params.keys())].sort()) {
    for (const value of [...new Set(params.getAll(name))].sort()) data += name + value;
  }
  return createHmac("sha1", authToken).update(data, "utf8").digest("base64");
}

/**
 * The spellings of `url` Twilio may have signed: as given, and with the default port added or removed
 * (Twilio's own validators accept the three, as some of its requests carry the port and others not).
 */
function urlVariants(url: string): string[] {
  const parsed = new URL(url);
  const withoutPort = new URL(url);
  withoutPort.port = "";
  const defaultPort = parsed.protocol === "https:" ? "443" : "80";
  const withPort = parsed.port
    ? parsed.toString()
    : `${parsed.protocol}//${parsed.host}:${defaultPort}${parsed.pathname}${parsed.search}`;
  return [...new Set([url, withPort, withoutPort.toString()])];
}

/** Whether `signature` is Twilio's signature of this request for `url` (compared in constant time). */
export function verifyTwilioSignature(
  authToken: string,
  signature: string,
  url: string,
  params: URLSearchParams,
): boolean {
  let ok = false;
  for (const variant of urlVariants(url)) {
    if (timingSafeEqual(twilioSignature(authToken, variant, params), signature)) ok = true;
  }
  return ok;
}
