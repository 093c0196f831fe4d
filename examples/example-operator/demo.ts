/**
 * `deno task demo`: the example operator end to end on a local control plane. Starts etcd and
 * kube-apiserver, installs the Example CRD, runs the operator with its webhooks (its reconcile
 * logs are printed), shows a write the validating webhook denies, creates an Example, shows it
 * reach Running with its Deployment and read back as v1beta1 through the conversion webhook,
 * scrapes the operator's metrics, deletes the Example (the finalizer runs), stops everything
 * and exits 0.
 *
 * @module
 */

import { createServer } from "node:net";
import process from "node:process";
import { configureLogging, Deployment, newClient } from "../../mod.ts";
import { ApiError } from "../../lib/client/mod.ts";
import { EventsV1Event } from "../../lib/api/mod.ts";
import { Environment } from "../../lib/testing/mod.ts";
import { webhookConfigurations } from "../../lib/webhook/mod.ts";
import { Example, ExampleV1beta1 } from "./api/example.ts";
import { createManager } from "./main.ts";

function say(message: string): void {
  console.log(`\n▶ ${message}`);
}

async function until(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** `127.0.0.1:8080` when free (so a scraper knows where to look), else a free port. */
async function metricsAddress(): Promise<string> {
  if (process.env.METRICS_BIND_ADDRESS) return process.env.METRICS_BIND_ADDRESS;
  const free = await new Promise<boolean>((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(8080, "127.0.0.1", () => server.close(() => resolve(true)));
  });
  return free ? "127.0.0.1:8080" : "127.0.0.1:0";
}

await configureLogging({ dev: true, level: "info", categories: [["example-operator"]] });
const env = new Environment({ crds: [Example], webhookInstallOptions: {} });
say("starting a local control plane (etcd + kube-apiserver) and installing the Example CRD");
const config = await env.start();
const stop = new AbortController();
let running: Promise<void> | undefined;
try {
  const client = newClient(config);
  const serving = env.webhookInstallOptions;
  const mgr = createManager({
    config,
    metricsBindAddress: await metricsAddress(),
    // The demo scrapes its own metrics without a token: plain HTTP, asked for by name.
    metricsServing: "insecure-http",
    healthProbeBindAddress: "127.0.0.1:0",
    leaderElectionNamespace: "default",
    leaderElectionReleaseOnCancel: true,
    webhookServer: {
      host: serving.localServingHost,
      port: serving.localServingPort,
      certDir: serving.localServingCertDir,
    },
  }, { webhooks: true });
  say("starting the example operator, with its webhooks");
  running = mgr.start(stop.signal);
  await mgr.elected();
  const webhooks = mgr.getWebhookServer();
  console.log(`metrics: ${mgr.metricsURL}/metrics   probes: ${mgr.healthProbeURL}/readyz`);
  console.log(`webhooks: ${webhooks.url} ${webhooks.paths().join(" ")}`);
  // The CRD again, now converting through the webhook, and the webhook configurations.
  await env.installCRDs([Example]);
  const { mutating, validating } = webhookConfigurations(webhooks.webhooks(), {
    name: "example-operator",
    clientConfig: (path) => ({ service: { namespace: "system", name: "webhook-service", path } }),
  });
  await env.installWebhooks({ mutatingWebhooks: [mutating!], validatingWebhooks: [validating!] });

  say("creating Example default/too-big with spec.replicas = 50: the validating webhook says no");
  const tooBig = {
    apiVersion: "example.com/v1alpha1" as const,
    kind: "Example" as const,
    metadata: { name: "too-big", namespace: "default" },
    spec: { replicas: 50, image: "registry.k8s.io/pause:3.10" },
  };
  let denial = "";
  await until("the webhook configuration is in effect", async () => {
    try {
      await client.create(tooBig, { dryRun: true });
      return false;
    } catch (err) {
      denial = err instanceof ApiError ? err.message : String(err);
      return err instanceof ApiError && err.code === 422;
    }
  });
  console.log(`denied: ${denial}`);

  say("creating Example default/hello with spec.replicas = 3");
  await client.create({
    apiVersion: "example.com/v1alpha1",
    kind: "Example",
    metadata: { name: "hello", namespace: "default" },
    spec: { replicas: 3 },
  });
  await until(
    "the Example is Running",
    async () =>
      (await client.get(Example, { namespace: "default", name: "hello" })).status?.phase ===
        "Running",
  );
  const example = await client.get(Example, { namespace: "default", name: "hello" });
  say("the Example's status");
  console.log(JSON.stringify(example.status, null, 2));
  const deployment = await client.get(Deployment, { namespace: "default", name: "hello" });
  say("the Deployment it owns");
  console.log(
    `${deployment.metadata?.name}: replicas ${deployment.spec?.replicas}, image ` +
      `${deployment.spec?.template.spec?.containers[0].image}, owner ` +
      `${deployment.metadata?.ownerReferences?.[0].kind}/${
        deployment.metadata?.ownerReferences?.[0].name
      }`,
  );

  say("reading it as example.com/v1beta1: the conversion webhook renames replicas to size");
  const v1beta1 = await client.get(ExampleV1beta1, { namespace: "default", name: "hello" });
  console.log(`${v1beta1.apiVersion} spec: ${JSON.stringify(v1beta1.spec)}`);

  say("scraping the operator's metrics");
  const metrics = await (await fetch(`${mgr.metricsURL}/metrics`)).text();
  for (const line of metrics.split("\n")) {
    if (
      /^(controller_runtime_reconcile_total|controller_runtime_webhook_requests_total|leader_election_master_status)\{/
        .test(line)
    ) {
      console.log(line);
    }
  }

  say("deleting the Example: the finalizer runs, then it is gone");
  await client.delete(example);
  await until(
    "the Example is gone",
    async () =>
      await client.get(Example, { namespace: "default", name: "hello" }).then(
        () => false,
        () => true,
      ),
  );
  const events = await client.list(EventsV1Event, { namespace: "default" });
  for (const event of events.items) {
    console.log(
      `event: ${event.type} ${event.reason} ${event.regarding?.kind}/${event.regarding?.name}: ${
        event.note ?? ""
      }`,
    );
  }
  say("stopping");
} finally {
  stop.abort();
  await running;
  await env.stop();
}
console.log("done");
