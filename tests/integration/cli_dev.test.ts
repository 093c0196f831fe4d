// `rudder dev` and `rudder envtest` as processes: dev starts a control plane, installs the
// CRDs, runs the operator, restarts it when a source file changes and stops everything on
// SIGTERM; with `--runtime node` it runs a Node project's operator on Node; envtest prints where
// the binaries are, and runs a control plane until SIGTERM.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { Deployment, Namespace } from "../../lib/api/builtins.ts";
import { resourceType } from "../../lib/api/resource.ts";
import { newClient } from "../../lib/client/client.ts";
import { loadConfig } from "../../lib/kube/config/load.ts";
import { findControlPlaneBinaries } from "../../lib/testing/assets.ts";
import { cliArgs, initProject } from "../support/cli.ts";
import { eventually } from "../support/eventually.ts";

let scratch: string;
let project: string;
const children = new Set<ChildProcess>();

const Widget = resourceType<{ apiVersion: string; kind: string; status?: { phase?: string } }>({
  group: "example.com",
  version: "v1alpha1",
  kind: "Widget",
  scope: "Namespaced",
  subresources: ["status"],
});

/** Starts the CLI from this checkout on this test's runtime; collects what it prints. */
function rudder(cwd: string, args: string[], extraEnv: Record<string, string> = {}) {
  const child = spawn(process.execPath, cliArgs(args), {
    cwd,
    env: { ...process.env, ...extraEnv } as Record<string, string>,
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk) => (stdout += chunk));
  child.stderr!.on("data", (chunk) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => {
    child.on("error", () => resolve(null));
    child.on("close", (code) => resolve(code));
  });
  exited.then(() => children.delete(child));
  return { child, exited, stdout: () => stdout, stderr: () => stderr };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

before(async () => {
  scratch = mkdtempSync(join(tmpdir(), "rudder-cli-dev-test-"));
  project = await initProject(scratch, "widget-operator", {
    kind: "Widget",
    group: "example.com",
    children,
  });
}, { timeout: 120_000 });

after(() => {
  for (const child of children) child.kill("SIGKILL");
  if (scratch) rmSync(scratch, { recursive: true, force: true });
}, { timeout: 30_000 });

describe("rudder envtest", () => {
  it("setup and env print where the control-plane binaries are", async () => {
    const setup = rudder(scratch, ["envtest", "setup"]);
    assert.equal(await setup.exited, 0, setup.stderr());
    const directory = setup.stdout().trim().split("\n").at(-1)!;
    assert.deepEqual(findControlPlaneBinaries(directory).directory, directory);

    const env = rudder(scratch, ["envtest", "env"]);
    assert.equal(await env.exited, 0, env.stderr());
    assert.equal(env.stdout(), `export KUBEBUILDER_ASSETS=${directory}\n`);
  });

  it("start prints a kubeconfig path, serves the API until SIGTERM, then exits 0", async () => {
    const crds = join(project, "config", "crd");
    const manifests = rudder(project, ["manifests"]);
    assert.equal(await manifests.exited, 0, manifests.stderr());

    const plane = rudder(scratch, ["envtest", "start", "--crds", crds]);
    try {
      await eventually(
        "the kubeconfig path is printed",
        () => plane.stdout().includes("\n"),
        60_000,
      );
      const kubeconfig = plane.stdout().split("\n")[0];
      assert.ok(existsSync(kubeconfig), kubeconfig);
      const client = newClient(await loadConfig({ kubeconfig }));
      const namespaces = await client.list(Namespace);
      assert.ok(namespaces.items.some((ns) => ns.metadata?.name === "default"));
      const widgets = await client.list(Widget, { namespace: "default" });
      assert.deepEqual(widgets.items, [], "the CRD from --crds is installed");

      process.kill(plane.child.pid!, "SIGTERM");
      assert.equal(await plane.exited, 0, plane.stderr());
      assert.equal(existsSync(dirname(kubeconfig)), false, "the control plane's files are gone");
      assert.match(plane.stderr(), /SIGTERM: stopping the control plane/);
    } finally {
      plane.child.kill("SIGKILL");
    }
  });
});

describe("rudder dev", () => {
  it("runs the operator on a local control plane and restarts it when a source file changes", async () => {
    const dev = rudder(project, ["dev"], {
      METRICS_BIND_ADDRESS: "127.0.0.1:0",
      HEALTH_PROBE_BIND_ADDRESS: "127.0.0.1:0",
      LOG_FORMAT: "json",
    });
    const operatorPids = () =>
      [...dev.stderr().matchAll(/started the operator \(pid (\d+)\)/g)].map((m) => Number(m[1]));
    try {
      await eventually(
        "the control plane runs",
        () => /export KUBECONFIG=\S+/.test(dev.stderr()),
        60_000,
      );
      const kubeconfig = dev.stderr().match(/export KUBECONFIG=(\S+)/)![1];
      const client = newClient(await loadConfig({ kubeconfig }));
      await eventually(
        "the CRD is installed",
        () => dev.stderr().includes("CRDs installed: widgets.example.com"),
        30_000,
      );
      await eventually("the operator leads", () => dev.stdout().includes("Elected leader"), 60_000);

      const first = { namespace: "default", name: "first" };
      await client.create({
        apiVersion: "example.com/v1alpha1",
        kind: "Widget",
        metadata: first,
        spec: {},
      });
      await eventually(
        "the first Widget is Running",
        async () => (await client.get(Widget, first)).status?.phase === "Running",
        30_000,
      );

      appendFileSync(join(project, "controllers", "widget_controller.ts"), "// changed\n");
      await eventually("the operator is restarted", () => operatorPids().length === 2, 60_000);
      const [old, current] = operatorPids();
      assert.match(dev.stderr(), /source changed: restarting the operator/);
      assert.match(dev.stderr(), /the operator stopped \(exit 0\)/);
      assert.equal(isAlive(old), false, "the first operator is gone");
      await eventually(
        "the new operator leads",
        () => dev.stdout().split("Elected leader").length === 3,
        60_000,
      );

      const second = { namespace: "default", name: "second" };
      await client.create({
        apiVersion: "example.com/v1alpha1",
        kind: "Widget",
        metadata: second,
        spec: { replicas: 2 },
      });
      await eventually(
        "the second Widget is Running",
        async () => (await client.get(Widget, second)).status?.phase === "Running",
        30_000,
      );
      assert.equal((await client.get(Deployment, second)).spec?.replicas, 2);

      process.kill(dev.child.pid!, "SIGTERM");
      assert.equal(await dev.exited, 0, dev.stderr());
      assert.equal(isAlive(current), false, "the operator stopped with rudder dev");
      assert.equal(existsSync(kubeconfig), false, "the control plane stopped with rudder dev");
    } finally {
      dev.child.kill("SIGKILL");
      for (const pid of operatorPids()) if (isAlive(pid)) process.kill(pid, "SIGKILL");
    }
  });

  it("with --runtime node runs a Node project's operator on Node, and stops it on SIGTERM", async () => {
    const parent = join(scratch, "node");
    mkdirSync(parent);
    const nodeProject = await initProject(parent, "widget-operator", {
      kind: "Widget",
      group: "example.com",
      extra: ["--runtime", "node"],
      children,
    });
    const dev = rudder(nodeProject, ["dev", "--runtime", "node"], {
      METRICS_BIND_ADDRESS: "127.0.0.1:0",
      HEALTH_PROBE_BIND_ADDRESS: "127.0.0.1:0",
      LOG_FORMAT: "json",
    });
    const operatorPid = () => Number(dev.stderr().match(/started the operator \(pid (\d+)\)/)?.[1]);
    try {
      await eventually(
        "the control plane runs",
        () => /export KUBECONFIG=\S+/.test(dev.stderr()),
        60_000,
      );
      const kubeconfig = dev.stderr().match(/export KUBECONFIG=(\S+)/)![1];
      const client = newClient(await loadConfig({ kubeconfig }));
      await eventually("the operator leads", () => dev.stdout().includes("Elected leader"), 60_000);
      assert.match(dev.stderr(), /starting the operator: \S*node (--\S+ )*main\.ts/);
      const key = { namespace: "default", name: "on-node" };
      await client.create({
        apiVersion: "example.com/v1alpha1",
        kind: "Widget",
        metadata: key,
        spec: {},
      });
      await eventually(
        "the Widget is Running",
        async () => (await client.get(Widget, key)).status?.phase === "Running",
        30_000,
      );
      const pid = operatorPid();
      process.kill(dev.child.pid!, "SIGTERM");
      assert.equal(await dev.exited, 0, dev.stderr());
      assert.match(dev.stderr(), /the operator stopped \(exit 0\)/);
      assert.equal(isAlive(pid), false, "the operator stopped with rudder dev");
    } finally {
      dev.child.kill("SIGKILL");
      const pid = operatorPid();
      if (pid && isAlive(pid)) process.kill(pid, "SIGKILL");
    }
  });
});
