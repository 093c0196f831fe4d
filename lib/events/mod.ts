/**
 * The event recorder: `events.k8s.io/v1` Events about objects, folded into series and rate
 * limited per object. A manager gives one per component with `mgr.getEventRecorderFor(name)`.
 *
 * @example
 * ```ts
 * import { loadConfig } from "@rudder/operator";
 * import { ConfigMap } from "@rudder/operator";
 * import { newClient } from "@rudder/operator";
 * import { EventRecorder } from "@rudder/operator/events";
 *
 * const client = newClient(await loadConfig());
 * const recorder = new EventRecorder(client, {
 *   reportingController: "example.com/operator",
 *   reportingInstance: "operator-0",
 * });
 * const cm = await client.get(ConfigMap, { namespace: "default", name: "a" });
 * recorder.event(cm, "Normal", "Synced", "Reconcile", "configuration applied");
 * ```
 *
 * @module
 */

export {
  type EventOptions,
  EventRecorder,
  type EventRecorderClient,
  type EventRecorderOptions,
  type EventType,
} from "./recorder.ts";
