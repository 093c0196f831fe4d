/**
 * The website-operator operator's entry point. In a cluster the Deployment of `rudder manifests`
 * sets its environment: LEADER_ELECTION_NAMESPACE (the pod's namespace), METRICS_BIND_ADDRESS
 * and HEALTH_PROBE_BIND_ADDRESS. Metrics are served over HTTPS to scrapers the API server
 * authenticates and authorises (bind the `website-operator-metrics-reader` ClusterRole);
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
import { setupWebsiteController } from "./controllers/website_controller.ts";
import { setupWebsiteWebhook } from "./webhooks/website_webhook.ts";
// +rudder:scaffold:imports

/**
 * Registers this operator's controllers, webhooks and checks with `mgr`. `rudder manifests` calls it
 * with a manager that never starts, to learn what the controllers watch (their RBAC).
 */
export function setup(mgr: Manager, options: { webhooks?: boolean } = {}): void {
  mgr.addHealthzCheck("ping", () => {});
  setupWebsiteController(mgr);
  // +rudder:scaffold:controllers
  if (options.webhooks ?? true) setupWebsiteWebhook(mgr);
  // +rudder:scaffold:webhooks
}

/** The operator's manager, configured from the environment, with its controllers. */
export function createManager(overrides: Partial<ManagerOptions> = {}): Manager {
  const env = processEnv();
  const webhooks = env.ENABLE_WEBHOOKS === "true";
  const mgr = new Manager({
    // Without cert-manager, the operator provisions its webhook certificate (WEBHOOK_CERT_*).
    ...(webhooks ? { webhookCertificates: webhookCertificatesFromEnv(env) } : {}),
    metricsBindAddress: env.METRICS_BIND_ADDRESS ?? ":8443",
    // Plain HTTP only when asked for in so many words; anything else serves HTTPS.
    metricsServing: env.METRICS_SERVING === "insecure-http" ? "insecure-http" : "secure",
    healthProbeBindAddress: env.HEALTH_PROBE_BIND_ADDRESS ?? ":8081",
    leaderElection: true,
    leaderElectionID: "website-operator-leader",
    leaderElectionNamespace: env.LEADER_ELECTION_NAMESPACE,
    // The process exits right after a graceful stop, so the next replica may lead at once.
    leaderElectionReleaseOnCancel: true,
    ...overrides,
  });
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
      categories: [["website-operator"]],
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
