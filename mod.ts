/**
 * Rudder: a controller-runtime for Deno and Bun. Write Kubernetes operators in TypeScript and
 * ship them as one self-contained executable.
 *
 * This entry point holds the Kubernetes connection layer: where the API server is
 * ({@linkcode loadConfig}), how requests reach it ({@linkcode createTransport}), the REST client
 * with typed errors ({@linkcode RestClient}, {@linkcode ApiError}) and watch streams
 * ({@linkcode decodeWatchStream}). The local control plane for tests is in
 * `@rudder/operator/testing`.
 *
 * @example Connect and read the server's version
 * ```ts
 * import { loadConfig, RestClient } from "@rudder/operator";
 *
 * const rest = new RestClient(await loadConfig());
 * const version = await rest.request<{ gitVersion: string }>({ path: "/version" });
 * console.log(`connected to Kubernetes ${version.gitVersion}`);
 * rest.close();
 * ```
 *
 * @module
 */

export { VERSION } from "./lib/version.ts";

export {
  type AuthProvider,
  type Credentials,
  DEFAULT_SERVICE_ACCOUNT_DIR,
  type ExecClusterInfo,
  type ExecCredentialOptions,
  ExecCredentialProvider,
  FileTokenSource,
  type FileTokenSourceOptions,
  inClusterConfig,
  type KubeConfig,
  KubeconfigError,
  kubeconfigFromObject,
  loadConfig,
  type LoadConfigOptions,
  loadKubeconfigFile,
} from "./lib/kube/config.ts";

export {
  ApiError,
  type ApiErrorOptions,
  ignoreAlreadyExists,
  ignoreNotFound,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isGone,
  isInvalid,
  isNotFound,
  isTooManyRequests,
  isUnauthorized,
  type Status,
  type StatusCause,
  type StatusDetails,
  type StatusReason,
} from "./lib/kube/errors.ts";

export {
  createTransport,
  defaultUserAgent,
  type Transport,
  type TransportOptions,
} from "./lib/kube/transport.ts";

export {
  type QueryValue,
  RestClient,
  type RestClientOptions,
  type RestRequest,
} from "./lib/kube/rest.ts";

export {
  decodeWatchStream,
  type DecodeWatchStreamOptions,
  encodeWatchEvent,
  WatchDecodeError,
  type WatchEvent,
  type WatchEventType,
} from "./lib/kube/watch.ts";
