/**
 * The files of a new operator project (`rudder init`), as text. The project has the shape of
 * `examples/example-operator`: `api/<kind>.ts` declares the custom resource,
 * `controllers/<kind>_controller.ts` reconciles it, and `main.ts` exports `setup(mgr)`, which
 * registers the controllers (what `rudder manifests` calls to derive RBAC) and starts the
 * manager when run.
 *
 * @module
 */

import { guessPlural } from "../lib/api/resource.ts";
import { VERSION } from "../lib/version.ts";

/** What a new project is made from. */
export interface ScaffoldOptions {
  /** The operator's name: a DNS label, the prefix of its Kubernetes objects. */
  name: string;
  /** API group of its custom resource, e.g. `cache.example.com`. */
  group: string;
  /** API version, e.g. `v1alpha1`. */
  version: string;
  /** Kind, e.g. `Memcached`. */
  kind: string;
  /**
   * Absolute path of a Rudder checkout to import instead of the published package (the
   * project then needs no registry: its imports map straight to the checkout's files).
   */
  local?: string;
  /**
   * Add a defaulting and validating webhook for the kind (`spec.replicas` defaulted to 1 and
   * capped at 10), served when `ENABLE_WEBHOOKS=true` (the generated Deployment sets it).
   */
  webhooks?: boolean;
}

/** The npm packages a project may import besides Rudder, at the versions Rudder uses. */
export interface DependencyVersions {
  zod: string;
  "@logtape/logtape": string;
}

const JSR_PACKAGE = "@rudder/operator";

/**
 * The package's subpaths and their files in a checkout (deno.json's `exports` without the root;
 * a unit test keeps the two equal). With `--local`, each is mapped to the checkout's file.
 */
export const SUBPATH_FILES: Readonly<Record<string, string>> = {
  client: "lib/client/mod.ts",
  cache: "lib/cache/mod.ts",
  controller: "lib/controller/mod.ts",
  handler: "lib/handler/mod.ts",
  predicate: "lib/predicate/mod.ts",
  source: "lib/source/mod.ts",
  workqueue: "lib/workqueue/mod.ts",
  manager: "lib/manager/mod.ts",
  leaderelection: "lib/leaderelection/mod.ts",
  healthz: "lib/healthz/mod.ts",
  metrics: "lib/metrics/mod.ts",
  controllerutil: "lib/controllerutil/mod.ts",
  events: "lib/events/mod.ts",
  webhook: "lib/webhook/mod.ts",
  api: "lib/api/mod.ts",
  kube: "lib/kube/mod.ts",
  testing: "lib/testing/mod.ts",
  cli: "cli/main.ts",
};

/**
 * The checkout's re-export of its own zod, which `--local` projects map `zod` to: their schemas
 * are then built with the very copy `defineResource` introspects, with no node_modules of their
 * own. (A published project gets the same zod from npm: Rudder pins it.)
 */
export const LOCAL_ZOD_FILE = "lib/api/zod.ts";

/** Import-map entries for every subpath of a checkout at `root`. */
function localSubpaths(root: string): Record<string, string> {
  return Object.fromEntries(
    Object.entries(SUBPATH_FILES).map((
      [sub, file],
    ) => [`${JSR_PACKAGE}/${sub}`, `${root}/${file}`]),
  );
}

function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** A shell word for a deno task or package.json script. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

function names(options: ScaffoldOptions) {
  const lower = options.kind.toLowerCase();
  return {
    kind: options.kind,
    lower,
    plural: guessPlural(options.kind),
    apiVersion: `${options.group}/${options.version}`,
    apiFile: `api/${lower}.ts`,
    controllerFile: `controllers/${lower}_controller.ts`,
    testFile: `controllers/${lower}_controller_test.ts`,
    webhookFile: `webhooks/${lower}_webhook.ts`,
  };
}

