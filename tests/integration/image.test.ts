// `rudder build --image` end to end, with no Docker daemon: a registry on loopback (built from
// Go modules), a distroless/cc-equivalent base made from Debian packages and pushed there, the
// scaffold's operator compiled and pushed onto it; then podman pulls the image by digest and
// runs it the way a pod would — host network, user 65532, read-only root file system, every
// capability dropped, the ServiceAccount's token, ca.crt and namespace mounted where the kubelet
// mounts them, KUBERNETES_SERVICE_HOST/PORT set, exactly the generated RBAC — and it reconciles
// a custom resource, answers /readyz and exits 0 on `podman stop`. The archive loads with
// `podman load`, and a second build gives the same digest. A Node project's single executable
// (`rudder init --runtime node`, `rudder build --runtime node --image`) runs the same way, with
// the libatomic.so.1 that Node loads and distroless/cc lacks in its layer.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createServer } from "node:net";
import { Buffer } from "node:buffer";
import { gunzipSync } from "node:zlib";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { parse } from "yaml";
import { CustomResourceDefinition } from "../../lib/api/builtins.ts";
import { resourceType } from "../../lib/api/resource.ts";
import { type Client, newClient } from "../../lib/client/client.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import { RestClient } from "../../lib/kube/rest.ts";
import { Environment } from "../../lib/testing/envtest.ts";
import type { ImageConfig, ImageManifest } from "../../cli/oci/image.ts";
import { RegistryClient } from "../../cli/oci/registry.ts";
import { readTar } from "../../cli/oci/tar.ts";
import { ensureRegistryBinary } from "../../tools/registry/build.ts";
import {
  baseImageUnavailable,
  debianBaseImage,
  pushBaseImage,
} from "../support/debian_base_image.ts";
import { initProject, rudder as rudderCli, type Run, run as runCommand } from "../support/cli.ts";
import { denortMissing } from "../support/denort.ts";
import { eventually } from "../support/eventually.ts";

const NAME = "memcached-operator";
const OPERATOR_NAMESPACE = `${NAME}-system`;
const SERVICE_ACCOUNT = `${NAME}-controller-manager`;
const SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";
/** The generated Deployment's terminationGracePeriodSeconds. */
const GRACE_SECONDS = 40;

const MINUTE = 60_000;

/** Debian's directory of shared libraries on this machine's architecture. */
const LIB_TRIPLET = process.arch === "arm64" ? "aarch64-linux-gnu" : "x86_64-linux-gnu";

function which(tool: string): boolean {
  return spawnSync("sh", ["-c", `command -v ${tool}`]).status === 0;
}

let scratch: string | undefined;
function scratchDir(): string {
  scratch ??= mkdtempSync(join(tmpdir(), "rudder-image-test-"));
  return scratch;
}

/** podman with a private storage root, the settings this machine needs, and runc. */
function podmanArgs(...args: string[]): string[] {
  const dir = join(scratchDir(), "podman");
  return [
    "--root",
    join(dir, "root"),
    "--runroot",
    join(dir, "runroot"),
    "--tmpdir",
    join(dir, "tmp"),
    "--storage-driver",
    "vfs",
    "--runtime",
    "runc",
    "--cgroup-manager",
    "cgroupfs",
    "--events-backend",
    "file",
    ...args,
  ];
}

function podmanEnv(): Record<string, string> {
  const conf = join(scratchDir(), "containers.conf");
  if (!existsSync(conf)) {
    writeFileSync(
      conf,
      '[containers]\ndefault_ulimits = []\n\n[engine]\ncgroup_manager = "cgroupfs"\n',
    );
  }
  return { ...process.env, CONTAINERS_CONF: conf } as Record<string, string>;
}

function podmanSync(...args: string[]) {
  return spawnSync("podman", podmanArgs(...args), { env: podmanEnv(), encoding: "utf8" });
}

/** Why containers cannot be run here, or false when they can. */
function containersUnavailable(): string | false {
  for (const tool of ["podman", "runc", "go"]) {
    if (!which(tool)) {
      return `${tool} is not installed (.ci/run installs podman and runc; go builds the registry)`;
    }
  }
  const base = baseImageUnavailable();
  if (base) return base;
  const info = podmanSync("info", "--format", "{{.Host.OCIRuntime.Name}}");
  if (info.status !== 0) {
    return `podman cannot run here: ${info.stderr.trim().split("\n").pop()}`;
  }
  return false;
}

