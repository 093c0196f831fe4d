/**
 * In-cluster configuration, like client-go's `rest.InClusterConfig`: a pod reaches its own
 * cluster's API server with its service account's token, CA and namespace, which the kubelet
 * mounts under {@linkcode DEFAULT_SERVICE_ACCOUNT_DIR}.
 *
 * @module
 */

import { joinPath } from "../../util/paths.ts";
import { getEnv } from "../../util/runtime.ts";
import { getLogger } from "@logtape/logtape";
import { FileTokenSource } from "./auth.ts";
import { describeFsError, isNotFoundError, KubeconfigError } from "./errors.ts";
import type { KubeConfig } from "./types.ts";
import { readTextFile } from "../../util/files.ts";

const logger = getLogger(["rudder", "kube", "config"]);

/** Where in-cluster pods find their service account (the kubelet mounts it there). */
export const DEFAULT_SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/** Options of {@linkcode inClusterConfig}. */
export interface InClusterOptions {
  /** Directory holding `token`, `ca.crt` and `namespace`; default {@linkcode DEFAULT_SERVICE_ACCOUNT_DIR}. */
  serviceAccountDir?: string;
  /** Environment variables to read `KUBERNETES_SERVICE_*` from; default `process.env`. */
  env?: Record<string, string | undefined>;
  /** Clock of the token cache, in milliseconds since the epoch; default `Date.now`. */
  now?: () => number;
}

/**
 * The configuration of a pod talking to its own cluster with its service account, like
 * client-go's `rest.InClusterConfig`: the server from `KUBERNETES_SERVICE_HOST` and
 * `KUBERNETES_SERVICE_PORT`, the CA from `ca.crt`, the namespace from `namespace` and a token
 * from `token` that is re-read at least every minute, because the kubelet rotates it.
 *
 * @example
 * ```ts
 * import { inClusterConfig } from "@rudder/operator/kube";
 *
 * const config = await inClusterConfig();
 * console.log(config.server, config.namespace); // https://10.96.0.1:443 my-namespace
 * ```
 */
export async function inClusterConfig(options: InClusterOptions = {}): Promise<KubeConfig> {
  const dir = options.serviceAccountDir ?? DEFAULT_SERVICE_ACCOUNT_DIR;
  const host = options.env
    ? options.env.KUBERNETES_SERVICE_HOST
    : getEnv("KUBERNETES_SERVICE_HOST");
  const port = options.env
    ? options.env.KUBERNETES_SERVICE_PORT
    : getEnv("KUBERNETES_SERVICE_PORT");
  if (!host || !port) {
    throw new KubeconfigError(
      "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set",
      { file: dir },
    );
  }
  const tokenSource = new FileTokenSource({ path: joinPath(dir, "token"), now: options.now });
  try {
    await tokenSource.token();
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new KubeconfigError(`in-cluster config: service account ${reason}`, {
      file: tokenSource.path,
      cause: err,
    });
  }
  const caFile = joinPath(dir, "ca.crt");
  let caData: string | undefined;
  try {
    caData = await readTextFile(caFile);
  } catch (err) {
    if (!isNotFoundError(err)) {
      throw new KubeconfigError(
        `in-cluster config: cannot read ${caFile} (${describeFsError(err)})`,
        { file: caFile, cause: err },
      );
    }
    // client-go goes on without it too; the server may have a publicly trusted certificate.
    logger.warn("In-cluster CA file {path} not found; using the runtime's root certificates", {
      path: caFile,
    });
  }
  const namespaceFile = joinPath(dir, "namespace");
  let namespace = "default";
  try {
    namespace = (await readTextFile(namespaceFile)).trim() || "default";
  } catch (err) {
    if (!isNotFoundError(err)) {
      throw new KubeconfigError(
        `in-cluster config: cannot read ${namespaceFile} (${describeFsError(err)})`,
        { file: namespaceFile, cause: err },
      );
    }
  }
  const bracketed = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  const config: KubeConfig = {
    server: `https://${bracketed}:${port}`,
    namespace,
    auth: tokenSource,
    source: "in-cluster",
  };
  if (caData !== undefined) config.caData = caData;
  return config;
}
