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
import { denoV8FlagsArg, envAssignments } from "./project.ts";

/** The scaffold's `start` and `run` task: the operator with Rudder's environment and V8 flags. */
const RUN_OPERATOR = [...envAssignments("deno"), "deno run -A", denoV8FlagsArg(), "main.ts"].join(
  " ",
);

/** The scaffold's `start` and `run` script on Bun: the operator with Rudder's environment. */
const RUN_OPERATOR_BUN = [...envAssignments("bun"), "bun main.ts"].join(" ");

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
    webhookTestFile: `webhooks/${lower}_webhook_test.ts`,
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
      start: RUN_OPERATOR,
      run: RUN_OPERATOR,
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
      start: RUN_OPERATOR_BUN,
      run: RUN_OPERATOR_BUN,
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

/**
 * The Deno permissions the webhook server needs, in `rudder.json`'s `permissions`: its port and
 * the loopback server its connections are forwarded to, its certificate directory, and the
 * environment `main.ts` and `webhookCertificatesFromEnv` read.
 */
export const WEBHOOK_PERMISSIONS: {
  readonly net: readonly string[];
  readonly read: readonly string[];
  readonly env: readonly string[];
} = {
  net: ["0.0.0.0:9443", "127.0.0.1"],
  read: ["/tmp/k8s-webhook-server/serving-certs"],
  env: [
    "ENABLE_WEBHOOKS",
    "TMPDIR",
    "WEBHOOK_CERT_NAMESPACE",
    "WEBHOOK_CERT_SECRET",
    "WEBHOOK_CONVERSION_CRDS",
    "WEBHOOK_MUTATING_CONFIGURATIONS",
    "WEBHOOK_SERVICE",
    "WEBHOOK_VALIDATING_CONFIGURATIONS",
  ],
};

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
        net: [...WEBHOOK_PERMISSIONS.net],
        read: [...WEBHOOK_PERMISSIONS.read],
        env: [...new Set(["LOG_FORMAT", "METRICS_SERVING", ...WEBHOOK_PERMISSIONS.env])].sort(),
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
    replicas: z.number().int().min(0).default(1).describe("How many pods the Deployment runs."),
    image: z.string().default("registry.k8s.io/pause:3.10").describe("Image of those pods."),
  }),
  status: z.object({
    phase: phaseSchema(["Pending", "Running", "Deleting"]).optional(),
    observedGeneration: z.number().int().optional(),
    conditions: conditionsSchema.optional(),
  }),
  printerColumns: [
    { name: "Replicas", jsonPath: ".spec.replicas" },
    { name: "Phase", jsonPath: ".status.phase" },
    { name: "Age", jsonPath: ".metadata.creationTimestamp", type: "date" },
  ],
});

/** A ${kind} object. */
export type ${kind} = ObjectOf<typeof ${kind}>;
`;
}

/**
 * The controller of a kind: the example operator's (`examples/example-operator`, which a unit
 * test keeps equal to this template for its Example kind). Each object owns a Deployment, uses a
 * finalizer, records Events and reports a phase and a Ready condition.
 */
function controllerModule(options: ScaffoldOptions): string {
  const { kind, lower } = names(options);
  return `/**
 * The ${kind} reconciler: each ${kind} owns a Deployment with \`spec.replicas\` pods; its status
 * reports the phase and a Ready condition; a finalizer lets it clean up before it goes away.
 *
 * @module
 */

import {
  addFinalizer,
  clone,
  containsFinalizer,
  createOrUpdate,
  Deployment,
  ignoreNotFound,
  type Manager,
  mergeFrom,
  newControllerManagedBy,
  type ReconcileContext,
  type Reconciler,
  removeFinalizer,
  type Request,
  type Result,
  setControllerReference,
  setStatusCondition,
} from "@rudder/operator";
import type { appsv1, corev1 } from "@rudder/operator/api";
import type { ObjectClient } from "@rudder/operator/controllerutil";
import type { EventRecorder } from "@rudder/operator/events";
import { ${kind} } from "../api/${lower}.ts";

type DeploymentSpec = appsv1.DeploymentSpec;
type PodTemplateSpec = corev1.PodTemplateSpec;

/** The finalizer that makes deletion wait for the reconciler's clean-up. */
export const FINALIZER = "${options.group}/cleanup";

/** How long a healthy ${kind} waits before it is looked at again. */
export const RESYNC_MS = 5 * 60_000;

/** Reconciles ${kind} objects. */
export class ${kind}Reconciler implements Reconciler {
  readonly #client: ObjectClient;
  readonly #recorder: EventRecorder | undefined;