/** How the project reaches Rudder: the import targets and the CLI command. */
function rudderSources(options: ScaffoldOptions) {
  if (options.local) {
    const root = options.local.replace(/\/+$/, "");
    return {
      main: `${root}/mod.ts`,
      subpaths: localSubpaths(root),
      zod: `${root}/${LOCAL_ZOD_FILE}`,
      denoCli: `deno run -A ${shellWord(`${root}/cli/main.ts`)}`,
      bunCli: `bun ${shellWord(`${root}/cli/main.ts`)}`,
    };
  }
  return {
    main: `jsr:${JSR_PACKAGE}@^${VERSION}`,
    subpaths: {} as Record<string, string>,
    zod: "",
    denoCli: `deno run -A jsr:${JSR_PACKAGE}@^${VERSION}/cli`,
    bunCli: `bun node_modules/${JSR_PACKAGE}/cli/main.js`,
  };
}

function denoJson(options: ScaffoldOptions, deps: DependencyVersions): string {
  const src = rudderSources(options);
  const imports: Record<string, string> = options.local
    ? {
      [JSR_PACKAGE]: src.main,
      ...src.subpaths,
      zod: src.zod,
    }
    : {
      // A jsr: entry also maps its subpaths (@rudder/operator/testing, /api, /cli, …).
      [JSR_PACKAGE]: src.main,
      "@logtape/logtape": `npm:@logtape/logtape@^${deps["@logtape/logtape"]}`,
      zod: `npm:zod@^${deps.zod}`,
    };
  return json({
    tasks: {
      start: "deno run -A --v8-flags=--max-semi-space-size=1 main.ts",
      run: "deno run -A --v8-flags=--max-semi-space-size=1 main.ts",
      test: "deno test -A",
      rudder: src.denoCli,
      dev: "deno task rudder dev",
      manifests: "deno task rudder manifests",
      build: "deno task rudder build",
      check: "deno fmt --check && deno lint && deno check",
      ...imageTasks(options, "deno task rudder build"),
    },
    imports,
    // With --local, npm packages resolve from the checkout's node_modules, as in Node.
    ...(options.local ? { nodeModulesDir: "manual" } : {}),
    fmt: { lineWidth: 100, proseWrap: "preserve", exclude: ["config/"] },
    lint: { rules: { tags: ["recommended"] } },
    exclude: ["dist/", "node_modules/", "bun_test_setup.ts"],
  });
}

function packageJson(options: ScaffoldOptions, deps: DependencyVersions): string {
  const src = rudderSources(options);
  return json({
    name: options.name,
    version: "0.1.0",
    private: true,
    type: "module",
    scripts: {
      start: "bun main.ts",
      run: "bun main.ts",
      // Bun's default of 5 s per test and hook is too short to start a local control plane.
      test: "bun test --timeout 120000",
      rudder: src.bunCli,
      dev: `${src.bunCli} dev --runtime bun`,
      manifests: `${src.bunCli} manifests`,
      build: `${src.bunCli} build --runtime bun`,
      ...imageTasks(options, `${src.bunCli} build`),
    },
    dependencies: options.local ? {} : {
      // JSR packages install from npm.jsr.io under the @jsr scope (see .npmrc).
      [JSR_PACKAGE]: `npm:@jsr/rudder__operator@^${VERSION}`,
      "@logtape/logtape": `^${deps["@logtape/logtape"]}`,
      zod: `^${deps.zod}`,
    },
  });
}

function tsconfigJson(options: ScaffoldOptions): string {
  const src = rudderSources(options);
  return json({
    compilerOptions: {
      strict: true,
      target: "ESNext",
      module: "ESNext",
      moduleResolution: "bundler",
      allowImportingTsExtensions: true,
      noEmit: true,
      ...(options.local
        ? {
          // Bun resolves these at run time and in `bun build`; Deno uses deno.json's imports.
          paths: {
            [JSR_PACKAGE]: [src.main],
            ...Object.fromEntries(
              Object.entries(src.subpaths).map(([name, file]) => [name, [file]]),
            ),
            zod: [src.zod],
          },
        }
        : {}),
    },
  });
}

