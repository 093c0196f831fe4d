/**
 * The files of a new operator project (`rudder init`), and those `rudder create api` and
 * `rudder create webhook` add. The project has the shape of `examples/example-operator`:
 * `api/<kind>.ts` declares the custom resource, `controllers/<kind>_controller.ts` reconciles it,
 * `webhooks/<kind>_webhook.ts` holds its admission webhooks, and `main.ts` exports `setup(mgr)`,
 * which registers them (what `rudder manifests` calls to derive RBAC) and starts the manager
 * when run.
 *
 * Its TypeScript files are rendered from `templates/project/`, a project written for the
 * placeholder kind Memcached that `deno check` type-checks against the library (see `render.ts`
 * and `templates/embed.ts`); the configuration files, README and Dockerfile are made here.
 *
 * @module
 */

import { VERSION } from "../lib/version.ts";
import { denoV8FlagsArg, envAssignments, NODE_V8_FLAGS } from "./project.ts";
import { renderTemplate, type TemplateFlags } from "./render.ts";
import { TEMPLATE_FILES } from "./templates/embedded.ts";

/** The scaffold's `start` and `run` task: the operator with Rudder's environment and V8 flags. */
const RUN_OPERATOR = [...envAssignments("deno"), "deno run -A", denoV8FlagsArg(), "main.ts"].join(
  " ",
);

/** The scaffold's `start` and `run` script on Bun: the operator with Rudder's environment. */
const RUN_OPERATOR_BUN = [...envAssignments("bun"), "bun main.ts"].join(" ");

/**
 * The `start` and `run` script of a Node project, with Rudder's environment and V8 flags: Node
 * runs TypeScript by stripping types.
 */
const RUN_OPERATOR_NODE = [...envAssignments("node"), "node", ...NODE_V8_FLAGS, "main.ts"].join(
  " ",
);

/**
 * The version of the npm package `bun` a Node project depends on (a development dependency):
 * `rudder build --runtime node` bundles the operator with `bun build --target=node` before Node
 * makes it a single executable application. The same version as Rudder's own (a unit test
 * keeps the two equal).
 */
export const NODE_PROJECT_BUN_VERSION = "1.4.5";

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
  /**
   * `node`: a project for Node 26 (`package.json` with npm scripts, `node --test`, no
   * `deno.json` or `bunfig.toml`). Unset: a project for Deno and Bun alike.
   */
  runtime?: "node";
}

/** The npm packages a project may import besides Rudder, at the versions Rudder uses. */
export interface DependencyVersions {
  zod: string;
  "@logtape/logtape": string;
  /** The OpenTelemetry packages `tracing.ts` loads when an OTLP endpoint is set. */
  "@opentelemetry/api": string;
  "@opentelemetry/context-async-hooks": string;
  "@opentelemetry/exporter-trace-otlp-http": string;
  "@opentelemetry/resources": string;
  "@opentelemetry/sdk-trace": string;
}

/** The OpenTelemetry packages of {@linkcode DependencyVersions}. */
const OTEL_PACKAGES = [
  "@opentelemetry/api",
  "@opentelemetry/context-async-hooks",
  "@opentelemetry/exporter-trace-otlp-http",
  "@opentelemetry/resources",
  "@opentelemetry/sdk-trace",
] as const;

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
  sharding: "lib/sharding/mod.ts",
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
    apiVersion: `${options.group}/${options.version}`,
    apiFile: `api/${lower}.ts`,
    controllerFile: `controllers/${lower}_controller.ts`,
    testFile: `controllers/${lower}_controller_test.ts`,
    webhookFile: `webhooks/${lower}_webhook.ts`,
    webhookTestFile: `webhooks/${lower}_webhook_test.ts`,
  };
}

/** What the template project is written for: each placeholder's value there. */
const PLACEHOLDER = {
  name: "memcached-operator",
  group: "cache.example.com",
  version: "v1alpha1",
  kind: "Memcached",
} as const;

/** The template project's files, as {@linkcode names} names them for its placeholder kind. */
const TEMPLATE = names(PLACEHOLDER);

