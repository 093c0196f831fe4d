/**
 * Health checks for a manager's `/healthz` and `/readyz`, as controller-runtime's `pkg/healthz`.
 *
 * @example
 * ```ts
 * import { Manager } from "@rudder/operator";
 * import * as healthz from "@rudder/operator/healthz";
 *
 * const mgr = new Manager({ healthProbeBindAddress: ":8081" });
 * mgr.addHealthzCheck("ping", healthz.ping);
 * mgr.addReadyzCheck("upstream", async () => {
 *   const response = await fetch("http://127.0.0.1:9000/ready");
 *   if (!response.ok) throw new Error(`upstream answered ${response.status}`);
 * });
 * ```
 *
 * @module
 */

export { type Checker, ping } from "./healthz.ts";
