/**
 * Rudder's contender in the benchmark suite, run on Deno and on Bun (from source, and as a Bun
 * single binary) by bench/suite.ts. The same modes as the Go peer
 * (peers/controller-runtime/main.go):
 *
 * - `sync`: `newCache` + `getInformer(ConfigMap)` + `waitForCacheSync`; time, RSS and heap. With
 *   `--hold` the cache keeps running after the sync line until SIGTERM (the relist measure).
 * - `reconcile`: a Manager and `newControllerManagedBy(mgr).for(ConfigMap)` whose reconciler
 *   merge-patches one annotation of every object once; time, CPU seconds, RSS after.
 * - `latency`: the same controller, read-only; event → reconcile latency of the harness's changes.
 * - `idle`: the scaffold's operator as deployed, doing nothing: LogTape configured as its main.ts
 *   does, metrics served securely (HTTPS with a self-signed certificate, scrapes authenticated and
 *   authorised by the API server) on a free port, `/readyz`, leader election on (a Lease in the
 *   namespace), and that controller; it loads the modules the scaffold's main.ts imports (the root
 *   and two subpaths). On SIGUSR2 it prints its live heap (`heapUsed`, no GC).
 *
 * Rate limits are off (a limiter that never waits); the cache drops managedFields (its default,
 * which the Go peer sets too). With RUDDER_BENCH_TRACING set, the OpenTelemetry SDK is
 * registered first and sends every span to RUDDER_BENCH_OTLP_ENDPOINT.
 *
 * @module
 */

import { exit, getEnv, nodeProcess, onSignal } from "../../lib/util/runtime.ts";
import { newCache } from "../../lib/cache/cache.ts";
import { loadConfig } from "../../lib/kube/config/load.ts";
import { ConfigMap } from "../../lib/api/mod.ts";
import { mergeFrom } from "../../lib/client/patch.ts";
import { Manager } from "../../lib/manager/manager.ts";
import { newControllerManagedBy } from "../../lib/controller/builder.ts";
import type { RateLimiter } from "../../lib/workqueue/rate_limiter.ts";
import type { Request } from "../../lib/reconcile/reconcile.ts";
import {
  type ContenderArgs,
  contenderArgs,
  cpuSeconds,
  memoryAfterGC,
  memoryUsage,
  quantile,
  report,
  residentMemory,
  SENT_ANNOTATION,
  SEQ_ANNOTATION,
  terminated,
  TOKEN_ANNOTATION,
  wallMs,
} from "./measure.ts";

const noRateLimit: RateLimiter<Request> = {
  when: () => 0,
  forget: () => {},
  numRequeues: () => 0,
};

/**
 * A sync of the same namespace whose cache is dropped before the measure's baseline, with
 * RUDDER_BENCH_WARM set (`rudder-deno:warm`): what the first sync of a process pays once (the
 * HTTP client and TLS set up, the code of the list path compiled) then falls in the baseline, and
 * what is left is the cost of each cached object. On Bun the dropped cache sometimes stays alive
 * (JavaScriptCore scans stacks conservatively), so the suite runs it on Deno only.
 */
async function warmUp(args: ContenderArgs, config: Awaited<ReturnType<typeof loadConfig>>) {
  const cache = newCache(config, { defaultNamespaces: { [args.namespace]: {} } });
  const controller = new AbortController();
  const running = cache.start(controller.signal);
  try {
    await cache.getInformer(ConfigMap);
    if (!(await cache.waitForCacheSync())) throw new Error("the warm-up cache did not sync");
  } finally {
    controller.abort();
    await running;
  }
}