/**
 * The template `path` of `templates/project/` rendered for `options`: its placeholders replaced,
 * its optional parts kept as `flags` say. Its import of the kind's api module imports `apiFile`.
 */
function renderProjectFile(
  path: string,
  options: ScaffoldOptions,
  flags: TemplateFlags,
  apiFile: string = names(options).apiFile,
): string {
  const template = TEMPLATE_FILES[path];
  if (template === undefined) throw new Error(`the template project has no ${path}`);
  return renderTemplate(template, {
    replacements: {
      [PLACEHOLDER.name]: options.name,
      [`../${TEMPLATE.apiFile}`]: `../${apiFile}`,
      [PLACEHOLDER.group]: options.group,
      [PLACEHOLDER.version]: options.version,
      [PLACEHOLDER.kind]: options.kind,
      [TEMPLATE.lower]: options.kind.toLowerCase(),
    },
    flags,
  });
}

/** The template flags of a project: with or without webhooks, and which ones. */
function templateFlags(options: ScaffoldOptions, parts: WebhookParts = BOTH_WEBHOOKS) {
  return { webhooks: options.webhooks === true, ...parts };
}

/** A kind's api module, controller and controller test (`init` and `create api` write them). */
function kindFiles(options: ScaffoldOptions): [string, string][] {
  const n = names(options);
  const flags = templateFlags(options);
  return [
    [n.apiFile, renderProjectFile(TEMPLATE.apiFile, options, flags)],
    [n.controllerFile, renderProjectFile(TEMPLATE.controllerFile, options, flags)],
    [n.testFile, renderProjectFile(TEMPLATE.testFile, options, flags)],
  ];
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
      nodeCli: `node ${shellWord(`${root}/cli/main.ts`)}`,
    };
  }
  return {
    main: `jsr:${JSR_PACKAGE}@^${VERSION}`,
    subpaths: {} as Record<string, string>,
    zod: "",
    denoCli: `deno run -A jsr:${JSR_PACKAGE}@^${VERSION}/cli`,
    bunCli: `bun node_modules/${JSR_PACKAGE}/cli/main.js`,
    nodeCli: `node node_modules/${JSR_PACKAGE}/cli/main.js`,
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
      ...Object.fromEntries(OTEL_PACKAGES.map((name) => [name, `npm:${name}@^${deps[name]}`])),
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

/**
 * `package.json` of a Bun or a Node project: the same npm scripts run the operator, its tests and
 * the CLI on either runtime. A Node project runs its tests with `node --test`, asks for Node 26
 * and installs Bun for `rudder build` (Node has no bundler). With `--local`, `rudder init` links
 * the checkout and its zod and LogTape into `node_modules` instead of listing dependencies (see
 * `init.ts`).
 */
function packageJson(
  options: ScaffoldOptions,
  deps: DependencyVersions,
  runtime: "bun" | "node",
): string {
  const src = rudderSources(options);
  const node = runtime === "node";
  const cli = node ? src.nodeCli : src.bunCli;
  const runOperator = node ? RUN_OPERATOR_NODE : RUN_OPERATOR_BUN;
  const dependencies = options.local ? undefined : publishedDependencies(deps);
  return json({
    name: options.name,
    version: "0.1.0",
    private: true,
    type: "module",
    ...(node ? { engines: { node: ">=26" } } : {}),
    scripts: {
      start: runOperator,
      run: runOperator,
      // Bun's default of 5 s per test and hook is too short to start a local control plane;
      // Node's runner finds controllers/*_test.ts itself, and each test states its own timeout.
      test: node ? "node --test" : "bun test --timeout 120000",
      rudder: cli,
      dev: `${cli} dev --runtime ${runtime}`,
      manifests: `${cli} manifests`,
      build: `${cli} build --runtime ${runtime}`,
      ...imageTasks(options, `${cli} build`, runtime),
    },
    ...(!node
      ? { dependencies: dependencies ?? {} }
      : dependencies
      ? { dependencies, devDependencies: { bun: NODE_PROJECT_BUN_VERSION } }
      : {}),
  });
}

/** The dependencies of a project on the published package, as npm installs them. */
function publishedDependencies(deps: DependencyVersions): Record<string, string> {
  return {
    // JSR packages install from npm.jsr.io under the @jsr scope (see .npmrc).
    [JSR_PACKAGE]: `npm:@jsr/rudder__operator@^${VERSION}`,
    "@logtape/logtape": `^${deps["@logtape/logtape"]}`,
    ...Object.fromEntries(OTEL_PACKAGES.map((name) => [name, `^${deps[name]}`])),
    zod: `^${deps.zod}`,
  };
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
        env: [...new Set([...PROJECT_ENV, ...WEBHOOK_PERMISSIONS.env])].sort(),
      }
      : { apiServers: [], net: [], read: [], env: [...PROJECT_ENV] },
  });
}

