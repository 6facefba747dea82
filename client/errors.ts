/**
 * PlatformError is the one error every client method throws: the platform's error envelope
 * (`{error: {code, type, message, request_id}}`) with the HTTP status, or a failure of the network itself
 * (`NETWORK_ERROR`, status 0).
 */
export class PlatformError extends Error {
  /** The platform's error code, such as `VALIDATION_ERROR` or `QUOTA_EXCEEDED`. */
  readonly code: string;
  /** The error's class, such as `invalid_request`, `unauthorized` or `quota`. */
  readonly type: string;
  /** The HTTP status; 0 when no answer arrived. */
  readonly status: number;
  /** The `x-request-id` of the answer, to find the request in the platform's logs. */
  readonly requestId: string | null;

  constructor(
    init: { code: string; type: string; message: string; status: number; requestId?: string | null },
  ) {
    super(init.message);
    this.name = "PlatformError";
    this.code = init.code;
    this.type = init.type;
    this.status = init.status;
    this.requestId = init.requestId ?? null;
  }
}

/** The error type the platform gives a status that carries no envelope of its own. */
function typeOf(status: number): string {
  if (status === 401) return "unauthorized";
  if (status === 403) return "forbidden";
  if (status === 404) return "not_found";
  if (status === 409) return "conflict";
  if (status === 429) return "rate_limit";
  if (status >= 500) return "internal";
  return "invalid_request";
}

/** The PlatformError of a failed answer, read from its envelope when it has one. */
export async function errorFromResponse(res: Response): Promise<PlatformError> {
  const requestId = res.headers.get("x-request-id");
  const text = await res.text().catch(() => "");
  let error: Record<string, unknown> | undefined;
  try {
    const body = JSON.parse(text);
    if (body && typeof body.error === "object" && body.error !== null) error = body.error;
    else if (body && typeof body.code === "string") error = body;
  } catch { /* not JSON */ }
  return new PlatformError({
    code: typeof error?.code === "string" ? error.code : "ERROR",
    type: typeof error?.type === "string" ? error.type : typeOf(res.status),
    message: typeof error?.message === "string" ? error.message : text.slice(0, 500) || res.statusText,
    status: res.status,
    requestId: typeof error?.request_id === "string" ? error.request_id : requestId,
  });
}

/** The PlatformError of a request that got no answer (refused connection, DNS, abort). */
export function networkError(err: unknown): PlatformError {
  if (err instanceof PlatformError) return err;
  const aborted = err instanceof DOMException && err.name === "AbortError";
  return new PlatformError({
    code: aborted ? "ABORTED" : "NETWORK_ERROR",
    type: "network",
    message: err instanceof Error ? err.message : String(err),
    status: 0,
  });
}
