/**
 * The one place that asks which runtime this is (`Deno`, `Bun`, or Node), typed. Code that needs
 * what only one runtime offers (TLS connections, serving, timers that do not hold the process
 * open) asks here instead of casting `globalThis` itself.
 *
 * @module
 */

import process from "node:process";

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
  return process.versions.node;
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
