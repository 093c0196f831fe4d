/**
 * An operator project as the CLI sees it: its directory, its settings (`rudder.json`, every
 * field optional), and the runtimes that run it.
 *
 * ```json
 * {
 *   "name": "memcached-operator",
 *   "namespace": "memcached-operator-system",
 *   "image": "memcached-operator:0.1.0",
 *   "main": "main.ts",
 *   "setup": "setup",
 *   "api": ["api/memcached.ts"],
 *   "metricsBindAddress": ":8443",
 *   "healthProbeBindAddress": ":8081",
 *   "rbac": [{ "apiGroups": [""], "resources": ["secrets"], "verbs": ["get"] }],
 *   "sharding": { "ring": "memcached", "replicas": 3 },
 *   "permissions": { "apiServers": [], "net": [], "read": [], "env": [] }
 * }
 * ```
 *
 * @module
 */

import { Buffer } from "node:buffer";
import {
  accessSync,
  closeSync,
  constants,
  existsSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  statSync,
} from "node:fs";
import { basename, delimiter, dirname, extname, join, resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import type { FlagSpec } from "./args.ts";

/** The file that holds a project's settings. */
export const SETTINGS_FILE = "rudder.json";

/** The `--dir` flag of the commands that work on a project. */
export const PROJECT_DIR_FLAG: FlagSpec = {
  type: "string",
  value: "<project>",
  description: "The operator project (default: the nearest directory with rudder.json).",
};

/** A rule of a ClusterRole, as in `rbac.authorization.k8s.io/v1`. */
export interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
  verbs: string[];
}

const ruleSchema = z.strictObject({
  apiGroups: z.array(z.string()).optional(),
  resources: z.array(z.string()).optional(),
  resourceNames: z.array(z.string()).optional(),
  nonResourceURLs: z.array(z.string()).optional(),
  verbs: z.array(z.string()).min(1),
});

/** A sharded operator's ring (see cli/sharding_manifests.ts and the scaling-out guide). */
export interface ShardingSettings {
  /** The ring's name, as the Manager's `sharding.ring`: a DNS label of at most 40 characters. */
  ring: string;
  /** Replicas of the Deployment; default 3. */
  replicas?: number;
  /**
   * Whether the operator's webhook server labels objects as they are created; default: when
   * the operator serves webhooks, as the Manager decides.
   */
  webhook?: boolean;
}

const shardingSchema = z.strictObject({
  ring: z.string().regex(/^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$/, {
    message: "must be a DNS label of at most 40 characters",
  }),
  replicas: z.number().int().min(1).optional(),
  webhook: z.boolean().optional(),
});

const settingsSchema = z.strictObject({
  $schema: z.string().optional(),
  name: z.string().regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, {
    message: "must be a DNS label: lower-case letters, digits and '-', at most 63",
  }).optional(),
  namespace: z.string().optional(),
  image: z.string().optional(),
  main: z.string().optional(),
  setup: z.string().optional(),
  api: z.array(z.string()).optional(),
  metricsBindAddress: z.string().optional(),
  healthProbeBindAddress: z.string().optional(),
  rbac: z.array(ruleSchema).optional(),
  sharding: shardingSchema.optional(),
  permissions: z.strictObject({
    apiServers: z.array(z.string()).optional(),
    net: z.array(z.string()).optional(),
    read: z.array(z.string()).optional(),
    env: z.array(z.string()).optional(),
  }).optional(),
});

/** Extra Deno permissions an operator needs besides those `rudder build` derives. */
export interface ExtraPermissions {
  /** `host:port` of API servers the binary may reach (a cluster's service address). */
  apiServers: string[];
  /** Other hosts it may reach. */
  net: string[];
  /** Files or directories it may read. */
  read: string[];
  /** Environment variables it may read. */
  env: string[];
}

/** A project's settings with every default applied. */
export interface ProjectSettings {
  /** Absolute path of the project. */
  dir: string;
  /** The operator's name: a DNS label, the prefix of its Kubernetes objects. */
  name: string;
  /** The namespace it is deployed to; default `<name>-system`. */
  namespace: string;
  /** Its container image; default `<name>:latest`. */
  image: string;
  /** Its entry point, relative to `dir`; default `main.ts`. */
  main: string;
  /** The export of `main` that registers the controllers with a manager; default `setup`. */
  setup: string;
  /** Modules whose exports with a `crd()` method are the project's CRDs; default `api/*.ts`. */
  api: string[];
  /** Metrics address in the cluster (HTTPS); default `:8443`. */
  metricsBindAddress: string;
  /** Health-probe address in the cluster; default `:8081`. */
  healthProbeBindAddress: string;
  /** ClusterRole rules beyond those derived from the controllers. */
  rbac: PolicyRule[];
  /** Deno permissions beyond those `rudder build` derives. */
  permissions: ExtraPermissions;
  /** The shard ring its replicas share, when it runs sharded. */
  sharding?: ShardingSettings;
}

