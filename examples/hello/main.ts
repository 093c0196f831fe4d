/**
 * The foundation at work: start a local control plane, connect to it through the kubeconfig
 * file it writes (as any other program would), then watch ConfigMaps while one is created,
 * changed and deleted. Run it with `deno task demo`.
 *
 * @module
 */

import { loadConfig, RestClient } from "../../mod.ts";
import { Environment } from "../../lib/testing/mod.ts";

interface ConfigMap {
  apiVersion: "v1";
  kind: "ConfigMap";
  metadata: { name: string; namespace?: string; resourceVersion?: string };
  data?: Record<string, string>;
}

const env = new Environment();
console.log("starting etcd and kube-apiserver …");
const started = Date.now();
await env.start();
try {
  console.log(
    `control plane ready in ${Date.now() - started} ms; kubeconfig: ${env.kubeconfigPath}`,
  );
  const rest = new RestClient(await loadConfig({ kubeconfig: env.kubeconfigPath }));
  const version = await rest.request<{ gitVersion: string }>({ path: "/version" });
  console.log(`API server ${version.gitVersion} at ${rest.config.server}`);

  const path = "/api/v1/namespaces/default/configmaps";
  const list = await rest.request<{ metadata: { resourceVersion: string } }>({ path });
  const watcher = (async () => {
    const query = {
      resourceVersion: list.metadata.resourceVersion,
      fieldSelector: "metadata.name=hello",
    };
    for await (const event of rest.watch<ConfigMap>({ path, query })) {
      if (event.type === "ERROR") throw new Error(event.object.message);
      console.log(
        `watch: ${event.type.padEnd(8)} ${event.object.metadata.name} ${
          JSON.stringify(event.object.data)
        }`,
      );
      if (event.type === "DELETED") return;
    }
  })();

  const body = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "hello" },
    data: { greeting: "hello" },
  };
  const created = await rest.request<ConfigMap>({ method: "POST", path, body });
  await rest.request({
    method: "PUT",
    path: `${path}/hello`,
    body: { ...created, data: { greeting: "hello, world" } },
  });
  await rest.request({ method: "DELETE", path: `${path}/hello` });
  await watcher;
  rest.close();
} finally {
  await env.stop();
  console.log("control plane stopped");
}