function rudderJson(options: ScaffoldOptions): string {
  const n = names(options);
  return json({
    name: options.name,
    namespace: `${options.name}-system`,
    image: `${options.name}:0.1.0`,
    main: "main.ts",
    setup: "setup",
    api: [n.apiFile],
    metricsBindAddress: ":8443",
    healthProbeBindAddress: ":8081",
    rbac: [],
    permissions: options.webhooks
      ? {
        apiServers: [],
        // The webhook server: its port, and the loopback server its connections are forwarded to.
        net: ["0.0.0.0:9443", "127.0.0.1"],
        read: ["/tmp/k8s-webhook-server/serving-certs"],
        env: [
          "ENABLE_WEBHOOKS",
          "LOG_FORMAT",
          "METRICS_SERVING",
          "TMPDIR",
          "WEBHOOK_CERT_NAMESPACE",
          "WEBHOOK_CERT_SECRET",
          "WEBHOOK_CONVERSION_CRDS",
          "WEBHOOK_MUTATING_CONFIGURATIONS",
          "WEBHOOK_SERVICE",
          "WEBHOOK_VALIDATING_CONFIGURATIONS",
        ],
      }
      : { apiServers: [], net: [], read: [], env: ["LOG_FORMAT", "METRICS_SERVING"] },
  });
}

function apiModule(options: ScaffoldOptions): string {
  const { kind } = names(options);
  return `/**
 * The ${kind} custom resource: what its users ask for (spec) and what the operator reports
 * (status). One zod schema gives the TypeScript type, the validator and the CRD.
 *
 * @module
 */

import { z } from "zod";
import { conditionsSchema, defineResource, type ObjectOf, phaseSchema } from "@rudder/operator";

/** The ${kind} kind: its resource type, CRD, validator and TypeScript type in one. */
export const ${kind} = defineResource({
  group: "${options.group}",
  version: "${options.version}",
  kind: "${kind}",
  scope: "Namespaced",
  spec: z.object({
    message: z.string().default("hello").describe("What the ${kind}'s ConfigMap holds."),${
    options.webhooks
      ? `
    replicas: z.number().int().min(0).optional()
      .describe("How many copies; defaulted to 1 and capped at 10 by the webhooks."),`
      : ""
  }
  }),
  status: z.object({
    phase: phaseSchema(["Pending", "Ready"]).optional(),
    observedGeneration: z.number().int().optional(),
    conditions: conditionsSchema.optional(),
  }),
  printerColumns: [
    { name: "Phase", jsonPath: ".status.phase" },
    { name: "Age", jsonPath: ".metadata.creationTimestamp", type: "date" },
  ],
});

/** A ${kind} object. */
export type ${kind} = ObjectOf<typeof ${kind}>;
`;
}

function controllerModule(options: ScaffoldOptions): string {
  const { kind, lower } = names(options);
  return `/**
 * The ${kind} controller: each ${kind} owns a ConfigMap of the same name that holds its
 * \`spec.message\`; its status reports the phase and a Ready condition.
 *
 * @module
 */

import {
  clone,
  ConfigMap,
  createOrUpdate,
  ignoreNotFound,
  type Manager,
  mergeFrom,
  newControllerManagedBy,
  type ReconcileContext,
  type Reconciler,
  type Request,
  type Result,
  setControllerReference,
  setStatusCondition,
} from "@rudder/operator";
import type { ObjectClient } from "@rudder/operator/controllerutil";
import { ${kind} } from "../api/${lower}.ts";

/** Reconciles ${kind} objects. */
export class ${kind}Reconciler implements Reconciler {
  readonly #client: ObjectClient;

  /** Reads and writes through \`client\`: the manager's, or a FakeClient in unit tests. */
  constructor(client: ObjectClient) {
    this.#client = client;
  }

  /** Drives one ${kind} towards its spec. */
  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result> {
    const instance = await this.#client.get(${kind}, req).catch(ignoreNotFound);
    if (!instance) return {}; // deleted: its ConfigMap goes with it (garbage collection)

    const { result } = await createOrUpdate<ConfigMap>(
      this.#client,
      {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: req.name, namespace: req.namespace },
      },
      (configMap) => {
        configMap.data = { ...configMap.data, message: instance.spec.message };
        setControllerReference(instance, configMap);
      },
    );
    if (result !== "unchanged") {
      ctx.log.info("ConfigMap {name} {result}", { name: req.name, result });
    }

    // Objects from the cache are frozen: change a copy, then patch the difference.
    const updated = clone(instance);
    const status = (updated.status ??= {});
    status.phase = "Ready";
    status.observedGeneration = instance.metadata?.generation;
    status.conditions ??= [];
    setStatusCondition(status.conditions, {
      type: "Ready",
      status: "True",
      reason: "ConfigMapUpToDate",
      message: \`ConfigMap \${req.name} holds the message\`,
      observedGeneration: instance.metadata?.generation,
    });
    if (JSON.stringify(updated.status) !== JSON.stringify(instance.status)) {
      await this.#client.status().patch(updated, mergeFrom(instance));
    }
    return {};
  }
}

/** Registers the ${kind} controller with the manager: for ${kind}s, owning ConfigMaps. */
export function setup${kind}Controller(mgr: Manager): void {
  newControllerManagedBy(mgr)
    .for(${kind})
    .owns(ConfigMap)
    .complete(new ${kind}Reconciler(mgr.getClient()));
}
`;
}