async function runSync(args: ContenderArgs): Promise<void> {
  const config = await loadConfig({ kubeconfig: args.kubeconfig });
  if (process.env.RUDDER_BENCH_WARM) {
    await warmUp(args, config);
    // Off this frame's stack before the baseline: JSC scans stacks conservatively.
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const cache = newCache(config, {
    defaultNamespaces: { [args.namespace]: {} },
    informer: {
      streamingList: args.streamingList,
      pageSize: args.pageSize > 0 ? args.pageSize : undefined,
    },
  });
  const controller = new AbortController();
  let running: unknown;
  try {
    const baseline = await memoryAfterGC();
    const start = performance.now();
    running = cache.start(controller.signal);
    await cache.getInformer(ConfigMap);
    if (!(await cache.waitForCacheSync())) throw new Error("the cache did not sync");
    const syncMs = performance.now() - start;
    const objects = (await cache.list(ConfigMap, { namespace: args.namespace })).items.length;
    const synced = await memoryAfterGC();
    report({
      syncMs,
      rssBaselineBytes: baseline.rss,
      rssSyncedBytes: synced.rss,
      heapBaselineBytes: baseline.heap,
      heapSyncedBytes: synced.heap,
      objects,
    });
    if (args.hold) await terminated();
  } finally {
    controller.abort();
    await running;
  }
}

async function runController(args: ContenderArgs): Promise<void> {
  const idle = args.mode === "idle";
  if (idle) {
    // What the scaffold's main.ts imports (without --webhooks): the root and two subpaths.
    const [root] = await Promise.all([
      import("../../mod.ts"),
      import("../../lib/leaderelection/mod.ts"),
      import("../../lib/manager/mod.ts"),
    ]);
    await root.configureLogging({ categories: [["bench"]] });
    onSignal("SIGUSR2", () => report({ heapUsedBytes: memoryUsage().heapUsed }));
  }
  const config = await loadConfig({ kubeconfig: args.kubeconfig });
  const mgr = new Manager({
    config,
    metricsBindAddress: idle ? "127.0.0.1:0" : "0",
    healthProbeBindAddress: idle ? `127.0.0.1:${args.port}` : undefined,
    cache: { defaultNamespaces: { [args.namespace]: {} } },
    ...(idle
      ? {
        leaderElection: true,
        leaderElectionID: "bench-idle-leader",
        leaderElectionNamespace: args.namespace,
        leaderElectionReleaseOnCancel: true,
      }
      : {}),
  });
  const client = mgr.getClient();
  let calls = 0;
  let patched = 0;
  const latencies = new Map<number, number>();
  let readyResolve!: () => void;
  let doneResolve!: () => void;
  const ready = new Promise<void>((resolve) => readyResolve = resolve);
  const done = new Promise<void>((resolve) => doneResolve = resolve);

  newControllerManagedBy(mgr).for(ConfigMap).named("bench")
    .withOptions({ maxConcurrentReconciles: args.workers, rateLimiter: noRateLimit })
    .complete(async (request) => {
      if (++calls >= args.objects) readyResolve();
      const cm = await client.get(ConfigMap, request).catch(() => undefined);
      if (!cm) return {};
      const annotations = cm.metadata?.annotations ?? {};
      if (args.mode === "latency") {
        const now = wallMs();
        const sent = Number(annotations[SENT_ANNOTATION]);
        const seq = Number(annotations[SEQ_ANNOTATION]);
        if (!annotations[TOKEN_ANNOTATION]?.startsWith(args.token) || !Number.isFinite(sent)) {
          return {};
        }
        if (!latencies.has(seq)) {
          latencies.set(seq, now - sent);
          if (latencies.size >= args.count) doneResolve();
        }
        return {};
      }
      if (args.mode !== "reconcile" || annotations[TOKEN_ANNOTATION] === args.token) return {};
      const changed = {
        ...cm,
        metadata: {
          ...cm.metadata,
          annotations: { ...annotations, [TOKEN_ANNOTATION]: args.token },
        },
      };
      await client.patch(changed, mergeFrom(cm));
      if (++patched >= args.objects) doneResolve();
      return {};
    });

  const stop = new AbortController();
  const cpuStart = cpuSeconds();
  const start = performance.now();
  const running = mgr.start(stop.signal);
  const failed = running.then(() => {
    throw new Error("the manager stopped");
  });
  try {
    if (args.mode === "idle") {
      await running;
      return;
    }
    if (args.mode === "reconcile") {
      await Promise.race([done, failed]);
      const ms = performance.now() - start;
      const cpu = cpuSeconds() - cpuStart;
      const memory = residentMemory();
      report({
        ms,
        cpuSeconds: cpu,
        rssAfterBytes: memory.rss,
        rssAnonAfterBytes: memory.anon,
        objects: patched,
      });
      return;
    }
    await Promise.race([ready, failed]);
    report({ ready: true });
    // The churn measure: the live heap as it is, no collection forced, from the ready line on.
    const heapFrom = performance.now();
    const heapSampler = args.heapEveryMs > 0
      ? setInterval(
        () => report({ heapBytes: memoryUsage().heapUsed, atMs: performance.now() - heapFrom }),
        args.heapEveryMs,
      )
      : undefined;
    await Promise.race([done, failed]).finally(() => clearInterval(heapSampler));
    const values = [...latencies.values()].sort((a, b) => a - b);
    report({
      p50Ms: quantile(values, 0.5),
      p99Ms: quantile(values, 0.99),
      maxMs: values[values.length - 1],
      changes: values.length,
    });
  } finally {
    stop.abort();
    await running.catch(() => {});
  }
}

const args = contenderArgs();
// The tracing variants (rudder-*:otel): the scaffold's SDK set-up, sending to the harness.
const otlpEndpoint = getEnv("RUDDER_BENCH_OTLP_ENDPOINT");
if (getEnv("RUDDER_BENCH_TRACING") && otlpEndpoint) {
  nodeProcess().env.OTEL_EXPORTER_OTLP_ENDPOINT = otlpEndpoint;
  (await import("../../examples/example-operator/tracing.ts")).startTracing();
}
if (args.mode === "sync") await runSync(args);
else await runController(args);
// bench/profile.ts takes a CPU profile over the inspector before the process goes away.
const holdMs = getEnv("BENCH_HOLD_MS");
if (holdMs) await new Promise((resolve) => setTimeout(resolve, Number(holdMs)));
exit(0);