/**
 * The environment `main.ts` reads besides what `rudder build` always allows. A compiled Deno
 * operator that sends traces needs more in `permissions` (see the tracing guide).
 */
const PROJECT_ENV = [
  "LOG_FORMAT",
  "METRICS_SERVING",
  "OTEL_EXPORTER_OTLP_ENDPOINT",
  "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
];

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
  if (options.runtime === "node") return nodeDockerfile(options);
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

/**
 * The Dockerfile of a Node project. Node's official builds since Node 25 load `libatomic.so.1`,
 * which distroless/cc lacks, so it is taken from Debian's package of the base's release, as
 * `rudder build --image` does.
 */
function nodeDockerfile(options: ScaffoldOptions): string {
  return `# The alternative to \`rudder build --image\` (which needs no Docker daemon) for those who
# build images with docker or podman. The operator is one Node single executable application
# (\`npm run build\`, built on the image's platform), so the image needs no runtime besides it:
# distroless/cc has glibc and nothing else (no shell, no package manager). Node (since 25) also
# loads libatomic.so.1, which distroless/cc lacks: it comes from Debian's package (on arm64, from
# /usr/lib/aarch64-linux-gnu/ to the same directory).
FROM debian:12-slim AS libatomic
RUN apt-get update && apt-get install -y --no-install-recommends libatomic1

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=libatomic /usr/lib/x86_64-linux-gnu/libatomic.so.1 /usr/lib/x86_64-linux-gnu/
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

/** The README of a Node project (`rudder init --runtime node`). */
function nodeReadme(options: ScaffoldOptions): string {
  const n = names(options);
  const local = options.local
    ? `
This project imports Rudder from the checkout at \`${options.local}\` (\`rudder init --local\`):
\`node_modules/@rudder/operator\` links to it, and \`node_modules/zod\` and
\`node_modules/@logtape/logtape\` to the checkout's own copies, so the schemas you write are
built with the very zod Rudder reads. No registry is needed. To use the published package
instead, run \`rudder init --runtime node\` without \`--local\` and copy your code over.
`
    : `
Install its dependencies with \`npm install\` (\`.npmrc\` sends the \`@jsr\` scope to JSR's npm
registry, where \`@rudder/operator\` is published).
`;
  return `# ${options.name}

A Kubernetes operator written with [Rudder](https://jsr.io/${JSR_PACKAGE}) for Node 26: it
reconciles \`${n.kind}\` objects (\`${n.apiVersion}\`). Each ${n.kind} owns a Deployment that runs
\`spec.replicas\` pods of \`spec.image\`; a finalizer lets it clean up before it goes, and its
status reports the phase and a \`Ready\` condition. Node runs its TypeScript as it is, by
stripping the types: no build step, no transpiler.
${local}
## Layout

${
    markdownTable([
      ["path", "what it is"],
      [`\`${n.apiFile}\``, `the ${n.kind} custom resource: spec and status as one zod schema`],
      [`\`${n.controllerFile}\``, `the reconciler and \`setup${n.kind}Controller(mgr)\``],
      [`\`${n.testFile}\``, "its tests: FakeClient, and the operator on a local control plane"],
      ["`main.ts`", "`setup(mgr)` registers the controllers; run, it starts the manager"],
      ["`rudder.json`", "name, namespace, image, ports and extra RBAC rules"],
      ["`Dockerfile`", "for `docker build`, the alternative to `npm run image`"],
    ])
  }

