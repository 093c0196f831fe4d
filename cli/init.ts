/**
 * `rudder init <dir>`: a new operator project (see `templates.ts` for its files), for Deno and
 * Bun, or with `--runtime node` for Node. With `--local <checkout>` the project imports that
 * Rudder checkout instead of the published package, so it builds and runs with no registry at
 * all.
 *
 * @module
 */

import {
  existsSync,
  mkdirSync,
  readdirSync,
  realpathSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import {
  booleanFlag,
  choiceFlag,
  type CommandIO,
  type CommandSpec,
  parseCommandArgs,
  stringFlag,
  UsageError,
} from "./args.ts";
import { toDnsLabel } from "./project.ts";
import {
  type DependencyVersions,
  LOCAL_ZOD_FILE,
  scaffold,
  type ScaffoldOptions,
  SUBPATH_FILES,
} from "./templates.ts";

/** The npm packages a new project may import, at the versions Rudder itself uses. */
export const DEPENDENCY_VERSIONS: DependencyVersions = {
  zod: "4.6.7",
  "@logtape/logtape": "2.4.2",
  "@opentelemetry/api": "1.10.0",
  "@opentelemetry/context-async-hooks": "3.1.1",
  "@opentelemetry/exporter-trace-otlp-http": "0.301.2",
  "@opentelemetry/resources": "3.1.1",
  "@opentelemetry/sdk-trace": "3.1.1",
};

/** The files a checkout must have for `--local` to work. */
const CHECKOUT_FILES = ["mod.ts", ...Object.values(SUBPATH_FILES), LOCAL_ZOD_FILE];

/** Checks the options of `rudder init`; throws a UsageError naming the first bad one. */
export function validateScaffoldOptions(options: ScaffoldOptions): void {
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(options.name)) {
    throw new UsageError(
      `--name must be a DNS label (lower-case letters, digits, '-'), got "${options.name}"`,
      "init",
    );
  }
  if (!/^[A-Z][A-Za-z0-9]{0,62}$/.test(options.kind)) {
    throw new UsageError(
      `--kind must be UpperCamelCase letters and digits, e.g. Memcached, got "${options.kind}"`,
      "init",
    );
  }
  const label = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
  if (!new RegExp(`^${label}(\\.${label})+$`).test(options.group) || options.group.length > 253) {
    throw new UsageError(
      `--group must be a DNS subdomain with a dot, e.g. cache.example.com, got "${options.group}"`,
      "init",
    );
  }
  if (!/^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/.test(options.version)) {
    throw new UsageError(
      `--version must be a Kubernetes API version like v1, v1beta1 or v1alpha1, got "${options.version}"`,
      "init",
    );
  }
}

/** `rudder init`. */
export const initSpec: CommandSpec = {
  name: "init",
  summary: "create a new operator project",
  positionals: ["<dir>"],
  flags: {
    name: {
      type: "string",
      value: "<name>",
      description: "The operator's name, a DNS label (default: the directory's name).",
    },
    group: {
      type: "string",
      value: "<group>",
      description: "API group of its custom resource (default: example.com).",
    },
    version: {
      type: "string",
      value: "<version>",
      description: "API version of its custom resource (default: v1alpha1).",
    },
    kind: {
      type: "string",
      value: "<Kind>",
      description: "Kind of its custom resource (default: Example).",
    },
    local: {
      type: "string",
      value: "<checkout>",
      description: "Import this Rudder checkout instead of jsr:@rudder/operator (no registry).",
    },
    webhooks: {
      type: "boolean",
      description: "Add a defaulting and validating webhook for the kind.",
    },
    runtime: {
      type: "string",
      value: "deno|bun|node",
      description: "node: a Node project with npm scripts (default: one for Deno and Bun).",
    },
    force: {
      type: "boolean",
      description: "Write into a directory that is not empty (existing files are overwritten).",
    },
  },
  examples: [
    "rudder init memcached-operator --group cache.example.com --version v1alpha1 --kind Memcached",
    "rudder init ./my-operator --local ~/src/rudder",
    "rudder init ./my-operator --kind Memcached --webhooks",
    "rudder init ./my-operator --runtime node",
  ],
};