function mainModule(options: ScaffoldOptions): string {
  const { kind, lower } = names(options);
  return `/**
 * The ${options.name} operator's entry point. In a cluster the Deployment of \`rudder manifests\`
 * sets its environment: LEADER_ELECTION_NAMESPACE (the pod's namespace), METRICS_BIND_ADDRESS
 * and HEALTH_PROBE_BIND_ADDRESS. Metrics are served over HTTPS to scrapers the API server
 * authenticates and authorises (bind the \`${options.name}-metrics-reader\` ClusterRole);
 * METRICS_SERVING=insecure-http serves plain HTTP to anyone instead, for local development.
 * Outside a cluster it uses your kubeconfig and needs LEADER_ELECTION_NAMESPACE set (\`rudder dev\`
 * does all of this for you). LOG_FORMAT=dev prints readable lines instead of JSON.
 *
 * @module
 */

import process from "node:process";
import { configureLogging, Manager, type ManagerOptions } from "@rudder/operator";
import { LeaderElectionLostError } from "@rudder/operator/leaderelection";
import { describeError } from "@rudder/operator/manager";${
    options.webhooks
      ? `\nimport { webhookCertificatesFromEnv } from "@rudder/operator/webhook";`
      : ""
  }
import { setup${kind}Controller } from "./controllers/${lower}_controller.ts";${
    options.webhooks
      ? `\nimport { setup${kind}Webhook } from "./webhooks/${lower}_webhook.ts";`
      : ""
  }

/**
 * Registers this operator's controllers${
    options.webhooks ? ", webhooks" : ""
  } and checks with \`mgr\`. \`rudder manifests\` calls it
 * with a manager that never starts, to learn what the controllers watch (their RBAC).
 */
export function setup(mgr: Manager${
    options.webhooks ? ", options: { webhooks?: boolean } = {}" : ""
  }): void {
  mgr.addHealthzCheck("ping", () => {});
  setup${kind}Controller(mgr);${
    options.webhooks ? `\n  if (options.webhooks ?? true) setup${kind}Webhook(mgr);` : ""
  }
}

/** The operator's manager, configured from the environment, with its controllers. */
export function createManager(overrides: Partial<ManagerOptions> = {}): Manager {${
    options.webhooks ? `\n  const webhooks = process.env.ENABLE_WEBHOOKS === "true";` : ""
  }
  const mgr = new Manager({${
    options.webhooks
      ? `
    // Without cert-manager, the operator provisions its webhook certificate (WEBHOOK_CERT_*).
    ...(webhooks ? { webhookCertificates: webhookCertificatesFromEnv(process.env) } : {}),`
      : ""
  }
    metricsBindAddress: process.env.METRICS_BIND_ADDRESS ?? ":8443",
    // Plain HTTP only when asked for in so many words; anything else serves HTTPS.
    metricsServing: process.env.METRICS_SERVING === "insecure-http" ? "insecure-http" : "secure",
    healthProbeBindAddress: process.env.HEALTH_PROBE_BIND_ADDRESS ?? ":8081",
    leaderElection: true,
    leaderElectionID: "${options.name}-leader",
    leaderElectionNamespace: process.env.LEADER_ELECTION_NAMESPACE,
    // The process exits right after a graceful stop, so the next replica may lead at once.
    leaderElectionReleaseOnCancel: true,
    ...overrides,
  });
  setup(mgr${options.webhooks ? ", { webhooks }" : ""});
  return mgr;
}

if (import.meta.main) {
  try {
    await configureLogging({
      dev: process.env.LOG_FORMAT === "dev",
      categories: [["${options.name}"]],
    });
    await createManager().start(); // until SIGTERM or SIGINT, then a graceful stop
  } catch (err) {
    // One line that names the problem: no stack trace, no page of bundled source.
    console.error(
      err instanceof LeaderElectionLostError
        ? \`leadership lost: \${err.message}\`
        : describeError(err),
    );
    process.exit(1);
  }
}
`;
}

