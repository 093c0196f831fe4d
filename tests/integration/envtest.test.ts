// The local control plane: start, CRDs, kubeconfig for other processes, isolation between
// environments, clean stop, and cleanup when the test process is killed.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { loadConfig } from "../../lib/kube/config/load.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import { isForbidden } from "../../lib/kube/errors.ts";
import { RestClient } from "../../lib/kube/rest.ts";
import { Environment } from "../../lib/testing/envtest.ts";
import { ENVTEST_KUBERNETES_VERSION } from "../../lib/testing/assets.ts";

/** True while `pid` runs; a zombie (exited, not yet reaped) counts as gone. */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

async function waitUntil(what: string, condition: () => boolean, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function widgetCRD(group: string) {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `widgets.${group}` },
    spec: {
      group,
      scope: "Namespaced",
      names: { plural: "widgets", singular: "widget", kind: "Widget", listKind: "WidgetList" },
      versions: [{
        name: "v1",
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: "object",
            properties: {
              spec: { type: "object", properties: { size: { type: "integer" } } },
            },
          },
        },
      }],
    },
  };
}

describe("Environment", () => {
  const crdDir = mkdtempSync(join(tmpdir(), "rudder-crds-"));
  writeFileSync(
    join(crdDir, "gadgets.yaml"),
    `# a comment, then two documents, one of which is not a CRD
apiVersion: v1
kind: Namespace
metadata:
  name: ignored
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  scope: Cluster
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
  versions:
    - name: v1alpha1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`,
  );
  const env = new Environment({
    crdDirectoryPaths: [crdDir],
    crds: [widgetCRD("example.com"), { crd: () => widgetCRD("other.example.com") }],
  });
  let config: KubeConfig;
  let rest: RestClient;
  let startedIn = 0;

  before(async () => {
    const started = Date.now();
    config = await env.start();
    startedIn = Date.now() - started;
    rest = new RestClient(config);
  });

  after(async () => {
    rest?.close();
    await env.stop();
    rmSync(crdDir, { recursive: true, force: true });
  });

  it("serves the built Kubernetes version over TLS with the admin's client certificate", async () => {
    const version = await rest.request<{ gitVersion: string; major: string; minor: string }>({
      path: "/version",
    });
    assert.equal(version.gitVersion, `v${ENVTEST_KUBERNETES_VERSION}`);
    assert.match(config.server, /^https:\/\/127\.0\.0\.1:\d+$/);
    assert.ok(startedIn > 0);
  });

  it("installs CRDs from directories and from objects, served when start() resolves", async () => {
    for (const path of ["/apis/example.com/v1", "/apis/other.example.com/v1"]) {
      const list = await rest.request<{ resources: { name: string }[] }>({ path });
      assert.ok(list.resources.some((r) => r.name === "widgets"), `${path} lists widgets`);
    }
    const gadgets = await rest.request<{ resources: { name: string; namespaced: boolean }[] }>({
      path: "/apis/example.com/v1alpha1",
    });
    assert.deepEqual(gadgets.resources.find((r) => r.name === "gadgets")?.namespaced, false);
    const widget = await rest.request<{ metadata: { name: string }; spec: { size: number } }>({
      method: "POST",
      path: "/apis/example.com/v1/namespaces/default/widgets",
      body: {
        apiVersion: "example.com/v1",
        kind: "Widget",
        metadata: { name: "w1" },
        spec: { size: 3 },
      },
    });
    assert.equal(widget.spec.size, 3);
  });

  it("writes a kubeconfig file that loadConfig reads for another process", async () => {
    const fromFile = await loadConfig({ kubeconfig: env.kubeconfigPath });
    assert.equal(fromFile.server, config.server);
    assert.equal(fromFile.namespace, "default");
    const other = new RestClient(fromFile);
    try {
      const namespaces = await other.request<{ items: { metadata: { name: string } }[] }>({
        path: "/api/v1/namespaces",
      });
      assert.ok(namespaces.items.some((ns) => ns.metadata.name === "kube-system"));
    } finally {
      other.close();
    }
  });

  it("enforces RBAC: a user without bindings is forbidden", async () => {
    const nobody = new RestClient(await env.addUser({ name: "nobody", groups: ["testers"] }));
    try {
      await assert.rejects(
        nobody.request({ path: "/api/v1/namespaces/default/configmaps" }),
        (err) => isForbidden(err) && /nobody/.test((err as Error).message),
      );
    } finally {
      nobody.close();
    }
  });

  it("runs next to a second environment without collisions, and stops it completely", async () => {
    const second = new Environment();
    const secondConfig = await second.start();
    const pids = second.processes!;
    const dir = second.directory!;
    try {
      assert.notEqual(secondConfig.server, config.server);
      assert.notEqual(secondConfig.caData, config.caData);
      const secondRest = new RestClient(secondConfig);
      try {
        const crds = await secondRest.request<{ items: unknown[] }>({
          path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        });
        assert.equal(crds.items.length, 0, "the second environment has none of the first's CRDs");
      } finally {
        secondRest.close();
      }
      assert.ok(isAlive(pids.etcd) && isAlive(pids.kubeAPIServer));
    } finally {
      await second.stop();
    }
    assert.equal(isAlive(pids.kubeAPIServer), false, "kube-apiserver is gone after stop()");
    assert.equal(isAlive(pids.etcd), false, "etcd is gone after stop()");
    assert.equal(existsSync(dir), false, "the temporary directory is removed");
    await second.stop(); // a second stop is harmless
  });
});

