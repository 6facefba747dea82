/**
 * The Content-Security-Policy of an answer whose bytes and type a project chose: a function's raw answer, or a
 * data answer typed by its SQL (`response.headers`) or by a media type handler. Such answers are served on the
 * platform's own origin, beside the console; an HTML one would otherwise run its scripts as the console's
 * origin, with the signed-in admin's session cookie on every request they make. As a sandbox without
 * `allow-same-origin`, the page still runs its scripts, forms and popups, but in an opaque origin of its own:
 * it can neither read the console's pages nor send requests with its cookie. Other media types ignore it.
 */
export const TENANT_CONTENT_CSP =
  "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads";