function controllerTest(options: ScaffoldOptions): string {
  const { kind, lower, apiVersion } = names(options);
  return `// The ${kind} controller, tested two ways: its reconciler against FakeClient (in memory, no
// cluster), and the whole operator against a real local control plane (etcd + kube-apiserver,
// started by Environment; \`rudder envtest setup\` builds them, or set KUBEBUILDER_ASSETS).
// Every hook and test states its timeout: a control plane can take a minute to start on a busy
// machine. (Bun runs node:test hooks under bun test's own default, 5 s, whatever they ask for;
// bunfig.toml preloads bun_test_setup.ts, which raises it.)
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { type Client, ConfigMap, newClient } from "@rudder/operator";
import type { Logger } from "@rudder/operator/manager";
import { Environment, FakeClient } from "@rudder/operator/testing";
import { ${kind} } from "../api/${lower}.ts";
import { createManager } from "../main.ts";
import { ${kind}Reconciler } from "./${lower}_controller.ts";

const quiet: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  with: () => quiet,
};

async function eventually(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) assert.fail(\`timed out waiting until \${what}\`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Milliseconds for starting the control plane: Environment gives up after 2 min itself. */
const START_TIMEOUT = 180_000;
/** Milliseconds for a test on the control plane, or for stopping it. */
const TEST_TIMEOUT = 60_000;

describe("${kind}Reconciler", () => {
  it("creates the ConfigMap it owns and reports Ready", { timeout: TEST_TIMEOUT }, async () => {
    const key = { namespace: "default", name: "sample" };
    const client = new FakeClient({ types: [${kind}] });
    await client.create({
      apiVersion: "${apiVersion}",
      kind: "${kind}",
      metadata: key,
      spec: { message: "hi" },
    });
    const ctx = { signal: new AbortController().signal, log: quiet, reconcileID: "test" };
    await new ${kind}Reconciler(client).reconcile(key, ctx);

    const configMap = await client.get(ConfigMap, key);
    assert.equal(configMap.data?.message, "hi");
    assert.equal(configMap.metadata?.ownerReferences?.[0]?.kind, "${kind}");
    const reconciled = await client.get(${kind}, key);
    assert.equal(reconciled.status?.phase, "Ready");
  });
});

describe("the ${options.name} operator on a local control plane", () => {
  const env = new Environment({ crds: [${kind}] });
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

  it("reconciles a ${kind}: its ConfigMap holds the message and its status is Ready", {
    timeout: TEST_TIMEOUT,
  }, async () => {
    const key = { namespace: "default", name: "hello" };
    await client.create({
      apiVersion: "${apiVersion}",
      kind: "${kind}",
      metadata: key,
      spec: { message: "hello, world" },
    });
    await eventually(
      "the ${kind} is Ready",
      async () => (await client.get(${kind}, key)).status?.phase === "Ready",
    );
    const configMap = await client.get(ConfigMap, key);
    assert.equal(configMap.data?.message, "hello, world");
  });
});
`;
}

/** Milliseconds bun test allows a test or hook that states no timeout of its own. */
const BUN_TEST_TIMEOUT_MS = 300_000;

