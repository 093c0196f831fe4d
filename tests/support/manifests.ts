// What the `rudder manifests` unit tests share: discovered watches to generate from, and the
// check that a namespaced Role is bound to the operator's service account and nothing else.
import assert from "node:assert/strict";
import { parse } from "yaml";
import type { DiscoveredWatch } from "../../cli/discover.ts";

/** A namespaced `v1` kind a controller watches in the role given. */
export function watch(
  group: string,
  kind: string,
  plural: string,
  role: DiscoveredWatch["role"],
): DiscoveredWatch {
  return { group, version: "v1", kind, plural, scope: "Namespaced", role };
}

/** A parsed manifest, loosely typed: the tests read whatever fields they check. */
// deno-lint-ignore no-explicit-any
export type ParsedManifest = any;

/**
 * Asserts that `binding` is a RoleBinding in `namespace` of the Role `<operator>-<role>` to the
 * operator's service account, and that no ClusterRole among `files` mentions Leases (they are
 * the operator namespace's business only).
 */
export function assertNamespacedLeaseRole(
  binding: ParsedManifest,
  files: ReadonlyMap<string, string>,
  operator: string,
  namespace: string,
  role: string,
): void {
  assert.equal(binding.kind, "RoleBinding");
  assert.equal(binding.metadata.namespace, namespace);
  assert.deepEqual(binding.roleRef, {
    apiGroup: "rbac.authorization.k8s.io",
    kind: "Role",
    name: `${operator}-${role}`,
  });
  assert.deepEqual(binding.subjects, [{
    kind: "ServiceAccount",
    name: `${operator}-controller-manager`,
    namespace,
  }]);
  for (const [path, content] of files) {
    if (parse(content).kind === "ClusterRole") assert.doesNotMatch(content, /leases/, path);
  }
}