  /**
   * Reads and writes through \`client\` (the manager's, or a FakeClient in unit tests) and
   * records Events with \`recorder\` when there is one.
   */
  constructor(client: ObjectClient, recorder?: EventRecorder) {
    this.#client = client;
    this.#recorder = recorder;
  }

  /** Drives one ${kind} towards its spec. */
  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result> {
${
    fitLine(
      `    const instance = await this.#client.get(${kind}, req).catch(ignoreNotFound);`,
      `    const instance = await this.#client.get(${kind}, req).catch(\n      ignoreNotFound,\n    );`,
    )
  }
    if (!instance) return {}; // deleted: nothing to do

    // Objects from the cache are frozen: change a copy (clone), then patch the difference.
    if (instance.metadata?.deletionTimestamp) {
      if (!containsFinalizer(instance, FINALIZER)) return {};
      // The Deployment goes with its owner (garbage collection); here the clean-up is a log and
      // an event, then the finalizer is removed and the ${kind} disappears.
      ctx.log.info("Cleaning up ${kind} {name}", { name: req.name });
      this.#recorder?.event(instance, "Normal", "CleanedUp", "Delete", "finalizer ran");
      const done = clone(instance);
      removeFinalizer(done, FINALIZER);
      await this.#client.patch(done, mergeFrom(instance));
      return {};
    }

    if (!containsFinalizer(instance, FINALIZER)) {
      const withFinalizer = clone(instance);
      addFinalizer(withFinalizer, FINALIZER);
      await this.#client.patch(withFinalizer, mergeFrom(instance));
      // The patch's own event brings the ${kind} back with its finalizer.
      return {};
    }

    const labels = {
      "app.kubernetes.io/name": "${lower}",
      "${options.group}/instance": req.name,
    };
    const { result } = await createOrUpdate<Deployment>(
      this.#client,
      {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: req.name, namespace: req.namespace },
      },
      (deployment) => {
        // Set only the fields this operator owns: the API server defaults the rest, and
        // replacing the whole spec would undo its defaults and update on every pass.
        const spec: DeploymentSpec = deployment.spec ??= {
          selector: { matchLabels: labels },
          template: {},
        };
        spec.replicas = instance.spec.replicas;
        spec.selector ??= { matchLabels: labels }; // immutable once created
        const template: PodTemplateSpec = spec.template ??= {};
        template.metadata = {
          ...template.metadata,
          labels: { ...template.metadata?.labels, ...labels },
        };
        const pod = template.spec ??= { containers: [] };
        const app = pod.containers.find((c) => c.name === "app");
        if (app) app.image = instance.spec.image;
        else pod.containers.push({ name: "app", image: instance.spec.image });
        setControllerReference(instance, deployment);
      },
    );
    if (result !== "unchanged") {
      ctx.log.info("Deployment {name} {result}", { name: req.name, result });
      this.#recorder?.event(instance, "Normal", "Deployed", "Reconcile", \`Deployment \${result}\`);
    }