function bunfigToml(): string {
  return `# bun test: bun_test_setup.ts raises the default timeout of tests and hooks (5 s) before
# any test file loads.
[test]
preload = ["./bun_test_setup.ts"]
`;
}

function bunTestSetup(): string {
  return `// Preloaded by bun test (bunfig.toml). Bun runs node:test's before and after hooks under its
// default timeout, 5 s, whatever timeout they ask for; starting a local control plane takes
// longer on a busy machine. Deno has no default timeout and never loads this file (deno.json
// excludes it).
import { setDefaultTimeout } from "bun:test";

setDefaultTimeout(${BUN_TEST_TIMEOUT_MS});
`;
}

function dockerfile(options: ScaffoldOptions): string {
  return `# The alternative to \`rudder build --image\` (which needs no Docker daemon) for those who
# build images with docker or podman. The operator is one self-contained executable
# (\`rudder build\`), so the image needs no runtime: distroless/cc has glibc and nothing else (no
# shell, no package manager). Build the binary for the image's platform first, e.g.
# \`deno task build --target x86_64-unknown-linux-gnu\`.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY dist/${options.name} /${options.name}
USER 65532:65532
ENTRYPOINT ["/${options.name}"]
`;
}

/** A Markdown table laid out the way `deno fmt` lays it out. */
function markdownTable(rows: string[][]): string {
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  const line = (cells: string[]) =>
    `| ${cells.map((cell, column) => cell.padEnd(widths[column])).join(" | ")} |`;
  return [line(rows[0]), line(widths.map((w) => "-".repeat(w))), ...rows.slice(1).map(line)]
    .join("\n");
}

function readme(options: ScaffoldOptions): string {
  const n = names(options);
  const local = options.local
    ? `
This project imports Rudder from the checkout at \`${options.local}\` (\`rudder init --local\`): the
imports in \`deno.json\` (Deno) and the \`paths\` in \`tsconfig.json\` (Bun) map \`@rudder/operator\`
to its files, and npm packages resolve from that checkout's \`node_modules\`.
\`node_modules/@types/node\` links to the checkout's, because Deno's type checker looks for Node's
types there. No registry is needed. To use the published package instead, run \`rudder init\`
without \`--local\` and copy your code over.
`
    : "";
  return `# ${options.name}

A Kubernetes operator written with [Rudder](https://jsr.io/${JSR_PACKAGE}): it reconciles
\`${n.kind}\` objects (\`${n.apiVersion}\`). Each ${n.kind} owns a ConfigMap that holds its
\`spec.message\`, and its status reports \`Ready\`.
${local}
## Layout

${
    markdownTable([
      ["path", "what it is"],
      [`\`${n.apiFile}\``, `the ${n.kind} custom resource: spec and status as one zod schema`],
      [`\`${n.controllerFile}\``, `the reconciler and \`setup${n.kind}Controller(mgr)\``],
      [`\`${n.testFile}\``, "its tests: FakeClient, and the operator on a local control plane"],
      ["`main.ts`", "`setup(mgr)` registers the controllers; run, it starts the manager"],
      ["`rudder.json`", "name, namespace, image, ports, extra RBAC rules and Deno permissions"],
      ["`bunfig.toml`", "`bun test` settings: preloads `bun_test_setup.ts` (test timeouts)"],
      ["`Dockerfile`", "for `docker build`, the alternative to `rudder build --image`"],
    ])
  }

## Develop