const unavailable = containersUnavailable();
const denoUnavailable = unavailable || denortMissing();
// Deno's reporter shows a skipped test without its reason: say it here too.
if (unavailable) console.warn(`image.test.ts: the container tests are skipped: ${unavailable}`);
else if (denoUnavailable) {
  console.warn(`image.test.ts: the deno compile image test is skipped: ${denoUnavailable}`);
}
const children = new Set<ChildProcess>();
const containers = new Set<string>();
const env = new Environment();
let config: KubeConfig;
let client: Client;

function run(
  command: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string | undefined> } = {},
): Promise<Run> {
  return runCommand(command, args, {
    cwd: options.cwd ?? scratchDir(),
    env: options.env,
    children,
  });
}

function rudder(cwd: string, ...args: string[]): Promise<Run> {
  return rudderCli(args, { cwd, children });
}

function podman(...args: string[]): Promise<Run> {
  return run("podman", podmanArgs(...args), { env: podmanEnv() });
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

interface Setup {
  project: string;
  registry: string;
  registryClient: RegistryClient;
  baseDigest: string;
}

let setup: Promise<Setup> | undefined;

/** The registry, the base image in it, the control plane and the scaffolded project; once. */
function prepare(): Promise<Setup> {
  setup ??= (async () => {
    const binary = ensureRegistryBinary();
    const child = spawn(binary, ["-exit-on-stdin-eof"], { stdio: ["pipe", "pipe", "pipe"] });
    children.add(child);
    const registry = await new Promise<string>((resolve, reject) => {
      child.once("error", reject);
      child.stdout!.once("data", (chunk) => resolve(String(chunk).trim().split("\n")[0]));
    });
    const registryClient = new RegistryClient(registry, { insecure: true });
    const baseDigest = await pushBaseImage(
      registryClient,
      "distroless/cc-debian12",
      "nonroot",
      debianBaseImage(),
    );
    config = await env.start();
    client = newClient(config);
    const project = await initProject(scratchDir(), NAME, { children });
    const manifests = await rudder(project, "manifests");
    assert.equal(manifests.code, 0, manifests.stderr);
    const kustomization = parse(readFileSync(join(project, "config/kustomization.yaml"), "utf8"));
    for (const path of kustomization.resources as string[]) {
      const object = parse(readFileSync(join(project, "config", path), "utf8"));
      if (object.kind === "Deployment") continue; // podman plays the kubelet
      await client.create(object);
      if (object.kind === "CustomResourceDefinition") {
        await eventually("the CRD is established", async () => {
          const crd = await client.get(CustomResourceDefinition, { name: object.metadata.name });
          return !!crd.status?.conditions?.some((c) =>
            c.type === "Established" && c.status === "True"
          );
        });
      }
    }
    return { project, registry, registryClient, baseDigest };
  })();
  return setup;
}

interface Built {
  stdout: string;
  stderr: string;
  pinned: string;
  digest: string;
  seconds: number;
}

let built: Promise<Built> | undefined;

function imageRef(registry: string): string {
  return `${registry}/${NAME}:0.1.0`;
}

/** `rudder build --runtime bun --image … --push --output …`, once. */
function buildImage(): Promise<Built> {
  built ??= (async () => {
    const { project, registry } = await prepare();
    const started = Date.now();
    const result = await rudder(
      project,
      "build",
      "--runtime",
      "bun",
      "--image",
      imageRef(registry),
      "--base",
      `${registry}/distroless/cc-debian12:nonroot`,
      "--insecure-registry",
      "--push",
      "--output",
      "dist/image.tar",
    );
    assert.equal(result.code, 0, result.stderr);
    const pinned = result.stdout.trim().split("\n").pop()!;
    const digest = pinned.slice(pinned.indexOf("@") + 1);
    return {
      stdout: result.stdout,
      stderr: result.stderr,
      pinned,
      digest,
      seconds: (Date.now() - started) / 1000,
    };
  })();
  return built;
}

/** A token for the operator's ServiceAccount, with the files the kubelet would mount. */
async function serviceAccountVolume(): Promise<string> {
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
    const dir = join(scratchDir(), "serviceaccount");
    mkdirSync(dir, { recursive: true });
    // The kubelet's projected volume: files 0644 in a directory the user can list.
    chmodSync(dir, 0o755);
    writeFileSync(join(dir, "token"), request.status.token, { mode: 0o644 });
    writeFileSync(join(dir, "ca.crt"), config.caData!, { mode: 0o644 });
    writeFileSync(join(dir, "namespace"), OPERATOR_NAMESPACE, { mode: 0o644 });
    return dir;
  } finally {
    rest.close();
  }
}

