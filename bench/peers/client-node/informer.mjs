// The @kubernetes/client-node contender of the benchmark suite (bench/suite.ts): syncs an
// informer over the ConfigMaps of one namespace and prints one JSON line with the time to synced
// and the resident memory and live heap before and after, each read after a forced GC. Its
// informer has no transform hook, so it keeps managedFields (the others drop them).
// With --hold the informer keeps running after that line until SIGTERM (the relist measure).
// Usage: node --expose-gc informer.mjs --kubeconfig <path> --namespace <ns> --objects <n> [--hold]
import process from "node:process";
import { parseArgs } from "node:util";
import { CoreV1Api, KubeConfig, makeInformer } from "@kubernetes/client-node";

const { values } = parseArgs({
  options: {
    kubeconfig: { type: "string" },
    namespace: { type: "string" },
    objects: { type: "string" },
    mode: { type: "string" }, // always "sync": the suite runs this peer for sync and relist only
    hold: { type: "boolean", default: false },
  },
});
if (!values.kubeconfig || !values.namespace) {
  throw new Error("--kubeconfig and --namespace are required");
}
if (typeof globalThis.gc !== "function") throw new Error("run with node --expose-gc");
const namespace = values.namespace;
// Give up after 10 minutes, so no informer outlives a harness that was killed outright.
setTimeout(() => {
  console.error("no result after 600 s: giving up");
  process.exit(1);
}, 600_000).unref();

// Three full collections 10 ms apart: one frees ArrayBuffers, their backing stores go later.
// Each is V8's memory-reducing one, as for Rudder on Deno (bench/contenders/measure.ts).
async function rssAfterGC() {
  for (let round = 0; round < 3; round++) {
    globalThis.gc({ type: "major", execution: "sync", flavor: "last-resort" });
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const usage = process.memoryUsage();
  return { rss: usage.rss, heap: usage.heapUsed };
}

const kc = new KubeConfig();
kc.loadFromFile(values.kubeconfig);
const api = kc.makeApiClient(CoreV1Api);
const informer = makeInformer(
  kc,
  `/api/v1/namespaces/${namespace}/configmaps`,
  () => api.listNamespacedConfigMap({ namespace }),
);
let failure;
informer.on("error", (err) => {
  failure ??= err;
});

const baseline = await rssAfterGC();
const start = performance.now();
// start() resolves once the list is stored and the watch request is sent; that is the
// informer's only "synced" signal.
await informer.start();
if (failure) throw failure;
const syncMs = performance.now() - start;
const objects = informer.list(namespace).length;
const synced = await rssAfterGC();
console.log(JSON.stringify({
  syncMs,
  rssBaselineBytes: baseline.rss,
  rssSyncedBytes: synced.rss,
  heapBaselineBytes: baseline.heap,
  heapSyncedBytes: synced.heap,
  objects,
}));
if (values.hold) {
  await new Promise((resolve) => {
    process.once("SIGTERM", resolve);
    process.once("SIGINT", resolve);
  });
}
await informer.stop();
process.exit(0);
