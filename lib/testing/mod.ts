/**
 * Testing support for operators built with Rudder: {@linkcode Environment}, a real local
 * control plane (etcd + kube-apiserver) for integration tests, the counterpart of
 * controller-runtime's envtest, and {@linkcode FakeClient}, an in-memory client for unit tests
 * whose behaviour is checked against the real API server by a shared contract suite.
 *
 * @example
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
  installCRDs,
  type ProcessFlags,
} from "./envtest.ts";
export {
  type ControlPlaneBinaries,
  defaultAssetsDirectory,
  ENVTEST_ETCD_VERSION,
  ENVTEST_KUBERNETES_VERSION,
  findControlPlaneBinaries,
} from "./assets.ts";
export { type WebhookInstallOptions, type WebhookServing } from "./webhook_install.ts";
export {
  FakeClient,
  type FakeClientInterceptors,
  type FakeClientOptions,
  type SelectableFields,
} from "./fake_client.ts";
export {
  type CertificateAuthority,
  type CertificatePair,
  createCertificateAuthority,
  generateSigningKeyPair,
  type SigningKeyPair,
} from "./certs.ts";
