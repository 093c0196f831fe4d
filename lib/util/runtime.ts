/**
 * The one place that asks which runtime this is (`Deno`, `Bun`, or Node), typed. Code that needs
 * what only one runtime offers (TLS connections, serving, timers that do not hold the process
 * open) asks here instead of casting `globalThis` itself.
 *
 * On Deno nothing here touches a `node:` module or the `process` global: the first of either
 * starts Deno's Node compatibility layer (about 0.75 MiB of live heap and 2–4 MiB resident in an
 * idle operator), so what an operator needs of its process (environment, host name, signals,
 * exit, memory and CPU figures) comes from Deno's own API there, and from `process` elsewhere.
 *
 * @module
 */

/** Node's `process`, as Bun and Node offer it globally. */
export type NodeProcess = typeof import("node:process");

/**
 * The parts of Bun's global object that Rudder uses. Bun's own types are not available to
 * `deno check`, so this declares the few members Rudder calls, as Bun documents them.
 */
export interface BunGlobal {
  /** Bun's version, such as `1.2.3`. */
  readonly version: string;
  /** Starts an HTTP(S) server; it listens once this returns. */
  serve(options: BunServeOptions): BunServer;
  /** Collects garbage now; with `true`, a full collection that returns before it is done. */
  gc?(force: boolean): void;
  /**
   * Shrinks the engine's footprint once the running JavaScript returns: JavaScriptCore drops its
   * compiled code, collects in full and hands free memory back.
   */
  shrink?(): void;
}

/** The options of {@linkcode BunGlobal.serve} that Rudder passes. */
export interface BunServeOptions {
  /** Address to listen on. */
  hostname?: string;
  /** Port to listen on; 0 for a free one. */
  port?: number;
  /** Seconds a connection may be idle before Bun closes it; 0: no limit. */
  idleTimeout?: number;
  /** Answers each request; `server` tells its peer. */
  fetch(request: Request, server: BunServer): Response | Promise<Response>;
  /** Answers a request whose handler threw. */
  error?(error: Error): Response;
  /** Serves HTTPS with this PEM pair; `secureOptions` are OpenSSL's `SSL_OP_*` flags. */
  tls?: { cert: string; key: string; secureOptions?: number };
}

/** A server started by {@linkcode BunGlobal.serve}. */
export interface BunServer {
  /** The address it listens on. */
  readonly hostname: string;
  /** The port it listens on. */
  readonly port: number;
  /** The peer of `request`. */
  requestIP(request: Request): { address: string; port: number } | null;
  /** Stops listening; with `true`, also closes the connections in use. */
  stop(closeActiveConnections?: boolean): Promise<void> | void;
}

// No cast: under `deno check` globalThis has `Deno`, so it fits this type; at run time at most
// one of the two exists, hence both optional.
const globals: { Deno?: typeof Deno; Bun?: BunGlobal } = globalThis;

/**
 * Node's `process` object: on Bun and Node the global, on Deno the one its Node layer offers
 * (which this starts: call it on Deno only for what has no Deno equivalent).
 *
 * @example
 * ```ts
 * import { nodeProcess } from "./runtime.ts";
 *
 * console.log(typeof nodeProcess().getBuiltinModule); // "function"
 * ```
 */
export function nodeProcess(): NodeProcess {
  // Read the global when asked, never at import: on Deno the getter starts the Node layer.
  return (globalThis as unknown as { process: NodeProcess }).process;
}

/**
 * Deno's `Deno.env.get`, with a variable the program may not read (`--allow-env=<names>`
 * without it) taken as unset, as an operator compiled with a list of variables needs.
 */
function denoEnv(runtime: typeof Deno, name: string): string | undefined {
  try {
    return runtime.env.get(name);
  } catch (err) {
    if (
      err instanceof runtime.errors.NotCapable || err instanceof runtime.errors.PermissionDenied
    ) {
      return undefined;
    }
    throw err;
  }
}