\`\`\`sh
deno task test        # unit tests and the operator against a local control plane
deno task dev         # a local control plane, the CRDs, the operator; restarts on changes
\`\`\`

With Bun: \`bun run test\`, \`bun run dev\`. The local control plane needs etcd and kube-apiserver:
\`deno task rudder envtest setup\` builds them (with Go) and \`deno task rudder envtest env\` prints
the \`KUBEBUILDER_ASSETS\` to export.

## Deploy

\`\`\`sh
deno task build --image ghcr.io/me/${options.name}:0.1.0 --push
deno task manifests --image "$(cat dist/${options.name}.image)"
kubectl apply -k config/
\`\`\`

\`deno task build --image <ref> --push\` compiles \`dist/${options.name}\`, puts it as one layer on
\`gcr.io/distroless/cc-debian12:nonroot\` (\`--base\` to change it), runs it as user 65532, and
pushes the image with no Docker daemon (credentials come from \`~/.docker/config.json\`). It
prints the image's \`ref@sha256:…\` and writes it to \`dist/${options.name}.image\`, and
\`deno task manifests --image …\` makes the Deployment (in \`config/\`, with the CRDs and RBAC) use
exactly that digest. \`--output image.tar\` writes an archive for \`docker load\` or
\`podman load\` instead. The same executable and base give the same digest (\`SOURCE_DATE_EPOCH\`
sets the image's time; without it, the epoch).

With a Docker daemon instead: \`deno task build && docker build -t ${options.name}:0.1.0 .\`

\`deno task build\` compiles with \`deno compile\` and only the permissions the operator needs;
add \`--api-server <host:port>\` (the cluster's \`kubernetes\` Service) to limit its network access to
that API server. \`deno task build --runtime bun\` uses \`bun build --compile\`. The ClusterRole is
derived from what the controllers watch and own; add rules the reconciler needs beyond those to
\`rbac\` in \`rudder.json\`. Leader election gets a Role in the operator's namespace only.

Metrics are served over HTTPS on port 8443 (the Service
\`${options.name}-controller-manager-metrics-service\`), with a certificate the operator makes
for itself, to scrapers whose token the API server accepts and whose ServiceAccount is bound to the
ClusterRole \`${options.name}-metrics-reader\`. \`deno task dev\` serves them over plain HTTP.
`;
}

function webhookModule(options: ScaffoldOptions): string {
  const { kind, lower } = names(options);
  return `/**
 * The ${kind} webhooks: a defaulter (\`spec.replicas\` is 1 unless set) and a validator that caps
 * \`spec.replicas\` at \`MAX_REPLICAS\`. The API server calls them before it stores a ${kind}.
 *
 * @module
 */

import type { Manager } from "@rudder/operator";
import { AdmissionDeniedError, newWebhookManagedBy } from "@rudder/operator/webhook";
import { ${kind} } from "../api/${lower}.ts";

/** The most copies a ${kind} may ask for. */
export const MAX_REPLICAS = 10;

function validate(${lower}: ${kind}): string[] {
  const replicas = ${lower}.spec.replicas ?? 1;
  if (replicas > MAX_REPLICAS) {
    throw new AdmissionDeniedError(
      \`spec.replicas must be at most \${MAX_REPLICAS}, not \${replicas}\`,
      { code: 422, reason: "Invalid" },
    );
  }
  return [];
}

/** Registers the ${kind} webhooks with the manager's webhook server. */
export function setup${kind}Webhook(mgr: Manager): void {
  newWebhookManagedBy(mgr).for(${kind})
    .withDefaulter((${lower}) => {
      ${lower}.spec.replicas ??= 1;
    })
    .withValidator({
      validateCreate: (${lower}) => validate(${lower}),
      validateUpdate: (_old, ${lower}) => validate(${lower}),
    })
    .complete();
}
`;
}

/** The files of a new project, by path relative to its directory. */
export function scaffold(
  options: ScaffoldOptions,
  deps: DependencyVersions,
): Map<string, string> {
  const n = names(options);
  const files = new Map<string, string>([
    ["deno.json", denoJson(options, deps)],
    ["package.json", packageJson(options, deps)],
    ["tsconfig.json", tsconfigJson(options)],
    ["rudder.json", rudderJson(options)],
    ["main.ts", mainModule(options)],
    [n.apiFile, apiModule(options)],
    [n.controllerFile, controllerModule(options)],
    [n.testFile, controllerTest(options)],
    ["bunfig.toml", bunfigToml()],
    ["bun_test_setup.ts", bunTestSetup()],
    ...(options.webhooks ? [[n.webhookFile, webhookModule(options)] as [string, string]] : []),
    ["Dockerfile", dockerfile(options)],
    [".dockerignore", `*\n!dist/${options.name}\n`],
    [".gitignore", "dist/\nnode_modules/\n"],
    ["README.md", readme(options)],
  ]);
  if (!options.local) files.set(".npmrc", "@jsr:registry=https://npm.jsr.io\n");
  for (const [path, content] of sampleFiles(options)) files.set(path, content);
  return files;
}