    const updated = clone(instance);
    const status = (updated.status ??= {});
    status.phase = "Running";
    status.observedGeneration = instance.metadata?.generation;
    status.conditions ??= [];
    setStatusCondition(status.conditions, {
      type: "Ready",
      status: "True",
      reason: "DeploymentUpToDate",
      message: \`Deployment \${req.name} asks for \${instance.spec.replicas} replicas\`,
      observedGeneration: instance.metadata?.generation,
    });
    if (JSON.stringify(updated.status) !== JSON.stringify(instance.status)) {
      await this.#client.status().patch(updated, mergeFrom(instance));
      ctx.log.info("${kind} {name} is {phase}", {
        name: req.name,
        phase: status.phase,
      });
    }
    return { requeueAfter: RESYNC_MS };
  }
}

/** Registers the ${kind} controller with the manager: for ${kind}s, owning Deployments. */
export function setup${kind}Controller(mgr: Manager): void {
  const recorder = mgr.getEventRecorderFor("${lower}-controller");
  newControllerManagedBy(mgr)
    .for(${kind})
    .owns(Deployment)
    .withOptions({ maxConcurrentReconciles: 10 })
    .complete(new ${kind}Reconciler(mgr.getClient(), recorder));
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
      ? `\n${importStatement([`setup${kind}Webhook`], `./webhooks/${lower}_webhook.ts`)}`
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

/** The test's import from its controller, as deno fmt writes it (names sorted, lines ≤ 100). */
function controllerImport(kind: string, from: string): string {
  const names = ["FINALIZER", "RESYNC_MS", `${kind}Reconciler`]
    .sort((a, b) => a.toLowerCase().localeCompare(b.toLowerCase()));
  return fitLine(
    `import { ${names.join(", ")} } from "${from}";`,
    ["import {", ...names.map((name) => `  ${name},`), `} from "${from}";`].join("\n"),
  );
}

/** `line` if it fits deno fmt's line width of 100 (as the scaffold's deno.json sets it), else `broken`. */
function fitLine(line: string, broken: string): string {
  return line.length <= 100 ? line : broken;
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
import { type Client, Deployment, isNotFound, newClient } from "@rudder/operator";
import type { Logger } from "@rudder/operator/manager";
import { Environment, FakeClient } from "@rudder/operator/testing";
import { ${kind} } from "../api/${lower}.ts";
import { createManager } from "../main.ts";
${controllerImport(kind, `./${lower}_controller.ts`)}

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
  const ctx = { signal: new AbortController().signal, log: quiet, reconcileID: "test" };

  it("owns a Deployment with the replicas asked for, and reports Running", {
    timeout: TEST_TIMEOUT,
  }, async () => {
    const key = { namespace: "default", name: "sample" };
    const client = new FakeClient({ types: [${kind}] });
    await client.create({
      apiVersion: "${apiVersion}",
      kind: "${kind}",
      metadata: key,
      spec: { replicas: 2, image: "registry.k8s.io/pause:3.10" },
    });
    const reconciler = new ${kind}Reconciler(client);
    await reconciler.reconcile(key, ctx); // adds the finalizer
    const withFinalizer = await client.get(${kind}, key);
    assert.deepEqual(withFinalizer.metadata?.finalizers, [FINALIZER]);
    const result = await reconciler.reconcile(key, ctx);
    assert.deepEqual(result, { requeueAfter: RESYNC_MS });

    const deployment = await client.get(Deployment, key);
    assert.equal(deployment.spec?.replicas, 2);
    assert.equal(deployment.spec?.template.spec?.containers[0].image, "registry.k8s.io/pause:3.10");
    const owner = deployment.metadata?.ownerReferences?.[0];
    assert.equal(owner?.kind, "${kind}");
    const reconciled = await client.get(${kind}, key);
    assert.equal(reconciled.status?.phase, "Running");
    assert.equal(reconciled.status?.conditions?.[0]?.status, "True");
  });

  it("lets a deleted ${kind} go once its finalizer ran", {
    timeout: TEST_TIMEOUT,
  }, async () => {
    const key = { namespace: "default", name: "doomed" };
    const client = new FakeClient({ types: [${kind}] });
    await client.create({
      apiVersion: "${apiVersion}",
      kind: "${kind}",
      metadata: { ...key, finalizers: [FINALIZER] },
      spec: { replicas: 1, image: "registry.k8s.io/pause:3.10" },
    });
    await client.delete(await client.get(${kind}, key)); // waits for the finalizer
    await new ${kind}Reconciler(client).reconcile(key, ctx);
    await assert.rejects(client.get(${kind}, key), isNotFound);
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

  it("reconciles a ${kind} and lets it go when it is deleted", {
    timeout: TEST_TIMEOUT,
  }, async () => {
    const key = { namespace: "default", name: "hello" };
    await client.create({
      apiVersion: "${apiVersion}",
      kind: "${kind}",
      metadata: key,
      spec: { replicas: 3, image: "registry.k8s.io/pause:3.10" },
    });
    const phase = async () => {
      const instance = await client.get(${kind}, key);
      return instance.status?.phase;
    };
    await eventually(
      "the ${kind} is Running",
      async () => (await phase()) === "Running",
    );
    assert.equal((await client.get(Deployment, key)).spec?.replicas, 3);

    // Deleted, it goes once the operator has run its finalizer.
    await client.delete(await client.get(${kind}, key));
    await eventually(
      "the ${kind} is gone",
      () => client.get(${kind}, key).then(() => false, isNotFound),
    );
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
\`${n.kind}\` objects (\`${n.apiVersion}\`). Each ${n.kind} owns a Deployment that runs
\`spec.replicas\` pods of \`spec.image\`; a finalizer lets it clean up before it goes, and its
status reports the phase and a \`Ready\` condition.
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

/** Which admission webhooks a kind gets: a defaulter (mutating), a validator, or both. */
export interface WebhookParts {
  /** A defaulter: `spec.replicas` is 1 unless set. */
  defaulting: boolean;
  /** A validator: `spec.replicas` is at most `MAX_REPLICAS`. */
  validation: boolean;
}

const BOTH_WEBHOOKS: WebhookParts = { defaulting: true, validation: true };

/** Deno fmt's line width in a scaffold (its deno.json's `fmt.lineWidth`). */
const LINE_WIDTH = 100;

/** `single` if each of its lines fits the line width, else `wrapped`: what deno fmt picks. */
function fit(single: string, wrapped: string): string {
  return single.split("\n").every((line) => line.length <= LINE_WIDTH) ? single : wrapped;
}

/** An import statement as deno fmt writes it: on one line if it fits, else a name per line. */
export function importStatement(names: string[], from: string): string {
  return fit(
    `import { ${names.join(", ")} } from "${from}";`,
    ["import {", ...names.map((name) => `  ${name},`), `} from "${from}";`].join("\n"),
  );
}

/** Lines joined, leaving out those given as `false`. */
function lines(...parts: (string | false)[]): string {
  return parts.filter((part) => part !== false).join("\n");
}

/** An arrow function on one line if it fits, else its body on the next, indented. */
function arrow(head: string, body: string): string {
  const indent = head.match(/^\s*/)![0];
  return fit(`${head} ${body}`, `${head}\n${indent}  ${body}`);
}

function webhookModule(options: ScaffoldOptions, parts: WebhookParts, apiFile: string): string {
  const { kind, lower } = names(options);
  const what = parts.defaulting && parts.validation
    ? `webhooks: a defaulter (\`spec.replicas\` is 1 unless set) and a validator that caps
 * \`spec.replicas\` at \`MAX_REPLICAS\`. The API server calls them before it stores a ${kind}.`
    : parts.defaulting
    ? `webhook: a defaulter (\`spec.replicas\` is 1 unless set). The API server calls it
 * before it stores a ${kind}.`
    : `webhook: a validator that caps \`spec.replicas\` at \`MAX_REPLICAS\`. The API server
 * calls it before it stores a ${kind}.`;
  const imports = parts.validation
    ? "AdmissionDeniedError, newWebhookManagedBy"
    : "newWebhookManagedBy";
  return lines(
    `/**
 * The ${kind} ${what}
 *
 * @module
 */

import type { Manager } from "@rudder/operator";
import { ${imports} } from "@rudder/operator/webhook";
${importStatement([kind], `../${apiFile}`)}
`,
    parts.validation && `/** The most copies a ${kind} may ask for. */
export const MAX_REPLICAS = 10;
`,
    parts.defaulting && `/** Sets what a ${kind} leaves out: \`spec.replicas\` is 1 unless set. */
${
      fit(
        `export function default${kind}(${lower}: ${kind}): void {`,
        `export function default${kind}(\n  ${lower}: ${kind},\n): void {`,
      )
    }
  ${lower}.spec.replicas ??= 1;
}
`,
    parts.validation &&
      `/** Refuses a ${kind} that asks for more than \`MAX_REPLICAS\` copies; returns its warnings. */
${
        fit(
          `export function validate${kind}(${lower}: ${kind}): string[] {`,
          `export function validate${kind}(\n  ${lower}: ${kind},\n): string[] {`,
        )
      }
  const replicas = ${lower}.spec.replicas ?? 1;
  if (replicas > MAX_REPLICAS) {
    throw new AdmissionDeniedError(
      \`spec.replicas must be at most \${MAX_REPLICAS}, not \${replicas}\`,
      { code: 422, reason: "Invalid" },
    );
  }
  return [];
}
`,
    `/** Registers the ${kind} webhooks with the manager's webhook server. */
export function setup${kind}Webhook(mgr: Manager): void {
  newWebhookManagedBy(mgr, ${kind})`,
    parts.defaulting && `    .withDefaulter(default${kind})`,
    parts.validation && "    .withValidator({",
    parts.validation && arrow(`      validateCreate: (${lower}) =>`, `validate${kind}(${lower}),`),
    parts.validation &&
      arrow(`      validateUpdate: (_old, ${lower}) =>`, `validate${kind}(${lower}),`),
    parts.validation && "    })",
    `    .complete();
}
`,
  );
}

function webhookTest(options: ScaffoldOptions, parts: WebhookParts, apiFile: string): string {
  const { kind, lower, apiVersion } = names(options);
  const functions = [
    ...(parts.defaulting ? [`default${kind}`] : []),
    ...(parts.validation ? ["MAX_REPLICAS", `validate${kind}`] : []),
  ];
  return lines(
    `// The ${kind} webhooks, tested as plain functions: they need no server. (The manager serves
// them, and \`rudder manifests\` writes the configurations that send the API server's admission
// requests there.)
import { describe, it } from "node:test";
import assert from "node:assert/strict";`,
    parts.validation && `import { AdmissionDeniedError } from "@rudder/operator/webhook";`,
    importStatement([kind], `../${apiFile}`),
    `${importStatement(functions, `./${lower}_webhook.ts`)}

/** A ${kind} with \`spec\`, its schema's defaults applied. */
function sample(spec: Record<string, unknown> = {}): ${kind} {
  return ${kind}.parse({
    apiVersion: "${apiVersion}",
    kind: "${kind}",
    metadata: { name: "sample", namespace: "default" },
    spec,
  });
}

describe("the ${kind} webhooks", () => {`,
    parts.defaulting && `  it("default spec.replicas to 1 and keep a value that is set", () => {
    const unset = sample();
    default${kind}(unset);
    assert.equal(unset.spec.replicas, 1);
    const set = sample({ replicas: 3 });
    default${kind}(set);
    assert.equal(set.spec.replicas, 3);
  });`,
    parts.defaulting && parts.validation && "",
    parts.validation && `  it("accept up to MAX_REPLICAS copies", () => {
${
      fit(
        `    assert.deepEqual(validate${kind}(sample({ replicas: MAX_REPLICAS })), []);`,
        `    assert.deepEqual(\n      validate${kind}(sample({ replicas: MAX_REPLICAS })),\n      [],\n    );`,
      )
    }
  });

  it("refuse more than MAX_REPLICAS copies as 422 Invalid", () => {
    assert.throws(
${arrow("      () =>", `validate${kind}(sample({ replicas: MAX_REPLICAS + 1 })),`)}
      (err) => {
        assert.ok(err instanceof AdmissionDeniedError);
        assert.equal(err.code, 422);
        assert.match(err.message, /spec\\.replicas must be at most 10, not 11/);
        return true;
      },
    );
  });`,
    `});
`,
  );
}

/**
 * A kind's webhook module (`webhooks/<kind>_webhook.ts`, which exports `setup<Kind>Webhook`) and
 * its unit test, with the webhooks `parts` asks for. `rudder init --webhooks` writes both; so
 * does `rudder create webhook`. They import the kind from `apiFile` (relative to the project).
 */
export function webhookFiles(
  options: ScaffoldOptions,
  parts: WebhookParts = BOTH_WEBHOOKS,
  apiFile: string = names(options).apiFile,
): Map<string, string> {
  if (!parts.defaulting && !parts.validation) {
    throw new Error("a webhook module needs a defaulter, a validator or both");
  }
  const n = names(options);
  return new Map([
    [n.webhookFile, webhookModule(options, parts, apiFile)],
    [n.webhookTestFile, webhookTest(options, parts, apiFile)],
  ]);
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
    ...(options.webhooks ? webhookFiles(options) : []),
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
    "  replicas: 1",
    "  image: registry.k8s.io/pause:3.10",
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
  // The one-line form the template writes, or the wrapped forms deno fmt makes of longer lists.
  const match = test.match(/^( *)(.*)new Environment\(\{\s*crds: \[([^\]]*)\],?\s*\}\)(.*)$/m);
  if (!match) return test;
  const [line, indent, before, names, after] = match;
  const present = names.split(",").map((name) => name.trim()).filter((name) => name !== "");
  const missing = kinds.filter(({ kind }) => !present.includes(kind));
  if (missing.length === 0) return test;
  const list = [...present, ...missing.map(({ kind }) => kind)];
  let out = test.replace(line, environmentCall(indent, before, list, after));
  const ownImport = new RegExp(`^import \\{ ${own} \\} from "[^"]+";$`, "m");
  const imports = missing.map(({ kind, file }) => `import { ${kind} } from "../${file}";`);
  out = out.replace(ownImport, (found) => [found, ...imports].join("\n"));
  return out;
}

/**
 * The line `${indent}${before}new Environment({ crds: [...] })${after}` as deno fmt lays it out
 * within 100 columns: on one line, with the object broken, or with the list broken too.
 */
function environmentCall(indent: string, before: string, list: string[], after: string): string {
  const one = `${indent}${before}new Environment({ crds: [${list.join(", ")}] })${after}`;
  if (one.length <= 100) return one;
  const open = `${indent}${before}new Environment({`;
  const close = `${indent}})${after}`;
  const crds = `${indent}  crds: [${list.join(", ")}],`;
  if (crds.length <= 100) return [open, crds, close].join("\n");
  return [
    open,
    `${indent}  crds: [`,
    ...list.map((kind) => `${indent}    ${kind},`),
    `${indent}  ],`,
    close,
  ]
    .join("\n");
}
