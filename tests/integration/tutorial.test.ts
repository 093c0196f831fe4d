// The tutorial's operator (examples/tutorial, which following docs/tutorial.md gives: see
// tutorial_steps.test.ts): its own tests (FakeClient, and the operator against a real control
// plane) run here on Deno and on Bun, `rudder manifests` derives its CRD and RBAC, and its
// reconciler writes its children only when something changed.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { main } from "../../cli/main.ts";
import { type Client, newClient } from "../../lib/client/client.ts";
import { mergeFrom } from "../../lib/client/patch.ts";
import { clone } from "../../lib/api/mod.ts";
import type { ConfigMap } from "../../lib/api/builtins.ts";
import { Deployment, Service } from "../../lib/api/builtins.ts";
import type { Manager } from "../../lib/manager/manager.ts";
import { Registry } from "../../lib/metrics/registry.ts";
import { Environment } from "../../lib/testing/envtest.ts";
import { Website } from "../../examples/tutorial/api/website.ts";
import { createManager } from "../../examples/tutorial/main.ts";
import { eventually } from "../support/eventually.ts";
import "../../examples/tutorial/controllers/website_controller_test.ts";
import "../../examples/tutorial/webhooks/website_webhook_test.ts";

const TUTORIAL = fileURLToPath(new URL("../../examples/tutorial/", import.meta.url));
let out: string;

before(() => {
  out = mkdtempSync(join(tmpdir(), "rudder-tutorial-"));
}, { timeout: 10_000 });
after(() => rmSync(out, { recursive: true, force: true }), { timeout: 10_000 });

describe("the tutorial's manifests step", () => {
  it(
    "writes the Website CRD and a ClusterRole with the extra ConfigMap rule",
    { timeout: 120_000 },
    async () => {
      let err = "";
      const code = await main(["manifests", "--dir", TUTORIAL, "--out", out], {
        out: () => {},
        err: (line) => (err += `${line}\n`),
        cwd: TUTORIAL,
        env: process.env,
      });
      assert.equal(code, 0, err);
      const crd = parse(readFileSync(join(out, "crd/tutorial.rudder.dev_websites.yaml"), "utf8"));
      assert.equal(crd.spec.names.kind, "Website");
      const role = parse(readFileSync(join(out, "rbac/role.yaml"), "utf8"));
      const configMaps = role.rules.filter((rule: { resources?: string[] }) =>
        rule.resources?.includes("configmaps")
      ).flatMap((rule: { verbs: string[] }) => rule.verbs);
      for (const verb of ["get", "list", "watch", "create", "update", "patch"]) {
        assert.ok(configMaps.includes(verb), `configmaps: ${verb}`);
      }
    },
  );
});

/** The reconciles the manager's metrics have counted for the website controller. */
async function reconciles(mgr: Manager): Promise<number> {
  const text = await (await fetch(`${mgr.metricsURL}/metrics`)).text();
  const counted = text.matchAll(
    /^controller_runtime_reconcile_total\{controller="website",result="[a-z_]+"\} (\d+)$/gm,
  );
  return [...counted].reduce((sum, match) => sum + Number(match[1]), 0);
}

/** The requests the manager's client has sent that could write: POST, PUT, PATCH, DELETE. */
async function writeRequests(mgr: Manager): Promise<number> {
  const text = await (await fetch(`${mgr.metricsURL}/metrics`)).text();
  const counted = text.matchAll(
    /^rest_client_requests_total\{[^}]*method="(?:POST|PUT|PATCH|DELETE)"[^}]*\} (\d+)$/gm,
  );
  return [...counted].reduce((sum, match) => sum + Number(match[1]), 0);
}

describe("the tutorial's reconciler on a real API server", () => {
  const env = new Environment({ crds: [Website] });
  const stop = new AbortController();
  const namespace = "writes";
  let client: Client;
  let mgr: Manager;
  let running: Promise<void> | undefined;

  before(async () => {
    const config = await env.start();
    client = newClient(config);
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
    mgr = createManager({
      config,
      metricsBindAddress: "127.0.0.1:0",
      metricsServing: "insecure-http",
      metricsRegistry: new Registry(),
      healthProbeBindAddress: "0",
      leaderElection: false,
    });
    running = mgr.start(stop.signal);
  }, { timeout: 180_000 });

  after(async () => {
    stop.abort();
    try {
      await running;
    } finally {
      await env.stop();
    }
  }, { timeout: 60_000 });

  it(
    "writes nothing to the Deployment and Service for five metadata-only changes of the Website",
    { timeout: 120_000 },
    async () => {
      const key = { namespace, name: "blog" };
      await client.create<ConfigMap>({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { namespace, name: "blog-html" },
        data: { "index.html": "<h1>blog</h1>" },
      });
      await client.create<Website>({
        apiVersion: "tutorial.rudder.dev/v1",
        kind: "Website",
        metadata: key,
        spec: { image: "nginx:1.27", replicas: 2, contentFrom: "blog-html" },
      });
      await eventually("the Website is reconciled", async () => {
        const site = await client.get(Website, key);
        const children = await Promise.all([client.get(Deployment, key), client.get(Service, key)])
          .catch(() => undefined);
        return site.status?.contentVersion !== undefined && children !== undefined;
      }, 60_000);
      // Settled: no reconcile for a second.
      let seen = -1;
      await eventually(
        "the controller is idle",
        async () => {
          const now = await reconciles(mgr);
          const idle = now === seen;
          seen = now;
          return idle;
        },
        60_000,
        1_000,
      );
      const versions = async () => [
        (await client.get(Deployment, key)).metadata?.resourceVersion,
        (await client.get(Service, key)).metadata?.resourceVersion,
      ];
      const settled = await versions();

      let reconciled = 0;
      const writesBefore = await writeRequests(mgr);
      for (let i = 1; i <= 5; i++) {
        const before = await reconciles(mgr);
        const site = await client.get(Website, key);
        const labelled = clone(site);
        labelled.metadata!.labels = { ...site.metadata?.labels, revision: String(i) };
        await client.patch(labelled, mergeFrom(site));
        await eventually(`change ${i} is reconciled`, async () => (await reconciles(mgr)) > before);
        reconciled += (await reconciles(mgr)) - before;
        assert.deepEqual(await versions(), settled, `after change ${i}`);
      }
      const labels = (await client.get(Website, key)).metadata?.labels;
      assert.equal(labels?.revision, "5");
      // Not even a request the API server would find changes nothing (an update, an apply).
      const writes = await writeRequests(mgr) - writesBefore;
      console.log(
        `5 label changes: ${reconciled} reconciles, ${writes} write requests, Deployment and ` +
          `Service at resourceVersion ${settled.join(" and ")} throughout`,
      );
      assert.equal(writes, 0);
    },
  );
});
