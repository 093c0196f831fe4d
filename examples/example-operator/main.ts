/**
 * The example operator's entry point: a Manager with leader election, metrics and probes.
 * Outside a cluster, set LEADER_ELECTION_NAMESPACE (leader election needs a namespace for its Lease),
 * and METRICS_BIND_ADDRESS or HEALTH_PROBE_BIND_ADDRESS to move the servers. ENABLE_WEBHOOKS=true
 * serves the Example webhooks on :9443 (the Deployment `rudder manifests` writes sets it), with
 * the certificate from /tmp/k8s-webhook-server/serving-certs. OTEL_EXPORTER_OTLP_ENDPOINT sends
 * OpenTelemetry traces there (tracing.ts).
 *
 * Run: MALLOC_MMAP_THRESHOLD_=131072 deno run -A --v8-flags=--max-semi-space-size=2
 * examples/example-operator/main.ts, or MIMALLOC_PURGE_DELAY=0 BUN_JSC_useFTLJIT=0 bun
 * examples/example-operator/main.ts (with a kubeconfig; the variables and the V8 flag are what
 * `rudder build` and `rudder dev` use), or build it with `rudder build`.
 *
 * @module
 */

import process from "node:process";
import { configureLogging, Manager, type ManagerOptions } from "../../mod.ts";
import { LeaderElectionLostError } from "../../lib/leaderelection/mod.ts";
import { describeError } from "../../lib/manager/mod.ts";
import { setupExampleController } from "./controllers/example_controller.ts";
import { webhookCertificatesFromEnv } from "../../lib/webhook/mod.ts";
import { setupExampleWebhook } from "./webhooks/example_webhook.ts";

/**
 * Registers the operator's controllers, webhooks (unless `webhooks: false`) and checks with a
 * manager (`rudder manifests` calls it).
 */
export function setup(mgr: Manager, options: { webhooks?: boolean } = {}): void {
  mgr.addHealthzCheck("ping", () => {});
  setupExampleController(mgr);
  if (options.webhooks ?? true) setupExampleWebhook(mgr);
}

/**
 * The example's manager, with its controller registered, and its webhooks when
 * `webhooks` (default: `ENABLE_WEBHOOKS=true` in the environment).
 */
export function createManager(
  overrides: Partial<ManagerOptions> = {},
  options: { webhooks?: boolean } = {},
): Manager {
  const webhooks = options.webhooks ?? process.env.ENABLE_WEBHOOKS === "true";
  const mgr = new Manager({
    // Without cert-manager, the operator provisions its webhook certificate (WEBHOOK_CERT_*).
    ...(webhooks ? { webhookCertificates: webhookCertificatesFromEnv(process.env) } : {}),
    metricsBindAddress: process.env.METRICS_BIND_ADDRESS ?? "127.0.0.1:8080",
    healthProbeBindAddress: process.env.HEALTH_PROBE_BIND_ADDRESS ?? ":8081",
    leaderElection: true,
    leaderElectionID: "example-leader",
    leaderElectionNamespace: process.env.LEADER_ELECTION_NAMESPACE,
    ...overrides,
  });
  setup(mgr, { webhooks });
  return mgr;
}

if (import.meta.main) {
  // The OpenTelemetry SDK is loaded only when there is somewhere to send spans (tracing.ts).
  const otlp = process.env.OTEL_EXPORTER_OTLP_ENDPOINT ||
    process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const stopTracing = otlp ? (await import("./tracing.ts")).startTracing() : undefined;
  try {
    await configureLogging({
      dev: process.env.LOG_FORMAT === "dev",
      categories: [["example-operator"]],
    });
    await createManager().start(); // resolves after a graceful stop (SIGTERM/SIGINT)
    await stopTracing?.();
  } catch (err) {
    // One line that names the problem: no stack trace, no page of bundled source.
    console.error(
      err instanceof LeaderElectionLostError
        ? `leadership lost: ${err.message}`
        : describeError(err),
    );
    process.exit(1);
  }
}
