/**
 * Sources: where a controller's events come from, as controller-runtime's `pkg/source`: a kind
 * in the cache ({@linkcode kindSource}) or events sent from outside the cluster
 * ({@linkcode channelSource}).
 *
 * @example Events from outside the cluster
 * ```ts
 * import { ConfigMap } from "@rudder/operator";
 * import { enqueueRequestForObject } from "@rudder/operator/handler";
 * import { channelSource } from "@rudder/operator/source";
 *
 * async function* ticks(): AsyncGenerator<ConfigMap> {
 *   yield { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "default", name: "a" } };
 * }
 * const source = channelSource<ConfigMap>(ticks(), enqueueRequestForObject());
 * console.log(typeof source.start);
 * ```
 *
 * @module
 */

export { channelSource, kindSource, type KindSourceOptions, type Source } from "./source.ts";
