/**
 * Where the control-plane binaries (`etcd`, `kube-apiserver`) live. The layout follows
 * setup-envtest (`<root>/k8s/<version>-<os>-<arch>/`) and `KUBEBUILDER_ASSETS` wins, as in
 * controller-runtime's envtest.
 *
 * @module
 */

import { accessSync, constants } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import process from "node:process";

/** The Kubernetes version that `deno task envtest` builds. */
export const ENVTEST_KUBERNETES_VERSION = "1.36.3";

/** The etcd version that `deno task envtest` builds. */
export const ENVTEST_ETCD_VERSION = "3.6.16";

/**
 * How long building the binaries from source takes the first time (Go downloads the modules and
 * compiles kube-apiserver), measured on a 2-core machine; later runs reuse the cached build.
 */
export const ENVTEST_FIRST_BUILD = "the first build usually takes about 3 min on 2 cores";

/** The command that builds the binaries, named in every "not found" error. */
export const ENVTEST_BUILD_COMMAND = "deno task envtest";

function goOs(): string {
  return process.platform === "win32" ? "windows" : process.platform;
}

function goArch(): string {
  switch (process.arch) {
    case "x64":
      return "amd64";
    case "ia32":
      return "386";
    default:
      return process.arch;
  }
}

/** `${XDG_CACHE_HOME:-~/.cache}/rudder/envtest`: the root of the binary cache. */
export function envtestCacheRoot(env: Record<string, string | undefined> = process.env): string {
  const cacheHome = env.XDG_CACHE_HOME || join(homedir(), ".cache");
  return join(cacheHome, "rudder", "envtest");
}

/** The directory `deno task envtest` builds into, e.g. `~/.cache/rudder/envtest/k8s/1.36.3-linux-amd64`. */
export function defaultAssetsDirectory(
  env: Record<string, string | undefined> = process.env,
): string {
  return join(
    envtestCacheRoot(env),
    "k8s",
    `${ENVTEST_KUBERNETES_VERSION}-${goOs()}-${goArch()}`,
  );
}

/** Paths of the two binaries a control plane needs. */
export interface ControlPlaneBinaries {
  /** The directory that holds both. */
  directory: string;
  /** Path of `etcd`. */
  etcd: string;
  /** Path of `kube-apiserver`. */
  kubeAPIServer: string;
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Finds `etcd` and `kube-apiserver`: in `directory` when given, else in `$KUBEBUILDER_ASSETS`,
 * else in {@linkcode defaultAssetsDirectory}. Throws an error that names every place looked
 * at and the command that builds the binaries.
 */
export function findControlPlaneBinaries(
  directory?: string,
  env: Record<string, string | undefined> = process.env,
): ControlPlaneBinaries {
  const [dir, origin] = directory
    ? [directory, "binaryAssetsDirectory"]
    : env.KUBEBUILDER_ASSETS
    ? [env.KUBEBUILDER_ASSETS, "KUBEBUILDER_ASSETS"]
    : [defaultAssetsDirectory(env), "the default cache"];
  const etcd = join(dir, "etcd");
  const kubeAPIServer = join(dir, "kube-apiserver");
  const missing = [etcd, kubeAPIServer].filter((path) => !isExecutable(path));
  if (missing.length > 0) {
    const hint = origin === "the default cache"
      ? `run \`${ENVTEST_BUILD_COMMAND}\` to build them (Go needed; ${ENVTEST_FIRST_BUILD})`
      : `point ${origin} at a directory that holds etcd and kube-apiserver, ` +
        `or unset it and run \`${ENVTEST_BUILD_COMMAND}\``;
    throw new Error(
      `control-plane binaries not found: looked in ${dir} (${origin}) for ` +
        `${missing.map((p) => p.slice(dir.length + 1)).join(" and ")}; ${hint}`,
    );
  }
  return { directory: dir, etcd, kubeAPIServer };
}