/** Runs `rudder init`. */
export function runInit(args: string[], io: CommandIO): number {
  const parsed = parseCommandArgs(initSpec, args);
  if (!parsed) return 0;
  const dir = resolve(io.cwd, parsed.positionals[0]);
  const localFlag = stringFlag(parsed, "local");
  const options: ScaffoldOptions = {
    name: stringFlag(parsed, "name", toDnsLabel(basename(dir))),
    group: stringFlag(parsed, "group", "example.com"),
    version: stringFlag(parsed, "version", "v1alpha1"),
    kind: stringFlag(parsed, "kind", "Example"),
    ...(localFlag !== undefined ? { local: resolve(io.cwd, localFlag) } : {}),
    ...(booleanFlag(parsed, "webhooks") ? { webhooks: true } : {}),
    ...(choiceFlag(parsed, "runtime", ["deno", "bun", "node"] as const, "deno", "init") === "node"
      ? { runtime: "node" as const }
      : {}),
  };
  validateScaffoldOptions(options);
  if (options.local) {
    const missing = CHECKOUT_FILES.filter((file) => !existsSync(join(options.local!, file)));
    if (missing.length > 0) {
      throw new UsageError(
        `--local ${options.local} is not a Rudder checkout: it lacks ${missing.join(", ")}`,
        "init",
      );
    }
  }
  if (existsSync(dir) && readdirSync(dir).length > 0 && !booleanFlag(parsed, "force")) {
    throw new Error(`${dir} is not empty; choose another directory or pass --force`);
  }

  const files = scaffold(options, DEPENDENCY_VERSIONS);
  io.out(dir);
  for (const [path, content] of files) {
    const target = join(dir, path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, content);
    io.out(`  ${path}`);
  }
  const node = options.runtime === "node";
  if (options.local && node) linkCheckoutPackages(options.local, dir);
  else if (options.local) linkNodeTypes(options.local, dir, io);

  const inside = relative(io.cwd, dir);
  const shown = inside === "" ? "." : inside.startsWith("..") ? dir : inside;
  const next = node
    ? [
      ...(options.local ? [] : ["  npm install"]),
      "  npm test",
      "  npm run dev           # runs it against a local control plane",
      "  npm run manifests && npm run build",
    ]
    : [
      "  deno task test        # or: bun test",
      "  deno task dev         # runs it against a local control plane",
      "  deno task manifests && deno task build",
    ];
  io.err(
    [
      `Created the ${options.name} operator (${options.kind}.${options.group}/${options.version}) in ${shown}.`,
      "Next:",
      `  cd ${shown}`,
      ...next,
    ].join("\n"),
  );
  return 0;
}

/**
 * The packages a Node project made with `--local` finds in its `node_modules`: what its code
 * imports (its `tracing.ts` the OpenTelemetry SDK, which `rudder build` bundles too).
 */
const LINKED_PACKAGES = ["zod", "@logtape/logtape", "@opentelemetry"];

/**
 * Node resolves a project's imports through its `node_modules` only, so with `--local`:
 * `node_modules/@rudder/operator` links to the checkout (its package.json's exports name the
 * TypeScript files, which Node strips: they lie outside any node_modules once the link is
 * followed), and zod, LogTape and OpenTelemetry link to the checkout's own copies, so the
 * project's schemas are built with the very zod Rudder reads.
 */
function linkCheckoutPackages(checkout: string, dir: string): void {
  const links: [string, string][] = [
    ["@rudder/operator", checkout],
    ...LINKED_PACKAGES.map((name): [string, string] => [
      name,
      realpathSync(join(checkout, "node_modules", name)),
    ]),
  ];
  for (const [name, target] of links) {
    const link = join(dir, "node_modules", name);
    if (existsSync(link)) continue;
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(target, link, "dir");
  }
}

/**
 * With `--local` the project resolves npm packages from the checkout (Deno's `nodeModulesDir:
 * "manual"`), and Deno's type checker then looks for Node's types in the project's own
 * `node_modules/@types/node`: link the checkout's there. Its `tracing.ts` imports the
 * OpenTelemetry SDK, a dev dependency of the checkout: link the checkout's `@opentelemetry`.
 */
function linkNodeTypes(checkout: string, dir: string, io: CommandIO): void {
  for (const path of [join("@types", "node"), "@opentelemetry"]) {
    const target = join(checkout, "node_modules", path);
    const link = join(dir, "node_modules", path);
    if (!existsSync(target)) {
      io.err(
        `warning: ${target} does not exist (run \`npm ci\` in the checkout); ` +
          "until it does, `deno check` and `deno test` cannot find it",
      );
      continue;
    }
    if (existsSync(link)) continue;
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(target, link, "dir");
  }
}