/** The nearest directory from `start` upwards that holds `rudder.json`; else `start`. */
export function findProjectDir(start: string): string {
  for (let dir = resolve(start);; dir = dirname(dir)) {
    if (existsSync(join(dir, SETTINGS_FILE))) return dir;
    if (dirname(dir) === dir) return resolve(start);
  }
}

/** A DNS label made from any name: `My_Operator` → `my-operator`. */
export function toDnsLabel(name: string): string {
  const label = name.toLowerCase().replace(/[^a-z0-9-]+/g, "-").replace(/^-+|-+$/g, "")
    .slice(0, 63).replace(/-+$/, "");
  return label || "operator";
}

/** Reads `rudder.json` (when present) and applies the defaults. */
export function loadProject(dir: string): ProjectSettings {
  const root = resolve(dir);
  if (!existsSync(root) || !statSync(root).isDirectory()) {
    throw new Error(`${root} is not a directory`);
  }
  const file = join(root, SETTINGS_FILE);
  let raw: unknown = {};
  if (existsSync(file)) {
    try {
      raw = JSON.parse(readFileSync(file, "utf8"));
    } catch (err) {
      throw new Error(`${file}: ${err instanceof Error ? err.message : err}`);
    }
  }
  const parsed = settingsSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) =>
      `${issue.path.join(".") || "(top level)"}: ${issue.message}`
    );
    throw new Error(`${file}: ${problems.join("; ")}`);
  }
  const settings = parsed.data;
  const name = settings.name ?? toDnsLabel(basename(root));
  const main = settings.main ?? "main.ts";
  if (!existsSync(join(root, main))) {
    throw new Error(
      `${join(root, main)} does not exist: run rudder in an operator project (one made by ` +
        `\`rudder init\`), or set "main" in ${SETTINGS_FILE}`,
    );
  }
  return {
    dir: root,
    name,
    namespace: settings.namespace ?? `${name}-system`,
    image: settings.image ?? `${name}:latest`,
    main,
    setup: settings.setup ?? "setup",
    api: settings.api ?? defaultApiModules(root),
    metricsBindAddress: settings.metricsBindAddress ?? ":8443",
    healthProbeBindAddress: settings.healthProbeBindAddress ?? ":8081",
    rbac: settings.rbac ?? [],
    ...(settings.sharding ? { sharding: settings.sharding } : {}),
    permissions: {
      apiServers: settings.permissions?.apiServers ?? [],
      net: settings.permissions?.net ?? [],
      read: settings.permissions?.read ?? [],
      env: settings.permissions?.env ?? [],
    },
  };
}

/** Every module in `api/`, tests left out, sorted. */
function defaultApiModules(root: string): string[] {
  const dir = join(root, "api");
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((file) => /\.(ts|js|mts|mjs)$/.test(file) && !/[._]test\.[mc]?[tj]s$/.test(file))
    .sort()
    .map((file) => `api/${file}`);
}

/** The runtimes an operator runs on. */
export type Runtime = "deno" | "bun" | "node";

/** The runtimes, for flags that choose one. */
export const RUNTIMES: readonly Runtime[] = ["deno", "bun", "node"];

/** The runtime running this process. */
export function currentRuntime(): Runtime {
  if ("Deno" in globalThis) return "deno";
  return "Bun" in globalThis ? "bun" : "node";
}

/**
 * The runtime that loads a project's code when none is asked for: `current`, except on Node for
 * a project with a `deno.json` (`rudder init` for Deno and Bun), whose imports are mapped there
 * and in `tsconfig.json`'s `paths`, which Node does not read: Deno loads it then. A Node project
 * (`rudder init --runtime node`) resolves through `node_modules`, which all three runtimes read.
 */
export function projectRuntime(dir: string, current: Runtime = currentRuntime()): Runtime {
  return current === "node" && existsSync(join(dir, "deno.json")) ? "deno" : current;
}

/**
 * The runtime `rudder build` compiles with when none is asked for: Deno for a project with a
 * `deno.json`, Node for a Node project.
 */
