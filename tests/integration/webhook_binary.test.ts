// The single file `rudder build --runtime bun` makes of a `rudder init --webhooks` project,
// deployed the way `rudder manifests` says (default "rudder" certificate mode): running as its
// ServiceAccount with only the generated RBAC, it creates its certificate Secret, injects the CA
// into its webhook configurations, and serves its webhooks with that certificate.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import tls from "node:tls";
import { parse, stringify } from "yaml";
import { Secret, ValidatingWebhookConfiguration } from "../../lib/api/builtins.ts";
import { type Client, newClient } from "../../lib/client/client.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import { RestClient } from "../../lib/kube/rest.ts";
import { Environment } from "../../lib/testing/envtest.ts";
import { initProject, rudder } from "../support/cli.ts";
import { eventually } from "../support/eventually.ts";

const HOOK = { timeout: 300_000 };
const T = { timeout: 180_000 };
const NAME = "guarded-operator";
const NAMESPACE = `${NAME}-system`;
const WEBHOOK_PORT = 9443; // the generated main serves on controller-runtime's default

const env = new Environment();
let config: KubeConfig;
let client: Client;
let scratch: string;
let project: string;
let binary: string;
let deploymentEnv: { name: string; value?: string; valueFrom?: unknown }[] = [];
let child: ChildProcess | undefined;

/** The CLI of this checkout in `cwd`: its exit code and everything it printed. */
async function run(args: string[], cwd: string): Promise<{ code: number | null; output: string }> {
  const { code, stdout, stderr } = await rudder(args, { cwd });
  return { code, output: stdout + stderr };
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, () => server.close(() => resolve(true)));
  });
}

async function serviceAccountKubeconfig(): Promise<string> {
  const rest = new RestClient(config);
  try {
    const token = await rest.request<{ status: { token: string } }>({
      method: "POST",
      path: `/api/v1/namespaces/${NAMESPACE}/serviceaccounts/${NAME}-controller-manager/token`,
      body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: {} },
    });
    const path = join(scratch, "sa.kubeconfig");
    writeFileSync(
      path,
      stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{
          name: "envtest",
          cluster: { server: config.server, "certificate-authority-data": btoa(config.caData!) },
        }],
        users: [{ name: "operator", user: { token: token.status.token } }],
        contexts: [{ name: "operator", context: { cluster: "envtest", user: "operator" } }],
        "current-context": "operator",
      }),
    );
    return path;
  } finally {
    rest.close();
  }
}

before(async () => {
  config = await env.start();
  client = newClient(config);
  scratch = mkdtempSync(join(tmpdir(), "rudder-webhook-binary-"));
  project = await initProject(scratch, NAME, {
    kind: "Guard",
    group: "guard.example.com",
    extra: ["--webhooks"],
  });
  const manifests = await run(["manifests"], project);
  assert.equal(manifests.code, 0, manifests.output);
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]
    );
  // config/samples/ holds sample objects for users (rudder init's), not the manifests; the
  // Grafana dashboard's .json file is for importing by hand (its ConfigMap is a .yaml).
  const files = walk(join(project, "config"))
    .filter((f) => f.endsWith(".yaml"))
    .filter((f) => !f.endsWith("kustomization.yaml") && !f.includes("/samples/"))
    .sort((a, b) => (a.includes("namespace.yaml") ? -1 : b.includes("namespace.yaml") ? 1 : 0));
  for (const file of files) {
    const object = parse(readFileSync(file, "utf8"));
    await client.create(object);
    if (object.kind === "Deployment") {
      deploymentEnv = object.spec.template.spec.containers[0].env;
    }
  }
  const build = await run(["build", "--runtime", "bun"], project);
  assert.equal(build.code, 0, build.output);
  binary = join(project, "dist", NAME);
}, HOOK);

after(async () => {
  if (child && child.exitCode === null) child.kill("SIGKILL");
  await env.stop();
  rmSync(scratch, { recursive: true, force: true });
}, HOOK);

