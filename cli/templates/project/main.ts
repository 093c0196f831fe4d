/**
 * The memcached-operator operator's entry point. In a cluster the Deployment of `rudder manifests`
 * sets its environment: LEADER_ELECTION_NAMESPACE (the pod's namespace), METRICS_BIND_ADDRESS
 * and HEALTH_PROBE_BIND_ADDRESS. Metrics are served over HTTPS to scrapers the API server
 * authenticates and authorises (bind the `memcached-operator-metrics-reader` ClusterRole);
 * METRICS_SERVING=insecure-http serves plain HTTP to anyone instead, for local development.
 * Outside a cluster it uses your kubeconfig and needs LEADER_ELECTION_NAMESPACE set (`rudder dev`
 * does all of this for you). LOG_FORMAT=dev prints readable lines instead of JSON.
 * OTEL_EXPORTER_OTLP_ENDPOINT sends OpenTelemetry traces there (tracing.ts).
 *
 * @module
 */

import { configureLogging, Manager, type ManagerOptions } from "@rudder/operator";
import { LeaderElectionLostError } from "@rudder/operator/leaderelection";
// The environment and exit without `node:process`, which on Deno would start its Node layer.
import { describeError, exitProcess, processEnv } from "@rudder/operator/manager";
import { webhookCertificatesFromEnv } from "@rudder/operator/webhook";
import { setupMemcachedController } from "./controllers/memcached_controller.ts";
import { setupMemcachedWebhook } from "./webhooks/memcached_webhook.ts";
// +rudder:scaffold:imports

/**
 * +rudder:template:if webhooks
 * Registers this operator's controllers, webhooks and checks with `mgr`. `rudder manifests` calls it
 * +rudder:template:end
 * +rudder:template:if !webhooks
 * Registers this operator's controllers and checks with `mgr`. `rudder manifests` calls it
 * +rudder:template:end
 * with a manager that never starts, to learn what the controllers watch (their RBAC).
 */
// +rudder:template:without webhooks: export function setup(mgr: Manager): void {
export function setup(mgr: Manager, options: { webhooks?: boolean } = {}): void {
  mgr.addHealthzCheck("ping", () => {});
  setupMemcachedController(mgr);
  // +rudder:scaffold:controllers
  // +rudder:template:if webhooks
  if (options.webhooks ?? true) setupMemcachedWebhook(mgr);
  // +rudder:template:end
  // +rudder:scaffold:webhooks
}

/** The operator's manager, configured from the environment, with its controllers. */
export function createManager(overrides: Partial<ManagerOptions> = {}): Manager {
  const env = processEnv();
  // +rudder:template:if webhooks
  const webhooks = env.ENABLE_WEBHOOKS === "true";
  // +rudder:template:end
  const mgr = new Manager({
    // +rudder:template:if webhooks
    // Without cert-manager, the operator provisions its webhook certificate (WEBHOOK_CERT_*).
    ...(webhooks ? { webhookCertificates: webhookCertificatesFromEnv(env) } : {}),
    // +rudder:template:end
    metricsBindAddress: env.METRICS_BIND_ADDRESS ?? ":8443",
    // Plain HTTP only when asked for in so many words; anything else serves HTTPS.
    metricsServing: env.METRICS_SERVING === "insecure-http" ? "insecure-http" : "secure",
    healthProbeBindAddress: env.HEALTH_PROBE_BIND_ADDRESS ?? ":8081",
    leaderElection: true,
    leaderElectionID: "memcached-operator-leader",
    leaderElectionNamespace: env.LEADER_ELECTION_NAMESPACE,
    // The process exits right after a graceful stop, so the next replica may lead at once.
    leaderElectionReleaseOnCancel: true,
    ...overrides,
  });
  // +rudder:template:without webhooks: setup(mgr);
  setup(mgr, { webhooks });
  return mgr;
}

if (import.meta.main) {
  // The OpenTelemetry SDK is loaded only when there is somewhere to send spans (tracing.ts).
  const env = processEnv();
  const otlp = env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const stopTracing = otlp ? (await import("./tracing.ts")).startTracing() : undefined;
  try {
    await configureLogging({
      dev: env.LOG_FORMAT === "dev",
      categories: [["memcached-operator"]],
    });
    await createManager().start(); // until SIGTERM or SIGINT, then a graceful stop
    await stopTracing?.();
  } catch (err) {
    // One line that names the problem: no stack trace, no page of bundled source.
    console.error(
      err instanceof LeaderElectionLostError
        ? `leadership lost: ${err.message}`
        : describeError(err),
    );
    exitProcess(1);
  }
}
