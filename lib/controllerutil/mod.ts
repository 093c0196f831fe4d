/**
 * Helpers for reconcilers, as controller-runtime's `controllerutil`: create-or-update and
 * create-or-patch, owner and controller references, finalizers.
 *
 * @example Own a ConfigMap
 * ```ts
 * import { loadConfig } from "@rudder/operator";
 * import { ConfigMap, Deployment } from "@rudder/operator";
 * import { newClient } from "@rudder/operator";
 * import { createOrUpdate, setControllerReference } from "@rudder/operator";
 *
 * const client = newClient(await loadConfig());
 * const owner = await client.get(Deployment, { namespace: "default", name: "web" });
 * const cm: ConfigMap = {
 *   apiVersion: "v1",
 *   kind: "ConfigMap",
 *   metadata: { namespace: "default", name: "web-config" },
 * };
 * const { result } = await createOrUpdate(client, cm, (obj) => {
 *   obj.data = { mode: "on" };
 *   setControllerReference(owner, obj);
 * });
 * console.log(result); // "created", "updated" or "unchanged"
 * ```
 *
 * @module
 */

export {
  addFinalizer,
  AlreadyOwnedError,
  containsFinalizer,
  createOrPatch,
  type CreateOrPatchResult,
  createOrUpdate,
  type CreateOrUpdateResult,
  getControllerOf,
  hasControllerReference,
  hasOwnerReference,
  type MutateFn,
  type ObjectClient,
  type OperationResult,
  type OwnerReferenceOptions,
  removeFinalizer,
  removeOwnerReference,
  setControllerReference,
  setOwnerReference,
} from "./controllerutil.ts";
