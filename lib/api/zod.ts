/**
 * The zod that Rudder's resource schemas are built with, re-exported so that an operator
 * declares its schemas with the very copy that `defineResource` introspects (and needs no zod
 * dependency of its own).
 *
 * @example
 * ```ts
 * import { z } from "@rudder/operator/zod";
 * import { defineResource } from "@rudder/operator";
 *
 * export const Widget = defineResource({
 *   group: "example.com",
 *   version: "v1",
 *   kind: "Widget",
 *   scope: "Namespaced",
 *   spec: z.object({ size: z.number().int().min(1).default(1) }),
 * });
 * ```
 *
 * @module
 */

export { z } from "zod";
