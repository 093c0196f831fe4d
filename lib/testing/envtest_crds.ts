/**
 * CustomResourceDefinitions for a control plane: read from manifest files and directories
 * (YAML or JSON), taken from resource types with `crd()`, and installed on an API server with
 * a wait until each is established and every served version is in discovery.
 *
 * @module
 */

import { readdirSync, readFileSync, statSync } from "node:fs";
import { extname, join } from "node:path";
import { parseAllDocuments } from "yaml";
import type { KubeConfig } from "../kube/config/types.ts";
import { ApiError, isAlreadyExists, isNotFound } from "../kube/errors.ts";
import { RestClient } from "../kube/rest.ts";
import { sleep } from "../util/abort.ts";

/** A CustomResourceDefinition object as the API accepts it (apiextensions.k8s.io/v1). */
export type CustomResourceDefinitionObject = Record<string, unknown> & {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; [key: string]: unknown };
  spec?: Record<string, unknown>;
};

/** Anything that can give a CRD: a plain object, or a resource type with a `crd()` method. */
export type CRDSource = CustomResourceDefinitionObject | { crd(): CustomResourceDefinitionObject };

/** Milliseconds CRDs have to become established and served. */
export const DEFAULT_CRD_TIMEOUT_MS = 60_000;

/** The CRD object of a source: the object itself, or what `crd()` gives. */
export function crdObject(source: CRDSource): CustomResourceDefinitionObject {
  return "crd" in source && typeof source.crd === "function"
    ? source.crd()
    : source as CustomResourceDefinitionObject;
}

/** Reads CRDs from files and directories; errors name the file and the document. */
export function readCRDFiles(
  paths: string[],
  errorIfMissing: boolean,
): CustomResourceDefinitionObject[] {
  const crds: CustomResourceDefinitionObject[] = [];
  for (const path of paths) {
    let files: string[];
    try {
      files = statSync(path).isDirectory()
        ? readdirSync(path).sort().map((name) => join(path, name))
        : [path];
    } catch (err) {
      if (!errorIfMissing) continue;
      throw new Error(`CRD path ${path} cannot be read: ${(err as Error).message}`);
    }
    for (const file of files) {
      if (![".yaml", ".yml", ".json"].includes(extname(file))) continue;
      const docs = parseAllDocuments(readFileSync(file, "utf8"));
      const list = Array.isArray(docs) ? docs : [docs];
      list.forEach((doc, index) => {
        if (doc.errors.length > 0) {
          throw new Error(
            `CRD file ${file}, document ${index + 1}: invalid YAML: ${doc.errors[0].message}`,
          );
        }
        const value = doc.toJS();
        const objects = value?.kind?.endsWith("List") && Array.isArray(value.items)
          ? value.items
          : [value];
        for (const object of objects) {
          if (object?.kind !== "CustomResourceDefinition") continue;
          if (!object.metadata?.name || !object.spec) {
            throw new Error(
              `CRD file ${file}, document ${index + 1}: a CustomResourceDefinition needs ` +
                `metadata.name and spec`,
            );
          }
          crds.push(object);
        }
      });
    }
  }
  return crds;
}

/** Where the API server serves CustomResourceDefinitions. */
const CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/**
 * Creates (or updates) CRDs on the API server of `config` and waits until each is established
 * and every served version appears in discovery, at most `timeout` milliseconds (default
 * 60 000). {@linkcode Environment} uses it at start; `rudder dev` uses it on any cluster.
 *
 * @example
 * ```ts ignore
 * import { installCRDs } from "./envtest.ts";
 * import { loadConfig } from "@rudder/operator";
 * import { Example } from "./api/example.ts";
 *
 * await installCRDs(await loadConfig(), [Example]);
 * ```
 */
export async function installCRDs(
  config: KubeConfig,
  crds: CRDSource[],
  options: { timeout?: number } = {},
): Promise<void> {
  const objects = crds.map(crdObject);
  const rest = new RestClient(config);
  try {
    for (const crd of objects) {
      const name = crd.metadata?.name;
      if (!name) throw new Error("a CRD to install has no metadata.name");
      try {
        await rest.request({ method: "POST", path: CRD_PATH, body: crd });
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
        const existing = await rest.request<{ metadata: { resourceVersion: string } }>({
          path: `${CRD_PATH}/${name}`,
        });
        await rest.request({
          method: "PUT",
          path: `${CRD_PATH}/${name}`,
          body: {
            ...crd,
            metadata: { ...crd.metadata, resourceVersion: existing.metadata.resourceVersion },
          },
        });
      }
    }
    const deadline = Date.now() + (options.timeout ?? DEFAULT_CRD_TIMEOUT_MS);
    const pending = new Set(objects.map((crd) => crd.metadata!.name!));
    let lastProblem = "";
    while (pending.size > 0) {
      for (const name of [...pending]) {
        const problem = await crdProblem(rest, name);
        if (problem) lastProblem = `${name}: ${problem}`;
        else pending.delete(name);
      }
      if (pending.size === 0) break;
      if (Date.now() > deadline) {
        throw new Error(
          `CRDs not served in time: ${[...pending].join(", ")} (last seen: ${lastProblem})`,
        );
      }
      await sleep(100);
    }
  } finally {
    rest.close();
  }
}

/** Why a CRD is not usable yet, or `undefined` when it is established and served. */
async function crdProblem(rest: RestClient, name: string): Promise<string | undefined> {
  const crd = await rest.request<CRDStatus>({ path: `${CRD_PATH}/${name}` });
  const established = crd.status?.conditions?.find((c) => c.type === "Established");
  if (established?.status !== "True") {
    return `not established${established?.message ? ` (${established.message})` : ""}`;
  }
  for (const version of crd.spec.versions.filter((v) => v.served)) {
    try {
      const list = await rest.request<{ resources: { name: string }[] }>({
        path: `/apis/${crd.spec.group}/${version.name}`,
      });
      if (!list.resources.some((r) => r.name === crd.spec.names.plural)) {
        return `${crd.spec.group}/${version.name} does not list ${crd.spec.names.plural} yet`;
      }
    } catch (err) {
      if (isNotFound(err)) return `${crd.spec.group}/${version.name} is not served yet`;
      if (err instanceof ApiError) return err.message;
      throw err;
    }
  }
  return undefined;
}

/** What the wait for a CRD reads of it. */
interface CRDStatus {
  spec: {
    group: string;
    names: { plural: string };
    versions: { name: string; served: boolean }[];
  };
  status?: { conditions?: { type: string; status: string; message?: string }[] };
}