/**
 * The environment variable `name`, or `undefined` when it is not set (or, on Deno, may not be
 * read).
 *
 * @example
 * ```ts
 * import { getEnv } from "./runtime.ts";
 *
 * console.log(getEnv("HOME") !== undefined); // true where HOME is set
 * ```
 */
export function getEnv(name: string): string | undefined {
  return globals.Deno ? denoEnv(globals.Deno, name) : nodeProcess().env[name];
}

/**
 * The environment as an object, like `process.env`: on Bun and Node that object itself, on Deno
 * a read-only view that reads each variable when asked (so a program allowed to read only some
 * variables can read those; listing them all needs leave to read every one).
 *
 * @example
 * ```ts
 * import { envObject } from "./runtime.ts";
 *
 * console.log(typeof envObject().PATH); // "string" where PATH is set
 * ```
 */
export function envObject(): Record<string, string | undefined> {
  const runtime = globals.Deno;
  if (!runtime) return nodeProcess().env;
  return new Proxy({} as Record<string, string | undefined>, {
    get: (_, name) => typeof name === "string" ? denoEnv(runtime, name) : undefined,
    has: (_, name) => typeof name === "string" && denoEnv(runtime, name) !== undefined,
    ownKeys: () => Object.keys(runtime.env.toObject()),
    getOwnPropertyDescriptor: (_, name) => {
      const value = typeof name === "string" ? denoEnv(runtime, name) : undefined;
      if (value === undefined) return undefined;
      return {
        value,
        enumerable: true,
        configurable: true,
        writable: false,
      };
    },
    set: () => false,
    deleteProperty: () => false,
  });
}

/**
 * This machine's host name (`os.hostname()`).
 *
 * @example
 * ```ts
 * import { hostname } from "./runtime.ts";
 *
 * console.log(hostname().length > 0); // true
 * ```
 */
export function hostname(): string {
  if (globals.Deno) return globals.Deno.hostname();
  const os = nodeProcess().getBuiltinModule("node:os") as typeof import("node:os");
  return os.hostname();
}

/**
 * The operating system as Node names it (`linux`, `darwin`, `win32`, …).
 *
 * @example
 * ```ts
 * import { platform } from "./runtime.ts";
 *
 * console.log(platform()); // "linux" on Linux
 * ```
 */
export function platform(): string {
  if (!globals.Deno) return nodeProcess().platform;
  const os = globals.Deno.build.os;
  return os === "windows" ? "win32" : os;
}

/**
 * The processor architecture as Node names it (`x64`, `arm64`, …).
 *
 * @example
 * ```ts
 * import { arch } from "./runtime.ts";
 *
 * console.log(["x64", "arm64"].includes(arch())); // true on most machines
 * ```
 */
export function arch(): string {
  if (!globals.Deno) return nodeProcess().arch;
  const cpu = globals.Deno.build.arch;
  return cpu === "x86_64" ? "x64" : cpu === "aarch64" ? "arm64" : cpu;
}

/**
 * The current working directory.
 *
 * @example
 * ```ts
 * import { cwd } from "./runtime.ts";
 *
 * console.log(cwd().startsWith("/")); // true on Unix
 * ```
 */
export function cwd(): string {
  return globals.Deno ? globals.Deno.cwd() : nodeProcess().cwd();
}

/**
 * The user's home directory (`os.homedir()`): `HOME` on Deno where it may be read, else Node's
 * answer (which asks the system: `--allow-sys=homedir`).
 *
 * @example
 * ```ts
 * import { homedir } from "./runtime.ts";
 *
 * console.log(homedir().length > 0); // true where HOME is set
 * ```
 */
export function homedir(): string {
  if (!globals.Deno) {
    return (nodeProcess().getBuiltinModule("node:os") as typeof import("node:os")).homedir();
  }
  const home = globals.Deno.build.os === "windows" ? undefined : denoEnv(globals.Deno, "HOME");
  return home || (nodeProcess().getBuiltinModule("node:os") as typeof import("node:os")).homedir();
}

