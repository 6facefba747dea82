import { assert, assertEquals } from "../../tests/assert.ts";
import { twilioSignature, verifyTwilioSignature } from "./twilio_signature.ts";

// Twilio's published example (docs "Webhooks security"): auth token 12345, this URL and these parameters.
const URL_ = "https://mycompany.com/myapp.php?foo=1&bar=2";
const PARAMS = new URLSearchParams({
  CallSid: "CA1234567890ABCDE",
  Caller: "+14158675309",
  Digits: "1234",
  From: "+14158675309",
  To: "+18005551212",
});

Deno.test("twilioSignature reproduces Twilio's published example", () => {
  assertEquals(twilioSignature("12345", URL_, PARAMS), "RSOYDt4T1cUTdK1PDd93/VVr8B8=");
});

Deno.test("verifyTwilioSignature: order of parameters does not matter, anything else does", () => {
  const shuffled = new URLSearchParams([...PARAMS].reverse());
  assert(verifyTwilioSignature("12345", "RSOYDt4T1cUTdK1PDd93/VVr8B8=", URL_, shuffled));
  const tampered = new URLSearchParams(PARAMS);
  tampered.set("Digits", "9999");
  assert(!verifyTwilioSignature("12345", "RSOYDt4T1cUTdK1PDd93/VVr8B8=", URL_, tampered));
  assert(!verifyTwilioSignature("54321", "RSOYDt4T1cUTdK1PDd93/VVr8B8=", URL_, PARAMS));
  assert(!verifyTwilioSignature("12345", "RSOYDt4T1cUTdK1PDd93/VVr8B8=", `${URL_}&baz=3`, PARAMS));
  assert(!verifyTwilioSignature("12345", "", URL_, PARAMS));
});

Deno.test("verifyTwilioSignature: the URL signed with or without its default port", () => {
  const withPort = "https://mycompany.com:443/myapp.php?foo=1&bar=2";
  const signed = twilioSignature("12345", withPort, PARAMS);
  assert(verifyTwilioSignature("12345", signed, URL_, PARAMS));
  assert(verifyTwilioSignature("12345", twilioSignature("12345", URL_, PARAMS), withPort, PARAMS));
});