/**
 * Runs `image` in podman the way a pod runs it, until it is ready and has reconciled a new
 * Memcached in `namespace`, then stops it with SIGTERM (`podman stop`) and checks it exited 0
 * within the grace period, with no RBAC denial in its log.
 */
async function runLikeAPod(image: string, namespace: string): Promise<void> {
  await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
  const serviceAccount = await serviceAccountVolume();
  const [metricsPort, healthPort] = [await freePort(), await freePort()];
  const apiServer = new URL(config.server);
  const name = `rudder-image-test-${namespace}-${process.pid}`;
  containers.add(name);
  const started = Date.now();
  const container = run(
    "podman",
    podmanArgs(
      "run",
      "--name",
      name,
      "--pull",
      "never",
      "--network",
      "host",
      "--user",
      "65532:65532",
      "--read-only",
      "--cap-drop",
      "ALL",
      "--security-opt",
      "no-new-privileges",
      "--volume",
      `${serviceAccount}:${SA_DIR}:ro`,
      "--env",
      `KUBERNETES_SERVICE_HOST=${apiServer.hostname}`,
      "--env",
      `KUBERNETES_SERVICE_PORT=${apiServer.port}`,
      "--env",
      `LEADER_ELECTION_NAMESPACE=${OPERATOR_NAMESPACE}`,
      "--env",
      `METRICS_BIND_ADDRESS=127.0.0.1:${metricsPort}`,
      "--env",
      `HEALTH_PROBE_BIND_ADDRESS=127.0.0.1:${healthPort}`,
      image,
    ),
    { env: podmanEnv() },
  );
  let exited: Run | undefined;
  container.then((result) => (exited = result));
  const logs = () => exited ? `${exited.stdout}${exited.stderr}` : "(still running)";
  try {
    await eventually(
      "the operator in the container is ready",
      async () => {
        if (exited) assert.fail(`the container exited with ${exited.code}:\n${logs()}`);
        const response = await fetch(`http://127.0.0.1:${healthPort}/readyz`)
          .catch(() => undefined);
        await response?.body?.cancel();
        return response?.status === 200;
      },
      2 * MINUTE,
      200,
    );
    const readyMs = Date.now() - started;
    const key = { namespace, name: "sample" };
    await client.create({
      apiVersion: "cache.example.com/v1alpha1",
      kind: "Memcached",
      metadata: key,
      spec: { replicas: 1, image: "registry.k8s.io/pause:3.10" },
    });
    await eventually(
      "the Memcached is Running",
      async () => {
        const object = await client.get(Memcached, key).catch(() => undefined);
        return object?.status?.phase === "Running";
      },
      2 * MINUTE,
      100,
    );

    const stopStarted = Date.now();
    const stop = await podman("stop", "--time", String(GRACE_SECONDS), name);
    assert.equal(stop.code, 0, stop.stderr);
    const result = await container;
    const stopSeconds = (Date.now() - stopStarted) / 1000;
    const output = `${result.stdout}${result.stderr}`;
    assert.equal(result.code, 0, output);
    assert.ok(stopSeconds < GRACE_SECONDS, `stopped in ${stopSeconds} s`);
    assert.match(output, /"SIGTERM\\?" received: stopping gracefully/);
    assert.doesNotMatch(output, /Forbidden|forbidden/, "the generated RBAC is enough");
    console.log(
      `${namespace}: ready ${readyMs} ms after podman run; stopped in ${stopSeconds.toFixed(1)} s`,
    );
  } catch (err) {
    podmanSync("stop", "--time", "1", name);
    await container;
    console.error(logs());
    throw err;
  }
}

after(async () => {
  for (const child of children) child.kill("SIGKILL");
  try {
    for (const name of containers) podmanSync("rm", "--force", "--time", "0", name);
    if (scratch && existsSync(join(scratch, "podman"))) podmanSync("system", "reset", "--force");
    await env.stop();
  } finally {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }
}, { timeout: 2 * MINUTE });

