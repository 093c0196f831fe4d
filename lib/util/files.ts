/**
 * Reading files without `node:fs` on Deno. Deno's `node:fs` loads a large part of its Node
 * compatibility layer (streams, buffers, events): about 3 MiB of an idle operator's resident
 * memory, for the few files an operator reads (its kubeconfig or service account, procfs for the
 * process metrics). On Deno these use Deno's own calls; elsewhere `node:fs`, fetched when first
 * needed (`process.getBuiltinModule`), which Bun and Node have built in. Errors keep Node's
 * `code` (`ENOENT`, `EACCES`, …) on every runtime: Deno's errors carry it too.
 *
 * @module
 */

import { deno, nodeProcess } from "./runtime.ts";

type NodeFs = typeof import("node:fs");

/**
 * `node:fs`, without a static import (which Deno would load at start): for what only some
 * operators do (watching a certificate directory, writing webhook certificates).
 *
 * @example
 * ```ts
 * import { nodeFs } from "./files.ts";
 *
 * console.log(nodeFs().existsSync("/proc")); // true
 * ```
 */
export function nodeFs(): NodeFs {
  return nodeProcess().getBuiltinModule("node:fs") as NodeFs;
}

/**
 * The UTF-8 text of the file at `path`.
 *
 * @example
 * ```ts
 * import { readTextFile } from "./files.ts";
 *
 * console.log((await readTextFile("/proc/self/status")).length > 0); // true
 * ```
 */
export async function readTextFile(path: string): Promise<string> {
  const runtime = deno();
  return runtime
    ? await runtime.readTextFile(path)
    : await nodeFs().promises.readFile(path, "utf8");
}

/**
 * The UTF-8 text of the file at `path`, read synchronously.
 *
 * @example
 * ```ts
 * import { readTextFileSync } from "./files.ts";
 *
 * console.log(readTextFileSync("/proc/self/status").length > 0); // true
 * ```
 */
export function readTextFileSync(path: string): string {
  const runtime = deno();
  return runtime ? runtime.readTextFileSync(path) : nodeFs().readFileSync(path, "utf8");
}

/**
 * How many entries the directory at `path` holds.
 *
 * @example
 * ```ts
 * import { countDirEntriesSync } from "./files.ts";
 *
 * console.log(countDirEntriesSync("/proc/self/fd") > 0); // true
 * ```
 */
export function countDirEntriesSync(path: string): number {
  const runtime = deno();
  if (!runtime) return nodeFs().readdirSync(path).length;
  let count = 0;
  for (const _ of runtime.readDirSync(path)) count++;
  return count;
}
