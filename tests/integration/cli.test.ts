// The CLI from a fresh clone against a real control plane: `rudder init --local` makes a
// project; its manifests apply cleanly (the Deployment as a dry run) and grant no wildcard;
// `rudder build --runtime bun` makes one file that, with no runtime on PATH and only the
// generated RBAC (it authenticates as the generated ServiceAccount), reconciles a custom
// resource and exits 0 on SIGTERM; deno compile's permissions are enough to run the operator;
// and the project's own tests pass out of the box. A Node project (`rudder init --runtime node`)
// passes its own tests with `node --test`, and its single executable (a Node single executable
// application) reconciles as its ServiceAccount and exits 0 on SIGTERM.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import process from "node:process";
import { parse, stringify } from "yaml";
import { denoPermissionFlags } from "../../cli/build.ts";
import { loadProject, runtimeExecutable } from "../../cli/project.ts";
import {
  ClusterRole,
  ClusterRoleBinding,
  CustomResourceDefinition,
  Deployment,
  Namespace,
  Role,
  ServiceAccount,
} from "../../lib/api/builtins.ts";
import { resourceType } from "../../lib/api/resource.ts";
import { type Client, newClient } from "../../lib/client/client.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import { RestClient } from "../../lib/kube/rest.ts";
import { Environment } from "../../lib/testing/envtest.ts";
import { initProject, rudder as rudderCli, type Run, run as runCommand } from "../support/cli.ts";
import { denortMissing } from "../support/denort.ts";
import { eventually } from "../support/eventually.ts";
import { fetchTrusting, presentedCertificates } from "../support/tls.ts";

const NAME = "memcached-operator";
const OPERATOR_NAMESPACE = `${NAME}-system`;
const SERVICE_ACCOUNT = `${NAME}-controller-manager`;
const API_VERSION = "cache.example.com/v1alpha1";
/** Milliseconds for starting the control plane and making the project (Environment: 2 min). */
const SETUP_TIMEOUT = 300_000;
/** Milliseconds for one step: a command, applying, building, an operator run. */
const STEP_TIMEOUT = 300_000;

const env = new Environment();
let scratch: string;
let project: string;
const children = new Set<ChildProcess>();
let config: KubeConfig;
let client: Client;

/** Runs the CLI from this checkout on this test's runtime, the way a user runs it. */
function rudder(cwd: string, ...args: string[]): Promise<Run> {
  return rudderCli(args, { cwd, children });
}

/** Runs the CLI in the project with this environment. */
function runWithEnv(processEnv: Record<string, string | undefined>, ...args: string[]) {
  return rudderCli(args, { cwd: project, env: processEnv, children });
}

/** Runs `command` to its end. */
function run(
  command: string,
  args: string[],
  options: { cwd: string; env?: Record<string, string | undefined> },
): Promise<Run> {
  return runCommand(command, args, { ...options, children });
}