describe("rudder build --image", () => {
  it(
    "pushes one layer over the base that holds only the executable, run as 65532",
    { skip: unavailable, timeout: 15 * MINUTE },
    async () => {
      const { registryClient, baseDigest } = await prepare();
      const { pinned, digest, stderr, seconds } = await buildImage();
      const { registry, project } = await prepare();
      assert.match(pinned, new RegExp(`^${registry}/${NAME}@sha256:[a-f0-9]{64}$`));
      assert.equal(readFileSync(join(project, "dist", `${NAME}.image`), "utf8"), `${pinned}\n`);
      const manifests = await rudder(project, "manifests", "--image", pinned, "--out", "pinned");
      assert.equal(manifests.code, 0, manifests.stderr);
      const deployment = (parse(readFileSync(join(project, "pinned/kustomization.yaml"), "utf8"))
        .resources as string[]).map((path) =>
          parse(readFileSync(join(project, "pinned", path), "utf8"))
        ).find((object) => object.kind === "Deployment");
      assert.equal(deployment.spec.template.spec.containers[0].image, pinned);
      assert.match(stderr, new RegExp(`base .* → ${baseDigest} \\(linux/`));

      const tagged = await registryClient.getManifest(NAME, "0.1.0");
      assert.equal(tagged.digest, digest, "the tag names the digest that was printed");
      const manifest = JSON.parse(new TextDecoder().decode(tagged.bytes)) as ImageManifest;
      const base = await registryClient.getManifest("distroless/cc-debian12", baseDigest);
      const baseIndex = JSON.parse(new TextDecoder().decode(base.bytes));
      const baseManifest = JSON.parse(
        new TextDecoder().decode(
          (await registryClient.getManifest(
            "distroless/cc-debian12",
            baseIndex.manifests[0].digest,
          )).bytes,
        ),
      ) as ImageManifest;
      assert.equal(manifest.layers.length, baseManifest.layers.length + 1);
      assert.deepEqual(
        manifest.layers.slice(0, -1).map((l) => l.digest),
        baseManifest.layers.map((l) => l.digest),
      );
      assert.equal(manifest.annotations?.["org.opencontainers.image.base.digest"], baseDigest);
      assert.equal(manifest.annotations?.["org.opencontainers.image.version"], "0.1.0");
      assert.equal(
        manifest.annotations?.["org.opencontainers.image.created"],
        "1970-01-01T00:00:00Z",
      );

      const imageConfig = JSON.parse(
        new TextDecoder().decode(await registryClient.getBlob(NAME, manifest.config.digest)),
      ) as ImageConfig;
      assert.equal(imageConfig.config?.User, "65532:65532");
      assert.deepEqual(imageConfig.config?.Entrypoint, [`/${NAME}`]);
      // Rudder's environment for a Bun operator (cli/project.ts BUN_ENV), after the base's.
      for (const variable of ["MIMALLOC_PURGE_DELAY=0", "BUN_JSC_useFTLJIT=0"]) {
        assert.ok(imageConfig.config?.Env?.includes(variable), `${imageConfig.config?.Env}`);
      }

      const top = manifest.layers.at(-1)!;
      const entries = readTar(gunzipSync(await registryClient.getBlob(NAME, top.digest)));
      assert.deepEqual(
        entries.map(({ path, type, mode, uid, gid }) => ({ path, type, mode, uid, gid })),
        [{ path: NAME, type: "file", mode: 0o755, uid: 0, gid: 0 }],
      );
      const executable = readFileSync(join(project, "dist", NAME));
      assert.ok(Buffer.compare(Buffer.from(entries[0].data), executable) === 0);
      console.log(
        `rudder build --image (bun): ${seconds.toFixed(1)} s, layer ` +
          `${(top.size / 1024 / 1024).toFixed(1)} MiB compressed`,
      );
    },
  );

  it(
    "gives the same digest when it builds the same project again",
    { skip: unavailable, timeout: 15 * MINUTE },
    async () => {
      const first = await buildImage();
      const { project, registry } = await prepare();
      const again = await rudder(
        project,
        "build",
        "--runtime",
        "bun",
        "--image",
        imageRef(registry),
        "--base",
        `${registry}/distroless/cc-debian12:nonroot`,
        "--insecure-registry",
        "--output",
        "dist/again.tar",
      );
      assert.equal(again.code, 0, again.stderr);
      assert.equal(again.stdout.trim().split("\n").pop(), first.digest);
      assert.deepEqual(
        readFileSync(join(project, "dist", "again.tar")),
        readFileSync(join(project, "dist", "image.tar")),
        "the archives are byte for byte the same",
      );
    },
  );

  it(
    "writes an archive that podman load accepts",
    { skip: unavailable, timeout: 10 * MINUTE },
    async () => {
      const { project, registry } = await prepare();
      await buildImage();
      const loaded = await podman("load", "--input", join(project, "dist", "image.tar"));
      assert.equal(loaded.code, 0, loaded.stderr);
      assert.match(loaded.stdout + loaded.stderr, new RegExp(`Loaded image.*${NAME}:0\\.1\\.0`));
      const inspect = await podman(
        "image",
        "inspect",
        "--format",
        "{{.Config.User}} {{json .Config.Entrypoint}}",
        imageRef(registry),
      );
      assert.equal(inspect.code, 0, inspect.stderr);
      assert.equal(inspect.stdout.trim(), `65532:65532 ["/${NAME}"]`);
    },
  );

  it(
    "runs in podman as a pod would: reconciles with the generated RBAC, is ready, exits 0 on SIGTERM",
    { skip: unavailable, timeout: 15 * MINUTE },
    async () => {
      const { pinned, digest } = await buildImage();
      const pulled = await podman("pull", "--tls-verify=false", pinned);
      assert.equal(pulled.code, 0, pulled.stderr);
      const inspect = await podman("image", "inspect", "--format", "{{.Digest}}", pinned);
      assert.equal(inspect.stdout.trim(), digest);

      await runLikeAPod(pinned, "in-a-container");
    },
  );

  it(
    "does the same for a Node project's single executable, with libatomic in its layer",
    { skip: unavailable, timeout: 15 * MINUTE },
    async () => {
      const { registry, registryClient } = await prepare();
      const parent = join(scratchDir(), "node");
      mkdirSync(parent, { recursive: true });
      // The same operator, so the manifests prepare() applied are its own.
      const project = await initProject(parent, NAME, { extra: ["--runtime", "node"], children });
      const started = Date.now();
      const result = await rudder(
        project,
        "build",
        "--runtime",
        "node",
        "--image",
        `${registry}/${NAME}-node:0.1.0`,
        "--base",
        `${registry}/distroless/cc-debian12:nonroot`,
        "--insecure-registry",
        "--push",
      );
      assert.equal(result.code, 0, result.stderr);
      const seconds = (Date.now() - started) / 1000;
      const pinned = result.stdout.trim().split("\n").pop()!;
      const manifest = JSON.parse(
        new TextDecoder().decode((await registryClient.getManifest(`${NAME}-node`, "0.1.0")).bytes),
      ) as ImageManifest;
      const top = manifest.layers.at(-1)!;
      const entries = readTar(gunzipSync(await registryClient.getBlob(`${NAME}-node`, top.digest)));
      assert.deepEqual(
        entries.map(({ path, mode }) => ({ path, mode })),
        [
          { path: NAME, mode: 0o755 },
          { path: `usr/lib/${LIB_TRIPLET}/libatomic.so.1`, mode: 0o644 },
        ],
      );
      const pulled = await podman("pull", "--tls-verify=false", pinned);
      assert.equal(pulled.code, 0, pulled.stderr);
      await runLikeAPod(pinned, "node-in-a-container");
      console.log(
        `rudder build --image (node): ${seconds.toFixed(1)} s, executable ` +
          `${(readFileSync(join(project, "dist", NAME)).length / 1024 / 1024).toFixed(1)} MiB, ` +
          `layer ${(top.size / 1024 / 1024).toFixed(1)} MiB compressed`,
      );
    },
  );

  it(
    "does the same for deno compile's executable",
    { skip: denoUnavailable, timeout: 15 * MINUTE },
    async () => {
      const { project, registry } = await prepare();
      const result = await rudder(
        project,
        "build",
        "--out",
        "dist/deno-operator",
        "--image",
        `${registry}/${NAME}-deno:0.1.0`,
        "--base",
        `${registry}/distroless/cc-debian12:nonroot`,
        "--insecure-registry",
        "--push",
      );
      assert.equal(result.code, 0, result.stderr);
      const pinned = result.stdout.trim().split("\n").pop()!;
      const pulled = await podman("pull", "--tls-verify=false", pinned);
      assert.equal(pulled.code, 0, pulled.stderr);
      await runLikeAPod(pinned, "deno-in-a-container");
    },
  );
});
