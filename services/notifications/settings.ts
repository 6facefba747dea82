import { z } from "zod";
import type { Db } from "../../db/driver.ts";
import type { Cipher } from "../../lib/crypto.ts";
import { errors } from "../../lib/errors.ts";
import { readSettingsRow, writeSettingsRow } from "./store.ts";

const url = z.string().url().max(2000).refine((u) => /^https?:\/\//i.test(u), "must be an http(s) URL");
const secret = z.string().min(1).max(20_000).nullable();
const quota = z.number().int().min(0).max(100_000_000).nullable();

/** A Google service account, as downloaded from the console (only the fields FCM needs). */
export const ServiceAccount = z.object({
  client_email: z.string().min(1),
  private_key: z.string().min(1),
  project_id: z.string().min(1),
  token_uri: z.string().optional(),
}).passthrough();

/** The body of PATCH /v1/notifications/settings: every field optional; a secret set to null is cleared. */
export const SettingsPatch = z.strictObject({
  email: z.strictObject({
    host: z.string().min(1).max(255).nullable(),
    port: z.number().int().min(1).max(65535),
    secure: z.boolean(),
    user: z.string().max(255).nullable(),
    pass: secret,
    from: z.string().min(3).max(320).nullable(),
  }).partial(),
  sms: z.strictObject({
    base_url: url,
    account_sid: z.string().min(1).max(100).nullable(),
    auth_token: secret,
    from: z.string().min(1).max(50).nullable(),
    /** The public URL of this project's SMS status route, given to Twilio as StatusCallback. */
    status_callback_url: url.nullable(),
  }).partial(),
  push: z.strictObject({
    fcm: z.strictObject({
      base_url: url,
      token_url: url.nullable(),
      service_account: z.union([ServiceAccount, z.string().min(2)]).nullable(),
    }).partial(),
    apns: z.strictObject({
      base_url: url,
      team_id: z.string().min(1).max(20).nullable(),
      key_id: z.string().min(1).max(20).nullable(),
      private_key: secret,
      topic: z.string().min(1).max(255).nullable(),
    }).partial(),
  }).partial(),
  webhook: z.strictObject({
    secret: z.string().max(200)
      .regex(/^whsec_(?:[A-Za-z0-9+/]{4}){6,}(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/, {
        message: "must be whsec_ followed by base64 of at least 18 bytes",
      })
      .nullable(),
    timeout_ms: z.number().int().min(100).max(15_000),
  }).partial(),
  retry: z.strictObject({
    max_attempts: z.number().int().min(1).max(25),
    base_delay_ms: z.number().int().min(10).max(3_600_000),
  }).partial(),
  quotas: z.strictObject({ email: quota, sms: quota, push: quota, webhook: quota }).partial(),
}).partial();

/** A settings patch. */
export type SettingsPatch = z.infer<typeof SettingsPatch>;

/** The settings a provider reads: defaults applied and secrets decrypted. Never sent to a client. */
export interface NotifySettings {
  email: {
    host: string | null;
    port: number;
    secure: boolean;
    user: string | null;
    pass: string | null;
    from: string | null;
  };
  sms: {
    base_url: string;
    account_sid: string | null;
    auth_token: string | null;
    from: string | null;
    status_callback_url: string | null;
  };
  push: {
    fcm: {
      base_url: string;
      token_url: string | null;
      service_account: z.infer<typeof ServiceAccount> | null;
    };
    apns: {
      base_url: string;
      team_id: string | null;
      key_id: string | null;
      private_key: string | null;
      topic: string | null;
    };
  };
  webhook: { secret: string | null; timeout_ms: number };
  retry: { max_attempts: number; base_delay_ms: number };
  quotas: { email: number | null; sms: number | null; push: number | null; webhook: number | null };
  /** Changes whenever the settings change: providers built from older settings are rebuilt. */
  version: string;
}

const DEFAULTS = {
  email: { host: null, port: 587, secure: false, user: null, from: null },
  sms: { base_url: "https://api.twilio.com", account_sid: null, from: null, status_callback_url: null },
  push: {
    fcm: { base_url: "https://fcm.googleapis.com", token_url: null },
    apns: { base_url: "https://api.push.apple.com", team_id: null, key_id: null, topic: null },
  },
  webhook: { timeout_ms: 15_000 },
  retry: { max_attempts: 5, base_delay_ms: 1000 },
  quotas: { email: null, sms: null, push: null, webhook: null },
};

type Secrets = {
  email_pass?: string;
  sms_auth_token?: string;
  fcm_service_account?: string;
  apns_private_key?: string;
  webhook_secret?: string;
};

type Public = {
  email?: Record<string, unknown>;
  sms?: Record<string, unknown>;
  push?: { fcm?: Record<string, unknown>; apns?: Record<string, unknown> };
  webhook?: Record<string, unknown>;
  retry?: Record<string, unknown>;
  quotas?: Record<string, unknown>;
};

/** Reads and writes the notification settings of a project; secrets are sealed with the platform cipher. */
export class SettingsStore {
  constructor(private readonly cipher: Cipher) {}

  private async read(db: Db): Promise<{ pub: Public; secrets: Secrets; version: string }> {
    const row = await readSettingsRow(db);
    const secrets = row?.secrets ? JSON.parse(await this.cipher.decrypt(row.secrets)) as Secrets : {};
    // The version is the stored content itself: a timestamp (String(Date) has whole seconds) let two changes
    // within one second keep the first one's providers.
    const version = row ? `${JSON.stringify(row.public)}\n${row.secrets ?? ""}` : "";
    return { pub: (row?.public ?? {}) as Public, secrets, version };
  }

  /** The settings with defaults and decrypted secrets, for the providers. */
  async load(db: Db): Promise<NotifySettings> {
    const { pub, secrets, version } = await this.read(db);
    const account = secrets.fcm_service_account
      ? ServiceAccount.parse(JSON.parse(secrets.fcm_service_account))
      : null;
    return {
      email: { ...DEFAULTS.email, ...pub.email, pass: secrets.email_pass ?? null } as NotifySettings["email"],
      sms: {
        ...DEFAULTS.sms,
        ...pub.sms,
        auth_token: secrets.sms_auth_token ?? null,
      } as NotifySettings["sms"],
      push: {
        fcm: {
          ...DEFAULTS.push.fcm,
          ...pub.push?.fcm,
          service_account: account,
        } as NotifySettings["push"]["fcm"],
        apns: {
          ...DEFAULTS.push.apns,
          ...pub.push?.apns,
          private_key: secrets.apns_private_key ?? null,
        } as NotifySettings["push"]["apns"],
      },
      webhook: { ...DEFAULTS.webhook, ...pub.webhook, secret: secrets.webhook_secret ?? null },
      retry: { ...DEFAULTS.retry, ...pub.retry } as NotifySettings["retry"],
      quotas: { ...DEFAULTS.quotas, ...pub.quotas } as NotifySettings["quotas"],
      version,
    };
  }

  /** The public view: secrets replaced by `*_set` booleans. */
  static publicView(s: NotifySettings) {
    const { pass, ...email } = s.email;
    const { auth_token, ...sms } = s.sms;
    const { service_account, ...fcm } = s.push.fcm;
    const { private_key, ...apns } = s.push.apns;
    const { secret, ...webhook } = s.webhook;
    return {
      email: { ...email, pass_set: pass !== null },
      sms: { ...sms, auth_token_set: auth_token !== null },
      push: {
        fcm: { ...fcm, service_account_set: service_account !== null },
        apns: { ...apns, private_key_set: private_key !== null },
      },
      webhook: { ...webhook, secret_set: secret !== null },
      retry: s.retry,
      quotas: s.quotas,
    };
  }

  /** Applies a patch field by field; secrets are encrypted, `null` clears a field. */
  async patch(db: Db, patch: SettingsPatch): Promise<void> {
    const { pub, secrets } = await this.read(db);
    const setSecret = (key: keyof Secrets, value: string | null | undefined) => {
      if (value === undefined) return;
      if (value === null) delete secrets[key];
      else secrets[key] = value;
    };
    const merge = (
      target: Record<string, unknown> | undefined,
      values: Record<string, unknown>,
      skip: string[],
    ) => {
      const out = { ...target };
      for (const [k, v] of Object.entries(values)) if (!skip.includes(k) && v !== undefined) out[k] = v;
      return out;
    };
    if (patch.email) {
      pub.email = merge(pub.email, patch.email, ["pass"]);
      setSecret("email_pass", patch.email.pass);
    }
    if (patch.sms) {
      pub.sms = merge(pub.sms, patch.sms, ["auth_token"]);
      setSecret("sms_auth_token", patch.sms.auth_token);
    }
    if (patch.push?.fcm) {
      const fcm = patch.push.fcm;
      pub.push = { ...pub.push, fcm: merge(pub.push?.fcm, fcm, ["service_account"]) };
      let account: string | null | undefined = undefined;
      if (fcm.service_account === null) account = null;
      else if (typeof fcm.service_account === "string") {
        let parsed: unknown;
        try {
          parsed = JSON.parse(fcm.service_account);
        } catch {
          throw errors.validation("push.fcm.service_account: must be the service account JSON");
        }
        const checked = ServiceAccount.safeParse(parsed);
        if (!checked.success) {
          throw errors.validation("push.fcm.service_account: needs client_email, private_key and project_id");
        }
        account = JSON.stringify(checked.data);
      } else if (fcm.service_account) account = JSON.stringify(fcm.service_account);
      setSecret("fcm_service_account", account);
    }
    if (patch.push?.apns) {
      pub.push = { ...pub.push, apns: merge(pub.push?.apns, patch.push.apns, ["private_key"]) };
      setSecret("apns_private_key", patch.push.apns.private_key);
    }
    if (patch.webhook) {
      pub.webhook = merge(pub.webhook, patch.webhook, ["secret"]);
      setSecret("webhook_secret", patch.webhook.secret);
    }
    if (patch.retry) pub.retry = merge(pub.retry, patch.retry, []);
    if (patch.quotas) pub.quotas = merge(pub.quotas, patch.quotas, []);
    const sealed = Object.keys(secrets).length > 0
      ? await this.cipher.encrypt(JSON.stringify(secrets))
      : null;
    await writeSettingsRow(db, pub, sealed);
  }
}