/**
 * The directory for temporary files (`os.tmpdir()`): `TMPDIR`, `TMP` or `TEMP`, else `/tmp`, on
 * Deno.
 *
 * @example
 * ```ts
 * import { tmpdir } from "./runtime.ts";
 *
 * console.log(tmpdir().length > 0); // true
 * ```
 */
export function tmpdir(): string {
  const runtime = globals.Deno;
  if (!runtime) {
    return (nodeProcess().getBuiltinModule("node:os") as typeof import("node:os")).tmpdir();
  }
  const dir = denoEnv(runtime, "TMPDIR") ?? denoEnv(runtime, "TMP") ?? denoEnv(runtime, "TEMP");
  return dir ? dir.replace(/(.)\/+$/, "$1") : "/tmp";
}

/**
 * Ends the process with `code` at once.
 *
 * @example
 * ```ts ignore
 * import { exit } from "./runtime.ts";
 *
 * exit(1);
 * ```
 */
export function exit(code: number): never {
  if (globals.Deno) globals.Deno.exit(code);
  return nodeProcess().exit(code);
}

/** A signal a program may handle here. */
export type ProcessSignal = "SIGTERM" | "SIGINT" | "SIGHUP" | "SIGUSR1" | "SIGUSR2";

/**
 * Calls `listener` on each `signal`; returns a function that stops it. While a listener is on,
 * the signal no longer ends the process by itself.
 *
 * @example
 * ```ts
 * import { onSignal } from "./runtime.ts";
 *
 * const off = onSignal("SIGTERM", () => console.log("stopping"));
 * off();
 * ```
 */
export function onSignal(signal: ProcessSignal, listener: () => void): () => void {
  const runtime = globals.Deno;
  if (runtime) {
    runtime.addSignalListener(signal, listener);
    return () => runtime.removeSignalListener(signal, listener);
  }
  const process = nodeProcess();
  process.on(signal, listener);
  return () => void process.off(signal, listener);
}

/**
 * This process's resident memory in bytes (`process.memoryUsage().rss`).
 *
 * @example
 * ```ts
 * import { residentBytes } from "./runtime.ts";
 *
 * console.log(residentBytes() > 0); // true
 * ```
 */
export function residentBytes(): number {
  return globals.Deno ? globals.Deno.memoryUsage().rss : nodeProcess().memoryUsage().rss;
}

/**
 * Deno's namespace when running on Deno, otherwise `undefined`.
 *
 * @example
 * ```ts
 * import { deno } from "./runtime.ts";
 *
 * console.log(deno()?.version.deno ?? "not Deno");
 * ```
 */
export function deno(): typeof Deno | undefined {
  return globals.Deno;
}

/**
 * Bun's global when running on Bun, otherwise `undefined`.
 *
 * @example
 * ```ts
 * import { bun } from "./runtime.ts";
 *
 * console.log(bun()?.version ?? "not Bun");
 * ```
 */
export function bun(): BunGlobal | undefined {
  return globals.Bun;
}

/**
 * Node's version (such as `26.10.0`) when running on Node, otherwise `undefined`. Deno and Bun
 * both claim a Node version in `process.versions` for compatibility, so only their absence
 * makes this Node.
 *
 * @example
 * ```ts
 * import { node } from "./runtime.ts";
 *
 * console.log(node() ?? "not Node");
 * ```
 */
export function node(): string | undefined {
  if (globals.Deno || globals.Bun) return undefined;
  return nodeProcess().versions.node;
}

/**
 * The runtime this code runs on; `"node"` for any other (Node, or another runtime that offers
 * Node's API).
 *
 * @example
 * ```ts
 * import { runtimeName } from "./runtime.ts";
 *
 * console.log(runtimeName()); // "deno" under `deno run`
 * ```
 */
export function runtimeName(): "deno" | "bun" | "node" {
  if (globals.Deno) return "deno";
  if (globals.Bun) return "bun";
  return "node";
}

/**
 * Lets the process exit while `timer` is pending. Timers are objects with `unref()` on Node, Bun
 * and Deno since its global timers became Node's `Timeout`; a timer id (a number, as older Deno and
 * the web's timers give) is released with `Deno.unrefTimer`.
 *
 * @example
 * ```ts
 * import { unrefTimer } from "./runtime.ts";
 *
 * unrefTimer(setTimeout(() => console.log("only if something else keeps the process"), 1000));
 * ```
 */