describe("a built operator with webhooks, in rudder certificate mode", () => {
  it("provisions its certificate with the generated RBAC and serves its webhooks", T, async (t) => {
    if (!(await portFree(WEBHOOK_PORT))) {
      t.skip(`port ${WEBHOOK_PORT} is taken on this machine`);
      return;
    }
    const operatorEnv: Record<string, string> = {};
    for (const variable of deploymentEnv) {
      operatorEnv[variable.name] = variable.value ?? NAMESPACE; // the fieldRefs: the namespace
    }
    Object.assign(operatorEnv, {
      PATH: join(scratch, "no-runtimes-here"),
      HOME: scratch,
      TMPDIR: scratch, // the certificate directory lives under it
      KUBECONFIG: await serviceAccountKubeconfig(),
      METRICS_BIND_ADDRESS: "127.0.0.1:0",
      HEALTH_PROBE_BIND_ADDRESS: "127.0.0.1:0",
    });
    assert.equal(operatorEnv.ENABLE_WEBHOOKS, "true");
    let output = "";
    child = spawn(binary, [], { env: operatorEnv, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout!.on("data", (c) => (output += c));
    child.stderr!.on("data", (c) => (output += c));
    const exited = new Promise<number | string | null>((resolve) =>
      child!.on("exit", (code, signal) => resolve(code ?? signal))
    );

    let ca = "";
    await eventually(
      "the Secret is created and its CA injected",
      async () => {
        const secret = await client.get(Secret, {
          namespace: NAMESPACE,
          name: `${NAME}-webhook-server-cert`,
        })
          .catch(() => undefined);
        if (!secret?.data?.["ca.crt"]) return false;
        ca = Buffer.from(secret.data["ca.crt"], "base64").toString();
        const hooks = await client.get(ValidatingWebhookConfiguration, {
          name: `${NAME}-validating-webhook-configuration`,
        });
        return hooks.webhooks?.[0].clientConfig.caBundle === secret.data["ca.crt"];
      },
      60_000,
      200,
    ).catch((err) => {
      throw new Error(`${err.message}; the operator wrote:\n${output}`, { cause: err });
    });

    const review = JSON.stringify({
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      request: {
        uid: "u",
        kind: { group: "guard.example.com", version: "v1alpha1", kind: "Guard" },
        resource: { group: "guard.example.com", version: "v1alpha1", resource: "guards" },
        operation: "CREATE",
        userInfo: { username: "admin" },
        object: {
          apiVersion: "guard.example.com/v1alpha1",
          kind: "Guard",
          metadata: { name: "g", namespace: "default" },
          spec: { replicas: 50, image: "registry.k8s.io/pause:3.10" },
        },
      },
    });
    // As the API server connects: to the Service's name, trusting the injected CA.
    const socket = tls.connect({
      host: "127.0.0.1",
      port: WEBHOOK_PORT,
      ca,
      servername: `${NAME}-webhook-service.${NAMESPACE}.svc`,
      ALPNProtocols: ["http/1.1"],
    });
    await new Promise<void>((resolve, reject) => {
      socket.once("secureConnect", () => resolve());
      socket.once("error", reject);
    });
    let answer = "";
    socket.on("data", (chunk) => (answer += chunk));
    const closed = new Promise((resolve) => socket.on("close", resolve));
    socket.write(
      `POST /validate-guard-example-com-v1alpha1-guard HTTP/1.1\r\nHost: webhook\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(review)}\r\n` +
        `Connection: close\r\n\r\n${review}`,
    );
    await closed;
    const body = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4));
    assert.equal(body.response.allowed, false);
    assert.match(body.response.status.message, /spec\.replicas must be at most 10, not 50/);

    await eventually("the operator leads", () => output.includes("Elected leader"), 60_000, 100);
    // process.kill, not child.kill: Deno's ChildProcess misreports the code the child chose.
    process.kill(child.pid!, "SIGTERM");
    const code = await exited;
    assert.equal(code, 0, `exit code ${code}: ${output}`);
    assert.doesNotMatch(output, /Forbidden|forbidden/, "the generated RBAC is enough");
  });
});
