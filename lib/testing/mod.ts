/**
 * Testing support for operators built with Rudder: {@linkcode Environment}, a real local
 * control plane (etcd + kube-apiserver) for integration tests, the counterpart of
 * controller-runtime's envtest; {@linkcode FakeClient}, an in-memory client for unit tests
 * whose behaviour is checked against the real API server by a shared contract suite; and
 * {@linkcode FakeClock}, which moves the work queue's, rate limiters' and leader election's
 * time only when a test says so.
 *
 * @example A unit test with the fake client
 * ```ts
 * import { ConfigMap } from "@rudder/operator";
 * import { FakeClient } from "@rudder/operator/testing";
 *
 * const client = new FakeClient({
 *   objects: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "default", name: "a" } }],
 * });
 * const cm = await client.get(ConfigMap, { namespace: "default", name: "a" });
 * console.log(cm.metadata?.resourceVersion); // set by the fake, as by the API server
 * ```
 *
 * @example A real control plane
 * ```ts ignore
 * import { Environment } from "@rudder/operator/testing";
 *
 * const env = new Environment({ crdDirectoryPaths: ["config/crd"] });
 * const config = await env.start();
 * console.log(config.server, env.kubeconfigPath);
 * await env.stop();
 * ```
 *
 * @module
 */

export {
  type ControlPlaneProcesses,
  type CRDSource,
  type CustomResourceDefinitionObject,
  Environment,
  type EnvironmentOptions,
  type ProcessFlags,
} from "./envtest.ts";
export { FakeClient, type FakeClientOptions, type SelectableFields } from "./fake_client/mod.ts";
export { FakeClock } from "./fake_clock.ts";
export type { Clock, TimerHandle } from "../util/clock.ts";
export { type WebhookInstallOptions, type WebhookServing } from "./webhook_install.ts";