describe("Environment failures", () => {
  it("names where it looked and the build command when binaries are missing", async () => {
    const empty = mkdtempSync(join(tmpdir(), "rudder-nobin-"));
    try {
      const env = new Environment({ binaryAssetsDirectory: empty });
      await assert.rejects(env.start(), (err: Error) => {
        assert.match(err.message, new RegExp(`looked in ${empty}`));
        assert.match(err.message, /kube-apiserver/);
        assert.match(err.message, /deno task envtest/);
        return true;
      });
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it("reports the last log lines when kube-apiserver does not come up, and leaves nothing behind", async () => {
    const env = new Environment({ kubeAPIServerFlags: { "--no-such-flag": "1" } });
    await assert.rejects(env.start(), (err: Error) => {
      assert.match(err.message, /kube-apiserver exited with code \d+ before it was ready/);
      assert.match(err.message, /no-such-flag/);
      return true;
    });
    assert.equal(env.processes, undefined);
    assert.equal(env.directory, undefined);
  });

  it("refuses a CRD directory that does not exist, naming it", async () => {
    const env = new Environment({ crdDirectoryPaths: ["/nonexistent/rudder-crds"] });
    await assert.rejects(env.start(), /CRD path \/nonexistent\/rudder-crds cannot be read/);
  });

  it("kills the control plane and removes its directory when the test process is killed", async () => {
    const child = join(fileURLToPath(new URL("../fixtures/", import.meta.url)), "envtest_child.ts");
    const args = "Deno" in globalThis ? ["run", "-A", child] : [child];
    const proc = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
    let output = "";
    proc.stdout!.on("data", (chunk) => (output += chunk));
    try {
      await waitUntil("the child reports its control plane", () => output.includes("\n"), 60_000);
      const { etcd, kubeAPIServer, directory } = JSON.parse(output.split("\n")[0]);
      assert.ok(isAlive(etcd) && isAlive(kubeAPIServer));
      proc.kill("SIGKILL");
      await waitUntil(
        "etcd and kube-apiserver are gone",
        () => !isAlive(etcd) && !isAlive(kubeAPIServer),
        15_000,
      );
      await waitUntil("the directory is removed", () => !existsSync(directory), 15_000);
    } finally {
      proc.kill("SIGKILL");
    }
  });
});
