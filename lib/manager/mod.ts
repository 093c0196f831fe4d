/**
 * The manager: it owns the client, the cache, the controllers and the servers, starts them in
 * controller-runtime's order (HTTP servers, webhooks, caches, other runnables, leader election,
 * leader runnables), stops them in reverse, and handles SIGTERM and SIGINT.
 *
 * @example
 * ```ts
 * import { configureLogging, Manager } from "@rudder/operator";
 *
 * await configureLogging({ dev: true });
 * const mgr = new Manager({ leaderElection: true, leaderElectionID: "example-leader" });
 * mgr.add({ start: (signal) => new Promise((resolve) => signal.addEventListener("abort", () => resolve())) });
 * // await mgr.start(); // until SIGTERM or SIGINT
 * ```
 *
 * @module
 */

export { Manager, type ManagerOptions, type MetricsServing } from "./manager.ts";
export type { Runnable } from "../util/runnable.ts";
export { exitProcess, processEnv } from "./environment.ts";
export {
  configureLogging,
  describeError,
  type Logger,
  type LoggingOptions,
} from "../util/logging.ts";