export function unrefTimer(timer: ReturnType<typeof setTimeout>): void {
  if (typeof timer === "number") globals.Deno?.unrefTimer(timer);
  else (timer as { unref?(): void }).unref?.();
}

/**
 * Runs a full garbage collection now, where the runtime lets a program ask for one: on Bun
 * always (`Bun.gc(true)`, which also gives the freed pages back to the system), on Deno and Node
 * only when started with `--expose-gc`. Returns whether a collection ran. It blocks for as long
 * as the collection takes (tens of milliseconds for a heap of 100 MiB): call it once after a
 * burst of work that left much garbage, never on a hot path.
 *
 * @example
 * ```ts
 * import { collectGarbage } from "./runtime.ts";
 *
 * console.log(collectGarbage() ? "collected" : "this runtime collects on its own");
 * ```
 */
export function collectGarbage(): boolean {
  const bunGC = globals.Bun?.gc;
  if (typeof bunGC === "function") {
    bunGC.call(globals.Bun, true);
    return true;
  }
  // V8 offers `gc` only under --expose-gc; `Deno` is named so the type is not a weak one.
  const engine: { Deno?: typeof Deno; gc?: () => void } = globalThis;
  if (typeof engine.gc === "function") {
    engine.gc();
    return true;
  }
  return false;
}

let shrinkPending = false;

/**
 * After a burst of work that compiled much code and left much garbage (an informer's list of
 * thousands of objects), lets the engine give back what the burst left, once: on Bun
 * `Bun.shrink()`, after the current task (several informers that sync together shrink once);
 * elsewhere nothing, as V8's memory reducer does that by itself. Measured on Bun with 10,000
 * ConfigMaps cached: about 3 MiB less resident (bench/README.md, "Bun's memory per cached
 * object"). The compiled code of what runs next is compiled again, once.
 *
 * @example
 * ```ts
 * import { shrinkAfterBurst } from "./runtime.ts";
 *
 * shrinkAfterBurst(); // after a list was stored
 * ```
 */
export function shrinkAfterBurst(): void {
  const engine = globals.Bun;
  if (shrinkPending || typeof engine?.shrink !== "function") return;
  shrinkPending = true;
  unrefTimer(setTimeout(() => {
    shrinkPending = false;
    engine.shrink?.();
  }, 0));
}

const encoder = new TextEncoder();

function writeAllSync(file: { writeSync(bytes: Uint8Array): number }, text: string): void {
  let bytes = encoder.encode(text);
  while (bytes.length > 0) bytes = bytes.subarray(file.writeSync(bytes));
}

/**
 * Writes `text` to standard output (`process.stdout.write`; on Deno a synchronous write of all
 * of it, so lines from one process never interleave).
 *
 * @example
 * ```ts
 * import { writeStdout } from "./runtime.ts";
 *
 * writeStdout("hello\n");
 * ```
 */
export function writeStdout(text: string): void {
  if (globals.Deno) writeAllSync(globals.Deno.stdout, text);
  else nodeProcess().stdout.write(text);
}

/**
 * Writes `text` to standard error, as {@linkcode writeStdout} does to standard output.
 *
 * @example
 * ```ts
 * import { writeStderr } from "./runtime.ts";
 *
 * writeStderr("warning\n");
 * ```
 */
export function writeStderr(text: string): void {
  if (globals.Deno) writeAllSync(globals.Deno.stderr, text);
  else nodeProcess().stderr.write(text);
}

/**
 * Whether standard error is a terminal.
 *
 * @example
 * ```ts
 * import { stderrIsTerminal } from "./runtime.ts";
 *
 * console.log(typeof stderrIsTerminal()); // "boolean"
 * ```
 */
export function stderrIsTerminal(): boolean {
  return globals.Deno ? globals.Deno.stderr.isTerminal() : nodeProcess().stderr.isTTY === true;
}