export function buildRuntime(dir: string): Runtime {
  return existsSync(join(dir, "deno.json")) || !existsSync(join(dir, "package.json"))
    ? "deno"
    : "node";
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** Where this checkout keeps the pinned runtimes (`npm ci` installs them). */
const CHECKOUT_RUNTIMES: Record<Runtime, string> = {
  deno: "../node_modules/deno/deno",
  bun: "../node_modules/bun/bin/bun.exe",
  node: "../node_modules/node/bin/node",
};

/** Where each runtime is to be had, for the error that says it is missing. */
const RUNTIME_SITES: Record<Runtime, string> = {
  deno: "https://deno.com",
  bun: "https://bun.sh",
  node: "https://nodejs.org",
};

/**
 * The executable of `runtime`: this process's own when it is that runtime, else the first on
 * `PATH`, else the one this checkout's `node_modules` holds. Throws naming where it looked.
 */
export function runtimeExecutable(
  runtime: Runtime,
  env: Record<string, string | undefined>,
): string {
  if (runtime === currentRuntime()) return process.execPath;
  const pinned = checkoutRuntime(runtime);
  // A system Node is often older than the 26 Rudder needs (TypeScript, single executables),
  // so the checkout's pinned Node comes first; a Deno or Bun on PATH is taken as the user's.
  if (runtime === "node" && pinned) return pinned;
  const onPath = (env.PATH ?? "").split(delimiter).filter(Boolean)
    .map((dir) => join(dir, runtime))
    .filter(isExecutable);
  // npm's launchers (`#!/usr/bin/env node` scripts, as npx installs them) need Node on PATH;
  // a native binary runs anywhere, so it goes first.
  const native = onPath.find((candidate) => !isScript(candidate));
  if (native) return native;
  if (pinned) return pinned;
  if (onPath.length > 0) return onPath[0];
  throw new Error(
    `${runtime} was not found on PATH; install it (${RUNTIME_SITES[runtime]}) ` +
      `or run rudder with ${runtime} itself`,
  );
}

/** The runtime this checkout's `node_modules` holds, when it is one and holds it. */
function checkoutRuntime(runtime: Runtime): string | undefined {
  if (!import.meta.url.startsWith("file:")) return undefined;
  const bundled = fileURLToPath(new URL(CHECKOUT_RUNTIMES[runtime], import.meta.url));
  return isExecutable(bundled) ? bundled : undefined;
}

/** True for a file that starts with `#!`: a script run through an interpreter. */
function isScript(path: string): boolean {
  try {
    const fd = openSync(path, "r");
    try {
      const head = Buffer.alloc(2);
      readSync(fd, head, 0, 2, 0);
      return head.toString("latin1") === "#!";
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
}

/**
 * V8 flags Rudder runs a Deno operator with: `rudder build` (`deno compile --v8-flags`),
 * `rudder dev` and the scaffold's `start`/`run` tasks. A 2 MiB semi-space keeps V8's young
 * generation from growing to its maximum while a list is decoded and staying there (RSS per cached
 * object 1.6× Go's instead of 5.3× with V8's defaults), and needs half as many scavenges as 1 MiB,
 * the former default: 3–10 % less CPU per reconcile, 6–12 MiB less resident after 2,000
 * reconciles and a relist peak 17 MiB lower, for the same RSS per cached object (bench/README.md,
 * "Memory on Deno").
 */
export const DENO_V8_FLAGS: readonly string[] = ["--max-semi-space-size=2"];

/**
 * Environment Rudder runs a Deno operator with: the image of `rudder build --runtime deno`,
 * `rudder dev` and the scaffold's `start`/`run` tasks. glibc's malloc raises its mmap threshold
 * each time it frees a large block, so the next large blocks (a list page of several MiB, read
 * whole) come from the heap and stay resident once freed; a fixed threshold of 128 KiB hands them
 * back. Measured with 10,000 ConfigMaps: RSS per cached object 1.65× Go's instead of 2.43×, with
 * the same CPU per reconcile (bench/README.md, "Memory on Deno"). Bun allocates with mimalloc,
 * which this does not touch.
 */
export const DENO_ENV: Readonly<Record<string, string>> = { MALLOC_MMAP_THRESHOLD_: "131072" };

/**
 * Environment Rudder runs a Bun operator with: the image of `rudder build --runtime bun`, `rudder
 * dev` and the scaffold's `start`/`run` scripts. Bun allocates with mimalloc, which hands freed
 * pages back to the system only after a delay and only when the allocator runs again, so the
 * buffers of a list page freed as an informer goes quiet stay resident; a delay of 0 hands them
 * back at once. Measured with 10,000 ConfigMaps: RSS per cached object 1.70–1.74× Go's instead
 * of 1.88–1.92×, a relist peak 9–10 MiB lower, no difference in CPU per reconcile beyond the
 * rounds' spread (bench/README.md, "Memory on Bun"). `BUN_JSC_useFTLJIT=0` turns off
 * JavaScriptCore's top JIT tier (FTL), whose compiled code stays resident; its DFG tier still
 * optimises hot code. Measured with 10,000 ConfigMaps: RSS per cached object 1.28× Go's instead
 * of 1.48×, 6 MiB less after 2,000 reconciles at 1 worker, CPU per reconcile 0.76× and 1.01× Go's
 * at 1 and 10 workers instead of 0.79× and 1.11× (bench/README.md, "Bun's memory per cached
 * object"). JavaScriptCore's heap is left at its sizing:
 * a heap 1.3× what survived a full collection (`BUN_JSC_heapGrowthMaxIncrease=0.3` with
 * `BUN_JSC_smallHeapGrowthFactor=1.3`) took 6–12 MiB off the RSS after 2,000 reconciles and 5–8
 * MiB off a relist's peak, for 12–25 % more CPU per reconcile in both runs that measured it
 * (bench/README.md, "Engine heap settings").
 */
export const BUN_ENV: Readonly<Record<string, string>> = {
  MIMALLOC_PURGE_DELAY: "0",
  BUN_JSC_useFTLJIT: "0",
};

/**
 * Environment Rudder runs a Node operator with: `rudder build --runtime node`'s image, `rudder dev`
 * and a Node scaffold's `start`/`run` scripts. Node allocates with glibc's malloc as Deno does,
 * and the same fixed mmap threshold keeps the freed buffers of large list pages from staying
 * resident. With {@linkcode NODE_V8_FLAGS}, measured against Node's defaults (2 rounds, 2,000
 * ConfigMaps, bench/results/2026-12-03-node-settings.md): RSS per cached object 1.89× Go's
 * instead of 3.44×, 114 MiB after 500 reconciles instead of 147, idle 105 MiB instead of 124,
 * with the same CPU and throughput. Two glibc arenas instead of up to eight per core
 * keep fewer half-used heaps after a sync: with 10,000 ConfigMaps, RSS per cached object 1.25× Go's
 * instead of 1.40× and 1.58× instead of 1.76× in two runs, a relist peak 2.5 MiB lower, with the
 * same CPU per reconcile within the rounds' spread (bench/README.md, "Engine heap settings").
 */
export const NODE_RUNTIME_ENV: Readonly<Record<string, string>> = {
  ...DENO_ENV,
  MALLOC_ARENA_MAX: "2",
};

/**
 * V8 flags Rudder runs a Node operator with: wherever {@linkcode NODE_RUNTIME_ENV} applies (the
 * single executable carries them in its `execArgv`). The same 2 MiB semi-space as Deno's, for
 * the same reason ({@linkcode DENO_V8_FLAGS}). A fixed old-generation growth
 * (`--heap-growing-percent=30`) changed neither the RSS per cached object nor a relist's peak, on
 * Node or Deno (bench/README.md, "Engine heap settings").
 */
export const NODE_V8_FLAGS: readonly string[] = DENO_V8_FLAGS;

/** The environment Rudder runs an operator with on `runtime`. */
export function operatorEnv(runtime: Runtime): Readonly<Record<string, string>> {
  return runtime === "deno" ? DENO_ENV : runtime === "bun" ? BUN_ENV : NODE_RUNTIME_ENV;
}

/** {@linkcode operatorEnv} as `NAME=value` words, for a shell, a `deno task` or a script. */
export function envAssignments(runtime: Runtime): string[] {
  return Object.entries(operatorEnv(runtime)).map(([name, value]) => `${name}=${value}`);
}

/** `--v8-flags=…` of {@linkcode DENO_V8_FLAGS}, as `deno run` and `deno compile` take it. */
export function denoV8FlagsArg(): string {
  return `--v8-flags=${DENO_V8_FLAGS.join(",")}`;
}

/**
 * The command that runs the TypeScript module `file` on `runtime`; for an operator, also the
 * environment it runs with ({@linkcode operatorEnv}), which the caller's environment overrides.
 */
export function runModuleCommand(
  runtime: Runtime,
  file: string,
  env: Record<string, string | undefined>,
  options: { config?: string; operator?: boolean } = {},
): { command: string; args: string[]; env: Record<string, string> } {
  const command = runtimeExecutable(runtime, env);
  const operator = options.operator ? { ...operatorEnv(runtime) } : {};
  if (runtime === "deno") {
    return {
      command,
      env: operator,
      args: [
        "run",
        "-A",
        ...(options.operator ? [denoV8FlagsArg()] : []),
        ...(options.config ? ["--config", options.config] : []),
        file,
      ],
    };
  }
  const flags = runtime === "node" && options.operator ? NODE_V8_FLAGS : [];
  return { command, args: [...flags, file], env: operator };
}

/**
 * How a child process runs this CLI: the path of its `main` module, or its `jsr:` specifier
 * when it was loaded from JSR (a JSR package is imported through its exports only).
 */
export function cliEntrypoint(): string {
  const here = new URL(import.meta.url);
  const main = new URL(`./main${extname(here.pathname)}`, here);
  if (main.protocol === "file:") return fileURLToPath(main);
  const jsr = main.href.match(/^https:\/\/jsr\.io\/(@[^/]+\/[^/]+)\/([^/]+)\/cli\/main\.[jt]s$/);
  return jsr ? `jsr:${jsr[1]}@${jsr[2]}/cli` : main.href;
}
