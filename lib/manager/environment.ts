/**
 * What an operator's `main.ts` needs of its process, the same on Deno, Bun and Node, without
 * `node:process`: on Deno that module (and the `process` global) starts its Node compatibility
 * layer, about 0.75 MiB of live heap and 2–4 MiB of resident memory in an idle operator that
 * otherwise never loads it.
 *
 * @module
 */

import { envObject, exit } from "../util/runtime.ts";

/**
 * The environment as an object, like `process.env`: Node's and Bun's `process.env` itself, and
 * on Deno a read-only view that reads each variable when asked (`Deno.env.get`), so an operator
 * allowed to read only some variables (`--allow-env=…`) can read those.
 *
 * @example
 * ```ts
 * import { processEnv } from "@rudder/operator/manager";
 *
 * const env = processEnv();
 * const metricsBindAddress = env.METRICS_BIND_ADDRESS ?? ":8443";
 * console.log(metricsBindAddress);
 * ```
 */
export function processEnv(): Record<string, string | undefined> {
  return envObject();
}

/**
 * Ends the process with `code` at once, like `process.exit`.
 *
 * @example
 * ```ts ignore
 * import { exitProcess } from "@rudder/operator/manager";
 *
 * exitProcess(1);
 * ```
 */
export function exitProcess(code: number): never {
  return exit(code);
}