## Develop

\`\`\`sh
npm test              # node --test: unit tests and the operator against a local control plane
npm run dev           # a local control plane, the CRDs, the operator; restarts on changes
\`\`\`

The local control plane needs etcd and kube-apiserver: \`npm run rudder -- envtest setup\` builds
them (with Go) and \`npm run rudder -- envtest env\` prints the \`KUBEBUILDER_ASSETS\` to export.

## Deploy

\`\`\`sh
npm run build -- --image ghcr.io/me/${options.name}:0.1.0 --push
npm run manifests -- --image "$(cat dist/${options.name}.image)"
kubectl apply -k config/
\`\`\`

\`npm run build\` bundles the operator and its npm dependencies into one module
(\`bun build --target=node\`, from the development dependency \`bun\`) and makes it a Node single
executable application, \`dist/${options.name}\`, for this machine's platform. With
\`--image <ref> --push\` it also puts the executable as one layer on
\`gcr.io/distroless/cc-debian12:nonroot\` (\`--base\` to change it), with \`libatomic.so.1\`, which
Node loads and distroless/cc lacks, as another; runs it as user 65532, and pushes the image with no
Docker daemon (credentials come from \`~/.docker/config.json\`). It prints the image's
\`ref@sha256:…\` and writes it to \`dist/${options.name}.image\`, and \`npm run manifests -- --image …\`
makes the Deployment (in \`config/\`, with the CRDs and RBAC) use exactly that digest.
\`npm run image\` writes an archive for \`docker load\` or \`podman load\` instead.

The ClusterRole is derived from what the controllers watch and own; add rules the reconciler needs
beyond those to \`rbac\` in \`rudder.json\`. Leader election gets a Role in the operator's namespace
only. Metrics are served over HTTPS on port 8443, to scrapers bound to the ClusterRole
\`${options.name}-metrics-reader\`; \`npm run dev\` serves them over plain HTTP.
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
  const flags = templateFlags(options, parts);
  return new Map([
    [n.webhookFile, renderProjectFile(TEMPLATE.webhookFile, options, flags, apiFile)],
    [n.webhookTestFile, renderProjectFile(TEMPLATE.webhookTestFile, options, flags, apiFile)],
  ]);
}

/** The files of a new project, by path relative to its directory. */
export function scaffold(
  options: ScaffoldOptions,
  deps: DependencyVersions,
): Map<string, string> {
  const node = options.runtime === "node";
  const files = new Map<string, string>([
    ...(node ? [] : [["deno.json", denoJson(options, deps)] as const]),
    ["package.json", packageJson(options, deps, node ? "node" : "bun")],
    ["tsconfig.json", tsconfigJson(options)],
    ["rudder.json", rudderJson(options)],
    ["main.ts", renderProjectFile("main.ts", options, templateFlags(options))],
    ["tracing.ts", renderProjectFile("tracing.ts", options, templateFlags(options))],
    ...kindFiles(options),
    ...(node ? [] : [
      ["bunfig.toml", bunfigToml()] as const,
      ["bun_test_setup.ts", bunTestSetup()] as const,
    ]),
    ...(options.webhooks ? webhookFiles(options) : []),
    ["Dockerfile", dockerfile(options)],
    [".dockerignore", `*\n!dist/${options.name}\n`],
    [".gitignore", "dist/\nnode_modules/\n"],
    ["README.md", node ? nodeReadme(options) : readme(options)],
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
function imageTasks(
  options: ScaffoldOptions,
  build: string,
  runtime: "bun" | "node" = "bun",
): Record<string, string> {
  const ref = `${options.name}:0.1.0`;
  return {
    image: `${build} --runtime ${runtime} --image ${ref} --output dist/${options.name}-image.tar`,
    "image:push": `${build} --runtime ${runtime} --image ${ref} --push`,
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
  const files = new Map(kindFiles(options));
  const test = names(options).testFile;
  files.set(test, withEnvironmentKinds(files.get(test)!, options.kind, allKinds));
  return files;
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
