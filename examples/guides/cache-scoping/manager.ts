/**
 * Cache scoping for large clusters (docs/guides/cache-scoping.md): a manager whose cache holds
 * only what the operator reads — two namespaces, ConfigMaps with one label and without their
 * data, and Secrets as metadata only.
 *
 * @module
 */

import { ConfigMap, Manager, Secret } from "@rudder/operator";
import type { KubeConfig } from "@rudder/operator/kube";

/** The namespaces the operator works in. */
export const NAMESPACES = ["team-a", "team-b"];

/** A manager with a scoped cache. */
export function createScopedManager(config: KubeConfig): Manager {
  return new Manager({
    config,
    metricsBindAddress: "0",
    healthProbeBindAddress: "0",
    cache: {
      // Watch these namespaces only, not the whole cluster.
      defaultNamespaces: Object.fromEntries(NAMESPACES.map((ns) => [ns, {}])),
      // Every kind's default transform already drops metadata.managedFields.
      byObject: [
        {
          // Only the ConfigMaps this operator manages, and without their data in memory.
          type: ConfigMap,
          labelSelector: { matchLabels: { "app.kubernetes.io/managed-by": "guide-operator" } },
          // A transform replaces the default: drop managedFields here too.
          transform: (configMap) => ({
            ...configMap,
            metadata: { ...configMap.metadata, managedFields: undefined },
            data: undefined,
          }),
        },
        // Secrets as metadata only: names, labels and owners, never the values.
        { type: Secret, metadataOnly: true },
      ],
    },
  });
}
