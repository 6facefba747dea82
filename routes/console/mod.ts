import { Hono } from "hono";
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { CONSOLE_SESSION_HOURS } from "../../services/admin/admins.ts";
import type { AdminIdentity } from "../../services/admin/admins.ts";
import { AppError } from "../../lib/errors.ts";
import type { AppEnv } from "../env.ts";
import { CONSOLE_COOKIE } from "../middleware/auth.ts";
import { accountLimited, takePasswordAttempt } from "../middleware/rate_limit.ts";
import { consoleAsset } from "./assets.ts";
import { consolePage, signInPage, type View, VIEWS } from "./pages.ts";

/**
 * The console's pages (docs/console.md): `/` and `/console` lead to the projects view; every page without a
 * session is the sign-in form. No inline script or style anywhere, so the policy admits only this origin's.
 */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

/** The console's routes: its pages, sign-in and sign-out, its static files. */
export const consoleRoutes = new Hono<AppEnv>();

consoleRoutes.use("/console/*", async (c, next) => {
  await next();
  c.header("content-security-policy", CSP);
  c.header("x-frame-options", "DENY");
  c.header("referrer-policy", "same-origin");
  c.header("x-content-type-options", "nosniff");
});

consoleRoutes.get("/", (c) => c.redirect("/console", 302));
consoleRoutes.get("/console", (c) => page(c, "projects"));
consoleRoutes.get("/console/", (c) => page(c, "projects"));

consoleRoutes.get("/console/assets/:file", async (c) => {
  const res = await consoleAsset(c.req.param("file"));
  return res ?? c.notFound();
});

consoleRoutes.post("/console/login", async (c) => {
  const form = await c.req.parseBody();
  const email = typeof form.email === "string" ? form.email.trim().slice(0, 320) : "";
  const password = typeof form.password === "string" ? form.password.slice(0, 1024) : "";
  const next = safeNext(typeof form.next === "string" ? form.next : "");
  if (!email || !password) {
    return c.html(signInPage({ email, next, error: "Enter the admin email and password" }), 400);
  }
  let session: { token: string };
  try {
    takePasswordAttempt(c);
    session = await accountLimited(c, `admin:${email}`, () => c.env.platform.admins.login(email, password));
  } catch (err) {
    if (!(err instanceof AppError) || (err.status !== 401 && err.status !== 429)) throw err;
    if (err.headers["retry-after"]) c.header("retry-after", err.headers["retry-after"]);
    const error = err.status === 429
      ? "Too many sign-in attempts: wait a minute and try again"
      : "Wrong email or password";
    // The form again, as a page (200): the refusal is in its text; only the rate limit keeps its status.
    return c.html(signInPage({ email, next, error }), err.status === 429 ? 429 : 200);
  }
  // A fresh token each sign-in (never one the browser brought: no session fixation); the old one ends.
  const old = getCookie(c, CONSOLE_COOKIE);
  if (old?.startsWith("cs_")) await c.env.platform.admins.logout(old);
  setCookie(c, CONSOLE_COOKIE, session.token, {
    httpOnly: true,
    sameSite: "Strict",
    path: "/",
    maxAge: CONSOLE_SESSION_HOURS * 3600,
    secure: new URL(c.req.url).protocol === "https:",
  });
  return c.redirect(next, 303);
});

consoleRoutes.post("/console/logout", async (c) => {
  const token = getCookie(c, CONSOLE_COOKIE);
  if (token?.startsWith("cs_")) await c.env.platform.admins.logout(token);
  deleteCookie(c, CONSOLE_COOKIE, { path: "/" });
  return c.redirect("/console", 303);
});

consoleRoutes.get("/console/:view", (c) => {
  const view = VIEWS.find(([v]) => v === c.req.param("view"))?.[0];
  return view ? page(c, view) : c.notFound();
});

/** A console path to return to after sign-in; anything else (another site, `//host`) is the console's home. */
function safeNext(next: string): string {
  return /^\/console(\/[a-z]*)?(\?[\w=&%.-]*)?$/.test(next) ? next : "/console";
}

async function signedIn(c: Context<AppEnv>): Promise<AdminIdentity | null> {
  const token = getCookie(c, CONSOLE_COOKIE);
  return token?.startsWith("cs_") ? await c.env.platform.admins.verify(token) : null;
}

async function page(c: Context<AppEnv>, view: View): Promise<Response> {
  c.header("cache-control", "no-store");
  const admin = await signedIn(c);
  const url = new URL(c.req.url);
  if (!admin) return c.html(signInPage({ next: safeNext(url.pathname + url.search) }), 200);
  const { config, projects } = c.env.platform;
  const list = (await projects.list()).map((p) => ({ ref: p.ref, name: p.name }));
  const wanted = url.searchParams.get("project");
  const project = list.find((p) => p.ref === wanted)?.ref ?? config.DEFAULT_PROJECT_REF;
  return c.html(consolePage({ view, email: admin.email, projects: list, project }), 200);
}