/**
 * The image tasks of a project: `image` makes the image with `rudder build --image` (no Docker
 * daemon) as an archive `podman load`, `docker load` or `kind load image-archive` take;
 * `image:push` pushes it to the registry its reference names (put yours in the task first);
 * `docker-build` is the alternative with a Docker daemon and the scaffold's Dockerfile.
 */
function imageTasks(options: ScaffoldOptions, build: string): Record<string, string> {
  const ref = `${options.name}:0.1.0`;
  return {
    image: `${build} --runtime bun --image ${ref} --output dist/${options.name}-image.tar`,
    "image:push": `${build} --runtime bun --image ${ref} --push`,
    "docker-build": `docker build -t ${ref} .`,
  };
}

/** The path of a kind's sample object, as kubebuilder names it: `config/samples/<group>_<version>_<kind>.yaml`. */
export function samplePath(options: Pick<ScaffoldOptions, "group" | "version" | "kind">): string {
  return `config/samples/${options.group}_${options.version}_${options.kind.toLowerCase()}.yaml`;
}

/** A sample object of a kind, for `kubectl apply -f config/samples/`. */
export function sampleObject(options: Pick<ScaffoldOptions, "group" | "version" | "kind">): string {
  const lower = options.kind.toLowerCase();
  return [
    `apiVersion: ${options.group}/${options.version}`,
    `kind: ${options.kind}`,
    "metadata:",
    `  name: ${lower}-sample`,
    "spec:",
    `  message: hello from ${lower}-sample`,
    "",
  ].join("\n");
}

/** `config/samples/`: one sample object per kind and the kustomization that lists them. */
export function sampleFiles(options: ScaffoldOptions): Map<string, string> {
  const path = samplePath(options);
  return new Map([
    [path, sampleObject(options)],
    ["config/samples/kustomization.yaml", sampleKustomization([path])],
  ]);
}

/** The kustomization of `config/samples/` listing `paths` (relative to the project). */
export function sampleKustomization(paths: string[]): string {
  const names = paths.map((path) => path.replace(/^config\/samples\//, ""));
  return ["resources:", ...names.map((name) => `  - ${name}`), ""].join("\n");
}

/**
 * The files `rudder create api` adds for a new kind: its resource, its controller and their
 * tests. `allKinds` lists every kind of the project after the addition, with its api module,
 * so the new test's local control plane serves every CRD the operator's controllers watch.
 */
export function apiFiles(
  options: ScaffoldOptions,
  allKinds: { kind: string; file: string }[],
): Map<string, string> {
  const n = names(options);
  return new Map([
    [n.apiFile, apiModule(options)],
    [n.controllerFile, controllerModule(options)],
    [n.testFile, withEnvironmentKinds(controllerTest(options), n.kind, allKinds)],
  ]);
}

/**
 * A test module whose `new Environment({ crds: [...] })` also installs `kinds`, with their
 * imports added after the module's import of `own` (its own kind); kinds already there are kept.
 */
export function withEnvironmentKinds(
  test: string,
  own: string,
  kinds: { kind: string; file: string }[],
): string {
  const match = test.match(/new Environment\(\{ crds: \[([^\]]*)\] \}\)/);
  if (!match) return test;
  const present = match[1].split(",").map((name) => name.trim()).filter((name) => name !== "");
  const missing = kinds.filter(({ kind }) => !present.includes(kind));
  if (missing.length === 0) return test;
  const list = [...present, ...missing.map(({ kind }) => kind)].join(", ");
  let out = test.replace(match[0], `new Environment({ crds: [${list}] })`);
  const ownImport = new RegExp(`^import \\{ ${own} \\} from "[^"]+";$`, "m");
  const imports = missing.map(({ kind, file }) => `import { ${kind} } from "../${file}";`);
  out = out.replace(ownImport, (line) => [line, ...imports].join("\n"));
  return out;
}
