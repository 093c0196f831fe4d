/**
 * What Rudder does today, end to end: start a local control plane, connect through the
 * kubeconfig file it writes (as any other program would), cache ConfigMaps with an informer
 * that reports every change, and create, patch and delete one with the typed client while the
 * cache follows. Run it with `deno task demo`.
 *
 * @module
 */

import { ConfigMap, loadConfig, mergeFrom, newCache, newClient } from "../../mod.ts";
import { Environment } from "../../lib/testing/mod.ts";

const env = new Environment();
console.log("starting etcd and kube-apiserver …");
const started = Date.now();
await env.start();
const stop = new AbortController();
try {
  console.log(
    `control plane ready in ${Date.now() - started} ms; kubeconfig: ${env.kubeconfigPath}`,
  );
  const config = await loadConfig({ kubeconfig: env.kubeconfigPath });
  const client = newClient(config);
  const cache = newCache(config, { defaultNamespaces: { default: {} } });
  const running = cache.start(stop.signal);

  const deleted = Promise.withResolvers<void>();
  const informer = await cache.getInformer(ConfigMap);
  informer.addEventHandler({
    onAdd: (cm) => console.log(`informer: added   ${cm.metadata?.name} ${JSON.stringify(cm.data)}`),
    onUpdate: (_, cm) =>
      console.log(`informer: updated ${cm.metadata?.name} ${JSON.stringify(cm.data)}`),
    onDelete: (cm) => {
      console.log(`informer: deleted ${cm.metadata?.name}`);
      deleted.resolve();
    },
  });
  await cache.waitForCacheSync();

  const hello = await client.create({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "hello", namespace: "default" },
    data: { greeting: "hello" },
  });
  const changed = { ...hello, data: { greeting: "hello, world" } };
  await client.patch(changed, mergeFrom(hello));
  const cached = await cache.get(ConfigMap, { namespace: "default", name: "hello" })
    .catch(() => undefined);
  console.log(
    `cache: ${cached ? "holds" : "does not hold yet"} hello (frozen: ${
      Object.isFrozen(cached ?? {})
    })`,
  );
  await client.delete(changed);
  await deleted.promise;
  stop.abort();
  await running;
} finally {
  stop.abort();
  await env.stop();
  console.log("control plane stopped");
}
