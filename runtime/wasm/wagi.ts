import type { HeaderList } from "../protocol.ts";
import { Wasi } from "./wasi.ts";
import { concatBytes } from "../../lib/encoding.ts";

/** One HTTP request as a WAGI module sees it. */
interface WagiRequest {
  method: string;
  url: string;
  headers: HeaderList;
  body: Uint8Array | null;
  /** The function's env_vars (CGI variables take precedence). */
  env: Record<string, string>;
  name: string;
}

/** The parsed CGI answer of a module. */
interface WagiResponse {
  status: number;
  headers: HeaderList;
  body: Uint8Array;
  /** stderr, one entry per line. */
  logs: string[];
  exitCode: number;
}

/** PATH_INFO is the decoded path (RFC 3875); a path whose escapes are not UTF-8 is passed as sent. */
function decodedPath(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/** The CGI environment of a request (RFC 3875, WAGI style). */
export function cgiEnv(req: WagiRequest): Record<string, string> {
  const url = new URL(req.url);
  const env: Record<string, string> = { ...req.env };
  env.GATEWAY_INTERFACE = "CGI/1.1";
  env.SERVER_PROTOCOL = "HTTP/1.1";
  env.SERVER_SOFTWARE = "platform-wagi";
  env.REQUEST_METHOD = req.method;
  env.SCRIPT_NAME = `/${req.name}`;
  env.PATH_INFO = decodedPath(url.pathname);
  env.QUERY_STRING = url.search.slice(1);
  env.X_FULL_URL = url.href;
  env.CONTENT_LENGTH = String(req.body?.byteLength ?? 0);
  for (const [name, value] of req.headers) {
    if (name === "content-type") env.CONTENT_TYPE = value;
    else if (name !== "content-length") env[`HTTP_${name.toUpperCase().replaceAll("-", "_")}`] = value;
  }
  return env;
}

const HEADER_LINE = /^([A-Za-z0-9!#$%&'*+.^_`|~-]+):[ \t]*(.*)$/;

/** Splits CGI output into status, headers and body; output without a header block is a text/plain body. */
export function parseCgi(out: Uint8Array): { status: number; headers: HeaderList; body: Uint8Array } {
  const plain = {
    status: 200,
    headers: [["content-type", "text/plain; charset=utf-8"]] as HeaderList,
    body: out,
  };
  // The header block ends at the first blank line; it is ASCII, so look at a bounded prefix.
  const head = new TextDecoder("latin1").decode(out.subarray(0, 16384));
  const match = head.match(/\r?\n\r?\n/);
  if (!match || match.index === undefined) return plain;
  const lines = head.slice(0, match.index).split(/\r?\n/);
  const headers: HeaderList = [];
  let status = 200;
  for (const line of lines) {
    const m = line.match(HEADER_LINE);
    if (!m) return plain;
    const name = m[1]!.toLowerCase();
    const value = m[2]!.trim();
    if (name === "status") {
      const code = Number(value.split(" ")[0]);
      if (!Number.isInteger(code) || code < 200 || code > 599) return plain;
      status = code;
    } else headers.push([name, value]);
  }
  if (!lines.some((l) => /^status:/i.test(l)) && headers.some(([n]) => n === "location")) status = 302;
  if (!headers.some(([n]) => n === "content-type")) {
    headers.push(["content-type", "text/plain; charset=utf-8"]);
  }
  return { status, headers, body: out.subarray(match.index + match[0].length) };
}

/** Thrown when a module fails: a trap, or an exit without output. Carries the stderr lines. */
export class WagiError extends Error {
  constructor(message: string, readonly logs: string[]) {
    super(message);
    this.name = "WagiError";
  }
}

/**
 * Runs one request through a compiled WASI command module: body on stdin, CGI variables in
 * the environment, CGI response on stdout, stderr lines as logs. `maxOutput` bounds stdout.
 */
export function runWagi(module: WebAssembly.Module, req: WagiRequest, maxOutput: number): WagiResponse {
  const stdout: Uint8Array[] = [];
  const stderr: Uint8Array[] = [];
  let outBytes = 0;
  let errBytes = 0;
  const wasi = new Wasi({
    args: [req.name],
    env: cgiEnv(req),
    stdin: req.body ?? new Uint8Array(0),
    stdout(bytes) {
      outBytes += bytes.byteLength;
      if (outBytes > maxOutput) throw new WagiError(`Response is larger than ${maxOutput} bytes`, []);
      stdout.push(bytes);
    },
    stderr(bytes) {
      errBytes += bytes.byteLength;
      if (errBytes <= 1024 * 1024) stderr.push(bytes);
    },
  });
  const logs = () => {
    const text = new TextDecoder().decode(concatBytes(stderr));
    const lines = text.split(/\r?\n/);
    if (lines.at(-1) === "") lines.pop();
    return lines;
  };
  let exitCode: number;
  try {
    const instance = new WebAssembly.Instance(module, wasi.imports);
    exitCode = wasi.start(instance);
  } catch (err) {
    if (err instanceof WagiError) throw new WagiError(err.message, logs());
    const what = err instanceof WebAssembly.RuntimeError ? "trapped" : "failed";
    throw new WagiError(`WebAssembly module ${what}: ${(err as Error)?.message ?? String(err)}`, logs());
  }
  const out = concatBytes(stdout);
  if (exitCode !== 0 && out.byteLength === 0) {
    throw new WagiError(`WebAssembly module exited with code ${exitCode}`, logs());
  }
  return { ...parseCgi(out), logs: logs(), exitCode };
}