/** A long-running process whose output is collected; `exited` resolves its exit code. */
function start(command: string, args: string[], options: { cwd: string; env: object }) {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env as Record<string, string>,
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let output = "";
  child.stdout!.on("data", (chunk) => (output += chunk));
  child.stderr!.on("data", (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => {
    child.on("error", () => resolve(null));
    child.on("exit", (code) => resolve(code));
  });
  exited.then(() => children.delete(child));
  return { child, exited, output: () => output };
}

/** Every file under `dir`, by relative path, with its bytes. */
function snapshot(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (current: string) => {
    for (const entry of readdirSync(current, { withFileTypes: true })) {
      const path = join(current, entry.name);
      if (entry.isDirectory()) walk(path);
      else files.set(relative(dir, path), readFileSync(path, "utf8"));
    }
  };
  walk(dir);
  return files;
}

async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

// Each step once, shared by the tests that need it (a failed step fails each of them).
let manifests: Promise<Map<string, string>> | undefined;
let applying: Promise<void> | undefined;
let bunBinary: Promise<{ path: string; stdout: string }> | undefined;

function generatedManifests(): Promise<Map<string, string>> {
  manifests ??= (async () => {
    const result = await rudder(project, "manifests");
    assert.equal(result.code, 0, result.stderr);
    return snapshot(join(project, "config"));
  })();
  return manifests;
}

/** Applies the manifests as `kubectl apply -k config/` would, the Deployment as a dry run. */
function applyManifests(): Promise<void> {
  applying ??= (async () => {
    const files = await generatedManifests();
    const kustomization = parse(files.get("kustomization.yaml")!);
    for (const path of kustomization.resources as string[]) {
      const object = parse(files.get(path)!);
      const dryRun = object.kind === "Deployment";
      const created = await client.create(object, { dryRun, fieldValidation: "Strict" });
      if (dryRun) {
        const pod = (created as typeof object).spec.template.spec;
        assert.equal(pod.containers[0].securityContext.readOnlyRootFilesystem, true);
        assert.equal(pod.securityContext.runAsNonRoot, true);
      }
      if (object.kind === "CustomResourceDefinition") {
        await eventually("the CRD is established", async () => {
          const crd = await client.get(CustomResourceDefinition, { name: object.metadata.name });
          return !!crd.status?.conditions?.some((c) =>
            c.type === "Established" && c.status === "True"
          );
        });
      }
    }
  })();
  return applying;
}

function buildWithBun(): Promise<{ path: string; stdout: string }> {
  bunBinary ??= (async () => {
    await generatedManifests();
    const result = await rudder(project, "build", "--runtime", "bun");
    assert.equal(result.code, 0, result.stderr);
    return { path: join(project, "dist", NAME), stdout: result.stdout };
  })();
  return bunBinary;
}

/** A kubeconfig that authenticates as the operator's ServiceAccount, with a bound token. */
async function serviceAccountKubeconfig(): Promise<string> {
  const rest = new RestClient(config);
  try {
    const request = await rest.request<{ status: { token: string } }>({
      method: "POST",
      path: `/api/v1/namespaces/${OPERATOR_NAMESPACE}/serviceaccounts/${SERVICE_ACCOUNT}/token`,
      body: {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        spec: { expirationSeconds: 3600 },
      },
    });
    const path = join(scratch, `sa-${crypto.randomUUID()}.kubeconfig`);
    writeFileSync(
      path,
      stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{
          name: "envtest",
          cluster: {
            server: config.server,
            "certificate-authority-data": btoa(config.caData!),
          },
        }],
        users: [{ name: "operator", user: { token: request.status.token } }],
        contexts: [{ name: "operator", context: { cluster: "envtest", user: "operator" } }],
        "current-context": "operator",
      }),
      { mode: 0o600 },
    );
    return path;
  } finally {
    rest.close();
  }
}

let scrapers: Promise<{ reader: string; stranger: string }> | undefined;

/**
 * Tokens of two ServiceAccounts: `reader`, bound to the generated metrics-reader ClusterRole,
 * and `stranger`, bound to nothing. Resolves once the API server authorises the reader.
 */
function scraperTokens(): Promise<{ reader: string; stranger: string }> {
  scrapers ??= (async () => {
    await applyManifests();
    const rest = new RestClient(config);
    try {
      const tokens: Record<string, string> = {};
      for (const name of ["metrics-scraper", "metrics-stranger"]) {
        await client.create<ServiceAccount>({
          apiVersion: "v1",
          kind: "ServiceAccount",
          metadata: { namespace: OPERATOR_NAMESPACE, name },
        });
        const request = await rest.request<{ status: { token: string } }>({
          method: "POST",
          path: `/api/v1/namespaces/${OPERATOR_NAMESPACE}/serviceaccounts/${name}/token`,
          body: {
            apiVersion: "authentication.k8s.io/v1",
            kind: "TokenRequest",
            spec: { expirationSeconds: 3600 },
          },
        });
        tokens[name] = request.status.token;
      }
      await client.create<ClusterRoleBinding>({
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        metadata: { name: `${NAME}-metrics-scraper` },
        roleRef: {
          apiGroup: "rbac.authorization.k8s.io",
          kind: "ClusterRole",
          name: `${NAME}-metrics-reader`,
        },
        subjects: [{
          kind: "ServiceAccount",
          name: "metrics-scraper",
          namespace: OPERATOR_NAMESPACE,
        }],
      });
      await eventually("the scraper may get /metrics", async () => {
        const review = await rest.request<{ status: { allowed?: boolean } }>({
          method: "POST",
          path: "/apis/authorization.k8s.io/v1/subjectaccessreviews",
          body: {
            apiVersion: "authorization.k8s.io/v1",
            kind: "SubjectAccessReview",
            spec: {
              user: `system:serviceaccount:${OPERATOR_NAMESPACE}:metrics-scraper`,
              nonResourceAttributes: { path: "/metrics", verb: "get" },
            },
          },
        });
        return review.status.allowed === true;
      });
      return { reader: tokens["metrics-scraper"], stranger: tokens["metrics-stranger"] };
    } finally {
      rest.close();
    }
  })();
  return scrapers;
}

