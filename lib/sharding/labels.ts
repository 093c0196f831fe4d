/**
 * The labels sharding writes, and how an object's ring key is made. A sharded object carries
 * `shard.rudder.dev/<ring>: <shard>`; while it moves, `drain.rudder.dev/<ring>: "true"`; each
 * shard Lease carries `sharding.rudder.dev/ring: <ring>`.
 *
 * @module
 */

import type { ObjectMeta } from "../api/generated/meta_v1.ts";
import type { DeepReadonly } from "../api/readonly.ts";
import type { KubeObject, ResourceType } from "../api/resource.ts";
import { parseApiVersion } from "../api/resource.ts";

/** The label every shard Lease of a ring carries, with the ring's name as its value. */
export const RING_LABEL = "sharding.rudder.dev/ring";

const RING_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const MAX_RING_NAME = 40;

/**
 * Checks a ring name: a DNS label of at most 40 characters (it becomes part of label keys and
 * of the sharder's Lease name).
 *
 * @example
 * ```ts
 * import { validateRingName } from "@rudder/operator/sharding";
 *
 * validateRingName("example"); // fine
 * // validateRingName("Example_1") throws
 * ```
 */
export function validateRingName(ring: string): void {
  if (!RING_NAME.test(ring) || ring.length > MAX_RING_NAME) {
    throw new Error(
      `sharding ring ${JSON.stringify(ring)} must be a DNS label (lower-case letters, digits and ` +
        `'-') of at most ${MAX_RING_NAME} characters`,
    );
  }
}

/**
 * The label that assigns an object of `ring` to a shard: `shard.rudder.dev/<ring>`.
 *
 * @example
 * ```ts
 * import { shardLabel } from "@rudder/operator/sharding";
 *
 * console.log(shardLabel("example")); // shard.rudder.dev/example
 * ```
 */
export function shardLabel(ring: string): string {
  return `shard.rudder.dev/${ring}`;
}

/**
 * The label that marks an object of `ring` as moving away from its shard:
 * `drain.rudder.dev/<ring>`, value `"true"`.
 *
 * @example
 * ```ts
 * import { drainLabel } from "@rudder/operator/sharding";
 *
 * console.log(drainLabel("example")); // drain.rudder.dev/example
 * ```
 */
export function drainLabel(ring: string): string {
  return `drain.rudder.dev/${ring}`;
}

/** The name of the Lease that elects a ring's sharder: `<ring>-sharder`. */
export function sharderLeaseName(ring: string): string {
  return `${ring}-sharder`;
}

/** What a ring key is made of: an object's group, kind, namespace and name. */
export interface ObjectReferenceForRing {
  /** API group ("" for the core group). */
  group: string;
  /** Kind. */
  kind: string;
  /** Namespace ("" when cluster-scoped). */
  namespace: string;
  /** Name. */
  name: string;
}

/**
 * The key an object is hashed by: `<group>/<kind>/<namespace>/<name>`.
 *
 * @example
 * ```ts
 * import { ringKey } from "@rudder/operator/sharding";
 *
 * console.log(ringKey({ group: "example.com", kind: "Example", namespace: "ns", name: "a" }));
 * // example.com/Example/ns/a
 * ```
 */
export function ringKey(ref: ObjectReferenceForRing): string {
  return `${ref.group}/${ref.kind}/${ref.namespace}/${ref.name}`;
}

/**
 * The controlling owner of `obj` among `ownerKinds` (its ownerReference with `controller:
 * true`), as the key parts of the owner; `undefined` when it has none of those kinds.
 */
export function controllingOwner(
  obj: { readonly metadata?: DeepReadonly<ObjectMeta> },
  ownerKinds?: readonly ResourceType<KubeObject>[],
): ObjectReferenceForRing | undefined {
  for (const ref of obj.metadata?.ownerReferences ?? []) {
    if (!ref.controller) continue;
    const { group } = parseApiVersion(ref.apiVersion);
    if (ownerKinds && !ownerKinds.some((t) => t.group === group && t.kind === ref.kind)) continue;
    return { group, kind: ref.kind, namespace: obj.metadata?.namespace ?? "", name: ref.name };
  }
  return undefined;
}

/**
 * The ring key of an object: its controlling owner's key when it has one (among `ownerKinds`,
 * when given), so that a parent and its children land on the same shard; else its own.
 *
 * @example
 * ```ts
 * import { objectRingKey } from "@rudder/operator/sharding";
 *
 * const child = {
 *   apiVersion: "v1",
 *   kind: "ConfigMap",
 *   metadata: {
 *     namespace: "ns",
 *     name: "a-config",
 *     ownerReferences: [
 *       { apiVersion: "example.com/v1", kind: "Example", name: "a", uid: "1", controller: true },
 *     ],
 *   },
 * };
 * console.log(objectRingKey(child)); // example.com/Example/ns/a
 * ```
 */
export function objectRingKey(
  obj: {
    readonly apiVersion?: string;
    readonly kind?: string;
    readonly metadata?: DeepReadonly<ObjectMeta>;
  },
  ownerKinds?: readonly ResourceType<KubeObject>[],
): string {
  const owner = controllingOwner(obj, ownerKinds);
  if (owner) return ringKey(owner);
  const { group } = parseApiVersion(obj.apiVersion ?? "");
  return ringKey({
    group,
    kind: obj.kind ?? "",
    namespace: obj.metadata?.namespace ?? "",
    name: obj.metadata?.name ?? "",
  });
}
