/**
 * The connection to the API server, under the client and the cache: where it is and who we are
 * ({@linkcode loadConfig}: kubeconfig files, merged `$KUBECONFIG`, exec plugins, rotating tokens,
 * in-cluster), how requests reach it ({@linkcode newTransport}: per-runtime TLS), the REST
 * client with typed errors and retries ({@linkcode RestClient}), and watch streams decoded from
 * newline-delimited JSON ({@linkcode decodeWatchStream}). The counterpart of controller-runtime's
 * `pkg/client/config` and client-go's `rest`.
 *
 * @example Watch ConfigMaps with the REST client
 * ```ts
 * import { type ConfigMap, loadConfig } from "@rudder/operator";
 * import { RestClient } from "@rudder/operator/kube";
 *
 * const rest = new RestClient(await loadConfig());
 * const stop = new AbortController();
 * setTimeout(() => stop.abort(), 10_000);
 * const path = "/api/v1/namespaces/default/configmaps";
 * for await (const event of rest.watch<ConfigMap>({ path, signal: stop.signal })) {
 *   console.log(event.type, event.object.metadata?.name);
 * }
 * ```
 *
 * @module
 */

export { VERSION } from "../version.ts";
export {
  type AuthProvider,
  type Credentials,
  type KubeConfig,
  type LoadConfigOptions,
} from "./config/types.ts";
export { KubeconfigError } from "./config/errors.ts";
export { FileTokenSource, type FileTokenSourceOptions } from "./config/auth.ts";
export {
  DEFAULT_EXEC_TIMEOUT_MS,
  type ExecClusterInfo,
  type ExecCredentialOptions,
  ExecCredentialProvider,
} from "./config/exec.ts";
export {
  DEFAULT_SERVICE_ACCOUNT_DIR,
  inClusterConfig,
  type InClusterOptions,
} from "./config/in_cluster.ts";
export { kubeconfigFromObject, loadConfig, loadKubeconfigFile } from "./config/load.ts";
export {
  ConnectionError,
  type ConnectionErrorOptions,
  type ConnectionFailure,
  InvalidHeaderError,
} from "./errors.ts";
export {
  defaultUserAgent,
  newTransport,
  type Transport,
  type TransportOptions,
} from "./transport.ts";
export {
  type QueryValue,
  type RequestInfo,
  RestClient,
  type RestClientOptions,
  type RestRequest,
} from "./rest.ts";
export {
  decodeWatchStream,
  type DecodeWatchStreamOptions,
  WatchDecodeError,
  type WatchEvent,
  type WatchEventType,
} from "./watch.ts";