/**
 * Scrapes a running operator's metrics as kubebuilder's scaffold serves them: over HTTPS (the
 * operator's self-signed certificate), 401 without a token, 403 for a ServiceAccount without
 * the metrics-reader role, 200 for one with it. The operator reviews the tokens with the
 * generated RBAC.
 */
async function checkSecureMetrics(output: string): Promise<void> {
  const line = output.split("\n").find((l) => l.includes('"name":"metrics"'));
  const url: string = line ? JSON.parse(line).properties?.url ?? "" : "";
  assert.match(url, /^https:\/\//, "metrics are served over HTTPS");
  const chain = await presentedCertificates(url);
  const ca = chain[chain.length - 1];
  const { reader, stranger } = await scraperTokens();
  const scrape = (token?: string) =>
    fetchTrusting(ca, `${url}/metrics`, {
      headers: token ? { Authorization: `Bearer ${token}` } : {},
    });
  assert.equal((await scrape()).status, 401);
  assert.equal((await scrape(stranger)).status, 403);
  const allowed = await scrape(reader);
  assert.equal(allowed.status, 200, allowed.text);
  assert.match(allowed.text, /^controller_runtime_reconcile_total\{/m);
}

/**
 * Runs an operator process until it reconciles a new custom resource in `namespace`, checks
 * its metrics are served securely, then stops it with SIGTERM; resolves the milliseconds from
 * start to ready and its exit code.
 */
async function reconcileWith(
  command: string,
  args: string[],
  processEnv: Record<string, string>,
  namespace: string,
): Promise<{ readyMs: number; code: number | null; output: string }> {
  await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
  const started = Date.now();
  const op = start(command, args, { cwd: scratch, env: processEnv });
  try {
    let healthURL = "";
    await eventually("the operator serves its health probes", () => {
      const line = op.output().split("\n").find((l) => l.includes('"name":"health"'));
      healthURL = line ? JSON.parse(line).properties?.url ?? "" : "";
      return healthURL !== "";
    }, 60_000);
    await eventually("the operator is ready", async () => {
      const response = await fetch(`${healthURL}/readyz`).catch(() => undefined);
      await response?.body?.cancel();
      return response?.status === 200;
    }, 60_000);
    const readyMs = Date.now() - started;
    const key = { namespace, name: "sample" };
    await client.create({
      apiVersion: API_VERSION,
      kind: "Memcached",
      metadata: key,
      spec: { replicas: 2, image: "registry.k8s.io/pause:3.10" },
    });
    await eventually("the Memcached is Running", async () => {
      const object = await client.get(Memcached, key).catch(() => undefined);
      return object?.status?.phase === "Running";
    }, 60_000);
    const deployment = await client.get(Deployment, key);
    assert.equal(deployment.spec?.replicas, 2);
    assert.equal(deployment.metadata?.ownerReferences?.[0]?.kind, "Memcached");
    await checkSecureMetrics(op.output());
    // process.kill, not child.kill: Deno's ChildProcess misreports the code the child chose.
    process.kill(op.child.pid!, "SIGTERM");
    const code = await op.exited;
    return { readyMs, code, output: op.output() };
  } catch (err) {
    console.error(op.output());
    throw err;
  } finally {
    op.child.kill("SIGKILL");
  }
}

const Memcached = resourceType<{
  apiVersion: string;
  kind: string;
  status?: { phase?: string };
}>({
  group: "cache.example.com",
  version: "v1alpha1",
  kind: "Memcached",
  scope: "Namespaced",
  subresources: ["status"],
});

before(async () => {
  scratch = mkdtempSync(join(tmpdir(), "rudder-cli-test-"));
  project = join(scratch, NAME);
  config = await env.start();
  client = newClient(config);
  await initProject(scratch, NAME, { children });
}, { timeout: SETUP_TIMEOUT });

after(async () => {
  for (const child of children) child.kill("SIGKILL");
  try {
    await env.stop();
  } finally {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }
}, { timeout: STEP_TIMEOUT });

describe("rudder init", () => {
  it("with --local makes a project that deno fmt, deno lint and deno check accept", {
    timeout: STEP_TIMEOUT,
  }, async () => {
    const deno = runtimeExecutable("deno", process.env);
    for (const args of [["fmt", "--check"], ["lint"], ["check"]]) {
      const result = await run(deno, args, { cwd: project });
      assert.equal(result.code, 0, `deno ${args.join(" ")}:\n${result.stdout}${result.stderr}`);
    }
  });

  it("for the published package makes a project that deno fmt and deno lint accept", {
    timeout: STEP_TIMEOUT,
  }, async () => {
    const init = await rudder(scratch, "init", "published-operator", "--kind", "Cache");
    assert.equal(init.code, 0, init.stderr);
    const dir = join(scratch, "published-operator");
    assert.match(readFileSync(join(dir, "deno.json"), "utf8"), /"jsr:@rudder\/operator@\^/);
    const deno = runtimeExecutable("deno", process.env);
    for (const args of [["fmt", "--check"], ["lint"]]) {
      const result = await run(deno, args, { cwd: dir });
      assert.equal(result.code, 0, `deno ${args.join(" ")}:\n${result.stdout}${result.stderr}`);
    }
  });
});

describe("rudder manifests", () => {
  it("writes the same bytes on every run", { timeout: STEP_TIMEOUT }, async () => {
    const first = await generatedManifests();
    assert.ok(first.has("crd/cache.example.com_memcacheds.yaml"), [...first.keys()].join());
    const again = await rudder(project, "manifests", "--out", "config-again");
    assert.equal(again.code, 0, again.stderr);
    // config/samples/ is rudder init's, not the manifests'.
    const generated = new Map([...first].filter(([path]) => !path.startsWith("samples/")));
    assert.deepEqual(snapshot(join(project, "config-again")), generated);
  });

  it(
    "applies cleanly to the API server and grants no wildcard",
    { timeout: STEP_TIMEOUT },
    async () => {
      await applyManifests();
      const role = await client.get(ClusterRole, { name: `${NAME}-manager-role` });
      const rules = (role.rules ?? []) as unknown as Record<string, string[]>[];
      assert.ok(rules.length > 0);
      for (const rule of rules) {
        for (const [field, values] of Object.entries(rule)) {
          assert.ok(!values.some((v) => v.includes("*")), `${field}: ${values}`);
        }
      }
      assert.deepEqual(
        rules.find((r) => r.resources?.includes("memcacheds/status"))?.verbs,
        ["patch", "update"],
      );
    },
  );

  it("grants leases only in the operator's namespace, and no wildcard in any role", {
    timeout: STEP_TIMEOUT,
  }, async () => {
    await applyManifests();
    const clusterRoles = (await client.list(ClusterRole, {
      labelSelector: "app.kubernetes.io/managed-by=rudder",
    })).items;
    assert.deepEqual(clusterRoles.map((r) => r.metadata?.name).sort(), [
      `${NAME}-manager-role`,
      `${NAME}-metrics-auth-role`,
      `${NAME}-metrics-reader`,
    ]);
    for (const role of clusterRoles) {
      for (const rule of role.rules ?? []) {
        assert.ok(!rule.resources?.some((r) => r.startsWith("leases")), role.metadata?.name);
        assert.ok(!rule.apiGroups?.includes("coordination.k8s.io"), role.metadata?.name);
        for (const values of Object.values(rule) as string[][]) {
          assert.ok(!values.some((v) => v.includes("*")), `${role.metadata?.name}: ${values}`);
        }
      }
    }
    const manager = clusterRoles.find((r) => r.metadata?.name === `${NAME}-manager-role`)!;
    const events = manager.rules?.find((r) => r.resources?.includes("events"));
    assert.deepEqual(events?.verbs, ["create", "patch"]);
    const election = await client.get(Role, {
      namespace: OPERATOR_NAMESPACE,
      name: `${NAME}-leader-election-role`,
    });
    assert.deepEqual(election.rules, [{
      apiGroups: ["coordination.k8s.io"],
      resources: ["leases"],
      verbs: ["create", "get", "update"],
    }]);
    const namespace = await client.get(Namespace, { name: OPERATOR_NAMESPACE });
    assert.equal(namespace.metadata?.labels?.["pod-security.kubernetes.io/enforce"], "restricted");
  });
});

describe("the single file from rudder build --runtime bun", () => {
  it(
    "reconciles a custom resource with no runtime on PATH, as its ServiceAccount, and exits 0 on SIGTERM",
    { timeout: STEP_TIMEOUT },
    async () => {
      await applyManifests();
      const { path, stdout } = await buildWithBun();
      assert.match(stdout, new RegExp(`^dist/${NAME} \\(\\d+\\.\\d MiB\\)$`, "m"));
      const size = statSync(path).size;
      const noRuntimes = join(scratch, "no-runtimes-here");
      const { readyMs, code, output } = await reconcileWith(path, [], {
        PATH: noRuntimes,
        HOME: scratch,
        KUBECONFIG: await serviceAccountKubeconfig(),
        LEADER_ELECTION_NAMESPACE: OPERATOR_NAMESPACE,
        METRICS_BIND_ADDRESS: "127.0.0.1:0",
        HEALTH_PROBE_BIND_ADDRESS: "127.0.0.1:0",
      }, "bun-binary");
      assert.equal(code, 0, output);
      assert.match(output, /"SIGTERM\\?" received: stopping gracefully/);
      assert.doesNotMatch(output, /Forbidden|forbidden/, "the generated RBAC is enough");
      console.log(
        `bun single file: ${(size / 1024 / 1024).toFixed(1)} MiB, ready ${readyMs} ms after start`,
      );
    },
  );
});

describe("rudder build --runtime deno", () => {
  it("without denort fails, naming it and suggesting DENORT_BIN or --runtime bun", {
    timeout: STEP_TIMEOUT,
  }, async () => {
    // A DENORT_BIN that does not exist fails the same way a blocked download does, offline.
    const missing = join(scratch, "no-denort-here");
    const result = await runWithEnv(
      { ...process.env, DENORT_BIN: missing },
      "build",
      "--api-server",
      new URL(config.server).host,
      "--out",
      "dist/deno-operator",
    );
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, /--allow-net=\S*127\.0\.0\.1/);
    assert.match(result.stderr, new RegExp(`could not use DENORT_BIN=${missing} as its runtime`));
    assert.match(result.stderr, /Set DENORT_BIN to a denort binary/);
    assert.match(result.stderr, /or build with --runtime bun/);
    assert.equal(existsSync(join(project, "dist", "deno-operator")), false);
  });

  it(
    "makes a single file that reconciles as its ServiceAccount and exits 0 on SIGTERM",
    { skip: denortMissing(), timeout: STEP_TIMEOUT },
    async () => {
      await applyManifests();
      const built = await runWithEnv(process.env, "build", "--out", "dist/deno-operator");
      assert.equal(built.code, 0, built.stderr);
      assert.match(built.stdout, /^dist\/deno-operator \(\d+\.\d MiB\)$/m);
      const path = join(project, "dist", "deno-operator");
      const { readyMs, code, output } = await reconcileWith(path, [], {
        PATH: join(scratch, "no-runtimes-here"),
        HOME: scratch,
        KUBECONFIG: await serviceAccountKubeconfig(),
        LEADER_ELECTION_NAMESPACE: OPERATOR_NAMESPACE,
        METRICS_BIND_ADDRESS: "127.0.0.1:0",
        HEALTH_PROBE_BIND_ADDRESS: "127.0.0.1:0",
      }, "deno-binary");
      assert.equal(code, 0, output);
      const size = statSync(path).size;
      console.log(
        `deno single file: ${(size / 1024 / 1024).toFixed(1)} MiB, ready ${readyMs} ms after start`,
      );
    },
  );

  it("grants permissions that are enough: the operator runs under exactly those flags", {
    timeout: STEP_TIMEOUT,
  }, async () => {
    await applyManifests();
    const [metrics, health] = [await freePort(), await freePort()];
    const kubeconfig = await serviceAccountKubeconfig();
    const settings = {
      ...loadProject(project),
      metricsBindAddress: `127.0.0.1:${metrics}`,
      healthProbeBindAddress: `127.0.0.1:${health}`,
    };
    const { flags } = denoPermissionFlags(settings, {
      apiServers: [new URL(config.server).host],
      read: [kubeconfig],
    });
    const deno = runtimeExecutable("deno", process.env);
    const { readyMs, code, output } = await reconcileWith(deno, [
      "run",
      ...flags,
      "--config",
      join(project, "deno.json"),
      join(project, "main.ts"),
    ], {
      PATH: join(scratch, "no-runtimes-here"),
      KUBECONFIG: kubeconfig,
      LEADER_ELECTION_NAMESPACE: OPERATOR_NAMESPACE,
      METRICS_BIND_ADDRESS: settings.metricsBindAddress,
      HEALTH_PROBE_BIND_ADDRESS: settings.healthProbeBindAddress,
    }, "deno-permissions");
    assert.equal(code, 0, output);
    assert.match(output, /Elected leader/);
    assert.doesNotMatch(output, /NotCapable|Requires \w+ access/);
    console.log(`deno run with the compile permissions: ready ${readyMs} ms after start`);
  });
});

describe("the scaffold's own tests", () => {
  it("pass out of the box with deno test", { timeout: STEP_TIMEOUT }, async () => {
    const result = await run(runtimeExecutable("deno", process.env), ["test", "-A"], {
      cwd: project,
      env: { ...process.env, NO_COLOR: "1" },
    });
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    assert.match(result.stdout, /ok \| 2 passed \(3 steps\) \| 0 failed/);
  });

  it("pass out of the box with bun run test", { timeout: STEP_TIMEOUT }, async () => {
    // The script passes --timeout: Bun's 5 s default is too short to start a control plane.
    const result = await run(runtimeExecutable("bun", process.env), ["run", "test"], {
      cwd: project,
    });
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    assert.match(result.stderr, /\b3 pass\b/);
    assert.match(result.stderr, /\b0 fail\b/);
  });
});

let nodeProject: Promise<string> | undefined;

/** `rudder init --runtime node --local` of the same operator, in a directory of its own; once. */
function nodeScaffold(): Promise<string> {
  nodeProject ??= (async () => {
    const dir = join(scratch, "node");
    mkdirSync(dir);
    return await initProject(dir, NAME, { extra: ["--runtime", "node"], children });
  })();
  return nodeProject;
}

describe("a Node project (rudder init --runtime node)", () => {
  it("passes its own tests with node --test", { timeout: STEP_TIMEOUT }, async () => {
    const dir = await nodeScaffold();
    assert.equal(
      JSON.parse(readFileSync(join(dir, "package.json"), "utf8")).scripts.test,
      "node --test",
    );
    // Without the variable Node's runner sets for its children (when this suite runs on Node):
    // with it, the project's runner would report to this one instead of printing.
    const { NODE_TEST_CONTEXT: _, ...outside } = process.env;
    const result = await run(runtimeExecutable("node", process.env), ["--test"], {
      cwd: dir,
      env: { ...outside, NO_COLOR: "1" },
    });
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    assert.match(result.stdout, /^ℹ pass 3$/m);
    assert.match(result.stdout, /^ℹ fail 0$/m);
  });

  it(
    "builds a single executable that reconciles as its ServiceAccount and exits 0 on SIGTERM",
    { timeout: STEP_TIMEOUT },
    async () => {
      await applyManifests();
      const dir = await nodeScaffold();
      const built = await rudder(dir, "build", "--runtime", "node");
      assert.equal(built.code, 0, built.stderr);
      assert.match(built.stdout, new RegExp(`^dist/${NAME} \\(\\d+\\.\\d MiB\\)$`, "m"));
      const path = join(dir, "dist", NAME);
      const { readyMs, code, output } = await reconcileWith(path, [], {
        PATH: join(scratch, "no-runtimes-here"),
        HOME: scratch,
        KUBECONFIG: await serviceAccountKubeconfig(),
        LEADER_ELECTION_NAMESPACE: OPERATOR_NAMESPACE,
        METRICS_BIND_ADDRESS: "127.0.0.1:0",
        HEALTH_PROBE_BIND_ADDRESS: "127.0.0.1:0",
      }, "node-binary");
      assert.equal(code, 0, output);
      assert.match(output, /"SIGTERM\\?" received: stopping gracefully/);
      assert.doesNotMatch(output, /Forbidden|forbidden/, "the generated RBAC is enough");
      const size = statSync(path).size;
      console.log(
        `node single file: ${(size / 1024 / 1024).toFixed(1)} MiB, ready ${readyMs} ms after start`,
      );
    },
  );
});
