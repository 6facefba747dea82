/** WASI preview1 errno values used by the shim. */
const Errno = { SUCCESS: 0, BADF: 8, INVAL: 28, NOSYS: 52, SPIPE: 70, NOTCAPABLE: 76 } as const;

/** Thrown by `proc_exit` to unwind out of `_start`. */
class ProcExit extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
    this.name = "ProcExit";
  }
}

/** Options of a {@linkcode Wasi} instance: one run of a command module. */
interface WasiOptions {
  args: string[];
  env: Record<string, string>;
  stdin: Uint8Array;
  /** Receives each write to fd 1. */
  stdout(bytes: Uint8Array): void;
  /** Receives each write to fd 2. */
  stderr(bytes: Uint8Array): void;
}

const encoder = new TextEncoder();

/**
 * Wasi is a small WASI preview1 implementation for CGI-style command modules: args, environment, stdin,
 * stdout, stderr, clocks, random and exit. There is no file system and no socket: every other call answers
 * NOSYS or NOTCAPABLE, so a module can only compute and talk through its standard streams.
 */
export class Wasi {
  private memory: WebAssembly.Memory | null = null;
  private stdinOffset = 0;
  private readonly args: Uint8Array[];
  private readonly env: Uint8Array[];

  constructor(private readonly options: WasiOptions) {
    this.args = options.args.map((a) => encoder.encode(a + "\0"));
    this.env = Object.entries(options.env).map(([k, v]) => encoder.encode(`${k}=${v}\0`));
  }

  /** Runs `_start` of an instance; returns the exit code (0 when `_start` returns). */
  start(instance: WebAssembly.Instance): number {
    const memory = instance.exports.memory;
    if (!(memory instanceof WebAssembly.Memory)) throw new Error("Module does not export its memory");
    this.memory = memory;
    const start = instance.exports._start;
    if (typeof start !== "function") throw new Error("Module does not export _start");
    try {
      start();
      return 0;
    } catch (err) {
      if (err instanceof ProcExit) return err.code;
      throw err;
    }
  }

  private view(): DataView {
    return new DataView(this.memory!.buffer);
  }

  private bytes(): Uint8Array {
    return new Uint8Array(this.memory!.buffer);
  }

  private writeStrings(list: Uint8Array[], ptrs: number, buf: number): number {
    const view = this.view();
    const bytes = this.bytes();
    let offset = buf;
    list.forEach((item, i) => {
      view.setUint32(ptrs + i * 4, offset, true);
      bytes.set(item, offset);
      offset += item.byteLength;
    });
    return Errno.SUCCESS;
  }

  private sizes(list: Uint8Array[], countPtr: number, sizePtr: number): number {
    const view = this.view();
    view.setUint32(countPtr, list.length, true);
    view.setUint32(sizePtr, list.reduce((n, a) => n + a.byteLength, 0), true);
    return Errno.SUCCESS;
  }

  /** The import object: `{ wasi_snapshot_preview1: … }`. Unknown calls answer NOSYS. */
  get imports(): WebAssembly.Imports {
    const known: Record<string, (...args: never[]) => number> = {
      args_get: (argv: number, buf: number) => this.writeStrings(this.args, argv, buf),
      args_sizes_get: (count: number, size: number) => this.sizes(this.args, count, size),
      environ_get: (environ: number, buf: number) => this.writeStrings(this.env, environ, buf),
      environ_sizes_get: (count: number, size: number) => this.sizes(this.env, count, size),
      fd_write: (fd: number, iovs: number, iovsLen: number, written: number) => {
        if (fd !== 1 && fd !== 2) return Errno.BADF;
        const view = this.view();
        let total = 0;
        for (let i = 0; i < iovsLen; i++) {
          const ptr = view.getUint32(iovs + i * 8, true);
          const len = view.getUint32(iovs + i * 8 + 4, true);
          const chunk = this.bytes().slice(ptr, ptr + len);
          (fd === 1 ? this.options.stdout : this.options.stderr)(chunk);
          total += len;
        }
        view.setUint32(written, total, true);
        return Errno.SUCCESS;
      },
      fd_read: (fd: number, iovs: number, iovsLen: number, read: number) => {
        if (fd !== 0) return Errno.BADF;
        const view = this.view();
        let total = 0;
        for (let i = 0; i < iovsLen; i++) {
          const ptr = view.getUint32(iovs + i * 8, true);
          const len = view.getUint32(iovs + i * 8 + 4, true);
          const chunk = this.options.stdin.subarray(this.stdinOffset, this.stdinOffset + len);
          this.bytes().set(chunk, ptr);
          this.stdinOffset += chunk.byteLength;
          total += chunk.byteLength;
          if (chunk.byteLength < len) break;
        }
        view.setUint32(read, total, true);
        return Errno.SUCCESS;
      },
      fd_close: (fd: number) => fd <= 2 ? Errno.SUCCESS : Errno.BADF,
      fd_seek: (fd: number) => fd <= 2 ? Errno.SPIPE : Errno.BADF,
      fd_fdstat_get: (fd: number, ptr: number) => {
        if (fd > 2) return Errno.BADF;
        const view = this.view();
        view.setUint8(ptr, 2); // character device
        view.setUint16(ptr + 2, 0, true);
        view.setBigUint64(ptr + 8, 0xffffn, true);
        view.setBigUint64(ptr + 16, 0xffffn, true);
        return Errno.SUCCESS;
      },
      fd_fdstat_set_flags: () => Errno.SUCCESS,
      fd_prestat_get: () => Errno.BADF, // no preopened directories
      fd_prestat_dir_name: () => Errno.BADF,
      path_open: () => Errno.NOTCAPABLE,
      proc_exit: (code: number) => {
        throw new ProcExit(code);
      },
      sched_yield: () => Errno.SUCCESS,
      random_get: (ptr: number, len: number) => {
        const bytes = this.bytes();
        for (let i = 0; i < len; i += 65536) {
          crypto.getRandomValues(bytes.subarray(ptr + i, ptr + Math.min(len, i + 65536)));
        }
        return Errno.SUCCESS;
      },
      clock_res_get: (_id: number, ptr: number) => {
        this.view().setBigUint64(ptr, 1000n, true);
        return Errno.SUCCESS;
      },
      clock_time_get: (id: number, _precision: bigint, ptr: number) => {
        const ns = id === 0
          ? BigInt(Date.now()) * 1_000_000n
          : BigInt(Math.round(performance.now() * 1_000_000));
        this.view().setBigUint64(ptr, ns, true);
        return Errno.SUCCESS;
      },
    };
    const wasi = new Proxy(known, {
      get: (target, name) => typeof name === "string" && name in target ? target[name] : () => Errno.NOSYS,
    });
    return { wasi_snapshot_preview1: wasi as unknown as WebAssembly.ModuleImports };
  }
}
