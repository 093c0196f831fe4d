// The Website controller, tested two ways: its reconciler against FakeClient (in memory, no
// cluster), and the whole operator against a real local control plane (etcd + kube-apiserver,
// started by Environment). Every hook and test states its timeout: a control plane can take a
// minute to start on a busy machine.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  type Client,
  ConfigMap,
  Deployment,
  isNotFound,
  newClient,
  Service,
} from "@rudder/operator";
import type { Logger } from "@rudder/operator/manager";
import { Environment, FakeClient } from "@rudder/operator/testing";
import { Website } from "../api/website.ts";
import { createManager } from "../main.ts";
import { DIRECTORY, FINALIZER } from "./directory.ts";
import { WebsiteReconciler } from "./website_controller.ts";

const quiet: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  with: () => quiet,
};
const ctx = { signal: new AbortController().signal, log: quiet, reconcileID: "test" };

async function eventually(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) assert.fail(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const site = (name: string, contentFrom: string): Website => ({
  apiVersion: "tutorial.rudder.dev/v1",
  kind: "Website",
  metadata: { namespace: "default", name },
  spec: { image: "nginx:1.27", replicas: 2, contentFrom },
});

const content = (name: string, html: string): ConfigMap => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { namespace: "default", name },
  data: { "index.html": html },
});

/** Milliseconds for starting the control plane: Environment gives up after 2 min itself. */
const START_TIMEOUT = 180_000;
/** Milliseconds for a test on the control plane, or for stopping it. */
const TEST_TIMEOUT = 60_000;

describe("WebsiteReconciler with FakeClient", () => {
  it(
    "adds its finalizer, then creates the Deployment and Service it owns",
    { timeout: TEST_TIMEOUT },
    async () => {
      const key = { namespace: "default", name: "blog" };
      const client = new FakeClient({ types: [Website] });
      await client.create(site("blog", "blog-html")); // created, so it has a uid to own by
      await client.create(content("blog-html", "<h1>hi</h1>"));
      const reconciler = new WebsiteReconciler(client);
      await reconciler.reconcile(key, ctx); // adds the finalizer
      assert.deepEqual((await client.get(Website, key)).metadata?.finalizers, [FINALIZER]);
      await reconciler.reconcile(key, ctx);

      const deployment = await client.get(Deployment, key);
      assert.equal(deployment.spec?.replicas, 2);
      assert.equal(deployment.metadata?.ownerReferences?.[0]?.kind, "Website");
      assert.equal((await client.get(Service, key)).spec?.ports?.[0]?.port, 80);
      const directory = await client.get(ConfigMap, { namespace: "default", name: DIRECTORY });
      assert.equal(directory.data?.blog, "http://blog.default.svc");
      const ready = (await client.get(Website, key)).status?.conditions?.find((c) =>
        c.type === "Ready"
      );
      assert.equal(ready?.reason, "Progressing"); // no pods run in a fake

      // Nothing changed, so a third pass writes nothing.
      await reconciler.reconcile(key, ctx);
      const again = await client.get(Deployment, key);
      assert.equal(again.metadata?.resourceVersion, deployment.metadata?.resourceVersion);
    },
  );

  it("reports missing content in its Ready condition", { timeout: TEST_TIMEOUT }, async () => {
    const key = { namespace: "default", name: "empty" };
    const client = new FakeClient({ types: [Website], objects: [site("empty", "nothing")] });
    const reconciler = new WebsiteReconciler(client);
    await reconciler.reconcile(key, ctx);
    await reconciler.reconcile(key, ctx);
    const ready = (await client.get(Website, key)).status?.conditions?.find((c) =>
      c.type === "Ready"
    );
    assert.equal(ready?.status, "False");
    assert.equal(ready?.reason, "ContentMissing");
  });
});

describe("the website operator on a local control plane", () => {
  const env = new Environment({ crds: [Website] });
  const stop = new AbortController();
  let client: Client;
  let running: Promise<void> | undefined;

  before(async () => {
    const config = await env.start();
    client = newClient(config);
    const mgr = createManager({
      config,
      metricsBindAddress: "0",
      healthProbeBindAddress: "0",
      leaderElection: false,
    });
    running = mgr.start(stop.signal);
  }, { timeout: START_TIMEOUT });

  after(async () => {
    stop.abort();
    try {
      await running;
    } finally {
      await env.stop();
    }
  }, { timeout: TEST_TIMEOUT });

  it("rolls out a Website when its content appears, and lists it in the directory", {
    timeout: TEST_TIMEOUT,
  }, async () => {
    const key = { namespace: "default", name: "docs" };
    await client.create(site("docs", "docs-html"));
    await eventually(
      "the Website reports its content missing",
      async () =>
        (await client.get(Website, key)).status?.conditions?.[0]?.reason === "ContentMissing",
    );

    // The ConfigMap watch maps the new ConfigMap to the Website that serves it.
    await client.create(content("docs-html", "<h1>docs</h1>"));
    await eventually("the Deployment exists", async () => !!(await client.get(Deployment, key)));
    const directory = () => client.get(ConfigMap, { namespace: "default", name: DIRECTORY });
    await eventually(
      "the directory lists the Website",
      async () => (await directory()).data?.docs !== undefined,
    );

    // Deleting waits for the finalizer, which removes the directory entry.
    await client.delete(await client.get(Website, key));
    await eventually(
      "the Website is gone",
      () => client.get(Website, key).then(() => false, isNotFound),
    );
    assert.equal((await directory()).data?.docs, undefined);
  });
});
