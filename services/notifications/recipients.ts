import { errors } from "../../lib/errors.ts";
import type { Channel } from "./providers/provider.ts";
import type { NotifySettings } from "./settings.ts";

const EMAIL = /^[^\s@<>()",;:]+@[^\s@<>()",;:]+\.[^\s@<>()",;:]+$/;
const PHONE = /^\+[1-9]\d{6,14}$/;
const DEVICE_TOKEN = /^((fcm|apns):)?[A-Za-z0-9_:\-.]{8,4096}$/;

/**
 * Why `recipient` cannot receive on `channel` (an email address, an E.164 number, a device token, or an http(s)
 * URL without credentials), or null when it can.
 */
export function recipientProblem(channel: Channel, recipient: string): string | null {
  if (channel === "email" && !EMAIL.test(recipient)) return "an email address";
  if (channel === "sms" && !PHONE.test(recipient)) return "a phone number in E.164 form (+15551234567)";
  if (channel === "push" && !DEVICE_TOKEN.test(recipient)) return "a device token";
  if (channel === "webhook") {
    let url: URL;
    try {
      url = new URL(recipient);
    } catch {
      return "an http(s) URL";
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") return "an http(s) URL";
    if (url.username || url.password) return "a URL without credentials";
  }
  return null;
}

/** Throws 400 naming `field` unless `recipient` can receive on `channel`. */
export function checkRecipient(channel: Channel, recipient: string, field = "recipient"): void {
  const problem = recipientProblem(channel, recipient);
  if (problem) throw errors.validation(`${field}: must be ${problem} for channel "${channel}"`);
}

/**
 * The settings `channel` still needs before anything can be sent to `recipient` (push recipients may name
 * `fcm:` or `apns:`), or null when its provider is configured. A webhook needs none: without a secret it goes
 * unsigned.
 */
export function missingSettings(
  settings: NotifySettings,
  channel: Channel,
  recipient: string,
): string | null {
  switch (channel) {
    case "email":
      return settings.email.host && settings.email.from ? null : "email.host and email.from";
    case "sms": {
      const { account_sid, auth_token, from } = settings.sms;
      return account_sid && auth_token && from ? null : "sms.account_sid, sms.auth_token and sms.from";
    }
    case "push": {
      const fcm = settings.push.fcm.service_account ? null : "push.fcm.service_account";
      const { team_id, key_id, private_key, topic } = settings.push.apns;
      const apns = team_id && key_id && private_key && topic
        ? null
        : "push.apns.team_id, push.apns.key_id, push.apns.private_key and push.apns.topic";
      if (recipient.startsWith("fcm:")) return fcm;
      if (recipient.startsWith("apns:")) return apns;
      return fcm === null || apns === null ? null : "push.fcm.service_account (or push.apns.*)";
    }
    case "webhook":
      return null;
  }
}

/** Throws 400 naming the missing settings unless `channel` can send to `recipient` with `settings`. */
export function checkConfigured(
  settings: NotifySettings,
  channel: Channel,
  recipient: string,
  field = "channel",
): void {
  const missing = missingSettings(settings, channel, recipient);
  if (missing) {
    throw errors.validation(
      `${field}: "${channel}" is not configured for this project: set ${missing} with PATCH /v1/notifications/settings`,
    );
  }
}
