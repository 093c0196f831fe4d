/**
 * `rudder build`: the operator as one self-contained executable, for a distroless image.
 *
 * - `--runtime deno` (the default): `deno compile` with Rudder's V8 flags (`DENO_V8_FLAGS` in
 *   `project.ts`, baked into the executable) and only the permissions the operator
 *   needs — network to the API server, its own bind addresses and loopback (where its servers'
 *   inner listeners are), reading the service-account directory, the environment variables its
 *   configuration comes from, the host name (leader-election identity) and home directory
 *   (`~/.kube/config`) — plus what `rudder.json` adds.
 *   `deno compile` downloads its runtime (`denort`) on first use; when it cannot, the error
 *   says so and suggests `DENORT_BIN` or `--runtime bun`.
 * - `--runtime bun`: `bun build --compile --bytecode` (see {@linkcode BUN_COMPILE_FLAGS}).
 * - `--runtime node`: a Node single executable application, for this machine's platform only:
 *   `bun build --target=node` bundles the operator and its npm dependencies into one ES module,
 *   which `node --build-sea` embeds in a copy of Node (see {@linkcode nodeSeaConfig}).
 * - `--image <ref>` with `--push` and/or `--output <file>`: then an OCI image of the executable
 *   on a distroless base, made without a Docker daemon (see `image.ts`).
 *
 * @module
 */

import { spawn } from "node:child_process";
import { existsSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import process from "node:process";
import { parseAddress } from "../lib/server/address.ts";
import { Progress } from "../lib/util/progress.ts";
import {
  choiceFlag,
  type CommandIO,
  type CommandSpec,
  listFlag,
  parseCommandArgs,
  stringFlag,
  UsageError,
} from "./args.ts";
import {
  checkImageRequest,
  IMAGE_FLAGS,
  imagePlatform,
  imageRequest,
  nodeSharedLibrary,
  resolveImageBase,
  runImageStep,
} from "./image.ts";
import {
  buildRuntime,
  denoV8FlagsArg,
  findProjectDir,
  loadProject,
  NODE_V8_FLAGS,
  operatorEnv,
  PROJECT_DIR_FLAG,
  type ProjectSettings,
  type Runtime,
  runtimeExecutable,
  RUNTIMES,
} from "./project.ts";

/** Deno's compile targets and the names Bun gives the same platforms. */
export const TARGETS: Readonly<Record<string, string>> = {
  "x86_64-unknown-linux-gnu": "bun-linux-x64",
  "aarch64-unknown-linux-gnu": "bun-linux-arm64",
  "x86_64-apple-darwin": "bun-darwin-x64",
  "aarch64-apple-darwin": "bun-darwin-arm64",
  "x86_64-pc-windows-msvc": "bun-windows-x64",
};

/** Normalizes a target given either way (`x86_64-unknown-linux-gnu` or `bun-linux-x64`). */
export function resolveTarget(target: string): { deno: string; bun: string } {
  if (target in TARGETS) return { deno: target, bun: TARGETS[target] };
  const deno = Object.keys(TARGETS).find((key) => TARGETS[key] === target);
  if (deno) return { deno, bun: target };
  throw new UsageError(
    `unknown --target "${target}"; one of: ${Object.keys(TARGETS).join(", ")} ` +
      `(or Bun's names: ${Object.values(TARGETS).join(", ")})`,
    "build",
  );
}

/** The service-account directory an operator reads its token, CA and namespace from. */
const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/**
 * Environment variables the operator reads: `loadConfig` (`KUBECONFIG`, the in-cluster
 * `KUBERNETES_SERVICE_*`), those the generated Deployment sets for the generated `main.ts` (and,
 * for a sharded operator, `POD_NAME` and `POD_NAMESPACE`: its shard and Lease namespace), and
 * the `yaml` package's debug switches (`LOG_TOKENS`, `LOG_STREAM`), read on every kubeconfig
 * parse. Deno throws on reading any variable not granted.
 */
export const OPERATOR_ENV = [
  "HEALTH_PROBE_BIND_ADDRESS",
  "KUBECONFIG",
  "KUBERNETES_SERVICE_HOST",
  "KUBERNETES_SERVICE_PORT",
  "LEADER_ELECTION_NAMESPACE",
  "LOG_STREAM",
  "LOG_TOKENS",
  "METRICS_BIND_ADDRESS",
  "POD_NAME",
  "POD_NAMESPACE",
];

/**
 * Files the operator reads: the service account. (Deno lets only `--allow-all` read `/proc`,
 * so a compiled operator serves the process metrics that need no `/proc`: CPU time, resident
 * memory and start time.)
 */
export const OPERATOR_READ = [SERVICE_ACCOUNT_DIR];

/**
 * Each server Rudder runs (metrics, probes, webhooks) answers from an inner server on a free
 * loopback port behind its public listener (the forwarder that bounds connections and swaps
 * certificates), so the operator listens and connects on loopback, on ports chosen at start.
 */
const LOOPBACK = "127.0.0.1";

/** `host:port` as Deno's `--allow-net` spells a listening address. */
function listenHost(address: string): string | undefined {
  if (address === "0") return undefined;
  const { hostname, port } = parseAddress(address);
  return hostname.includes(":") ? `[${hostname}]:${port}` : `${hostname}:${port}`;
}

/** The permission flags of `deno compile`, and notes about them for the user. */
export function denoPermissionFlags(
  settings: Pick<
    ProjectSettings,
    "metricsBindAddress" | "healthProbeBindAddress" | "permissions"
  >,
  extra: { apiServers?: string[]; read?: string[] } = {},
): { flags: string[]; notes: string[] } {
  const unique = (values: (string | undefined)[]) =>
    [...new Set(values.filter((v): v is string => !!v))].sort();
  const notes: string[] = [];
  const apiServers = unique([...(extra.apiServers ?? []), ...settings.permissions.apiServers]);
  const flags: string[] = [];
  if (apiServers.length > 0) {
    const net = unique([
      ...apiServers,
      listenHost(settings.metricsBindAddress),
      listenHost(settings.healthProbeBindAddress),
      LOOPBACK,
      ...settings.permissions.net,
    ]);
    flags.push(`--allow-net=${net.join(",")}`);
  } else {
    flags.push("--allow-net");
    notes.push(
      "network access is not limited to the API server: its address differs per cluster. " +
        "Pass --api-server <host:port> (the cluster's KUBERNETES_SERVICE_HOST:" +
        "KUBERNETES_SERVICE_PORT) or list it in rudder.json permissions.apiServers to limit it",
    );
  }
  flags.push(
    `--allow-read=${
      unique([...OPERATOR_READ, ...(extra.read ?? []), ...settings.permissions.read])
        .join(",")
    }`,
  );
  flags.push(`--allow-env=${unique([...OPERATOR_ENV, ...settings.permissions.env]).join(",")}`);
  // hostname: the leader-election identity; homedir: loadConfig's ~/.kube/config fallback.
  flags.push("--allow-sys=homedir,hostname");
  return { flags, notes };
}

/**
 * Bun's compile flags. `--bytecode` (ESM, for the operator's top-level await) starts the
 * scaffold's operator about 2.5× faster (median 85 ms against 239 ms to /healthz, Bun 1.4.5,
 * x64) for 4 MiB more (109 MiB against 105 MiB); `--minify` saves 0.5 MiB and no start-up time,
 * and would garble stack traces, so it is left out.
 */
export const BUN_COMPILE_FLAGS: readonly string[] = ["--bytecode", "--format=esm"];

/**
 * How `rudder build --runtime node` bundles the operator (with Bun's bundler) into the one ES
 * module that `node --build-sea` embeds. Minified syntax and whitespace, names kept (so stack
 * traces still name functions, by column of a few long lines): the scaffold's idle operator held
 * 75.4 MiB instead of 76.4 (medians of 5, bench/results/2026-12-04-n-node-idle.md); `--minify`,
 * names too, held 74.3 MiB, and is left out for the names.
 */
export const NODE_BUNDLE_FLAGS: readonly string[] = [
  "--target=node",
  "--format=esm",
  "--minify-syntax",
  "--minify-whitespace",
];

/** A command `rudder build` runs. */
export interface BuildStep {
  command: string;
  args: string[];
}

/** What `rudder build` runs. */
export interface BuildPlan {
  /** The command that writes the executable. */
  command: string;
  args: string[];
  /** The executable it writes. */
  output: string;
  notes: string[];
  /** Commands run first, in order (Node: the bundler). */
  before: BuildStep[];
  /** Files written before anything runs, by absolute path (Node: the SEA configuration). */
  files: Record<string, string>;
}

/**
 * The configuration `node --build-sea` reads: the bundled operator as an ES module main (Node 26
 * runs an ESM main with top-level await), written to `output`. Without the warning Node prints
 * on every start of a single executable; with V8's code cache of the main module: the
 * scaffold's operator got as far as reading its kubeconfig in a median 320 ms instead of 411 ms
 * (8 starts each, a machine with load 9 on 2 cores, Node 26.10) for 0.4 MiB more. The executable
 * runs with Rudder's V8 flags for Node (`NODE_V8_FLAGS` in `project.ts`) as its `execArgv`.
 */
export function nodeSeaConfig(bundle: string, output: string): Record<string, unknown> {
  return {
    main: bundle,
    mainFormat: "module",
    output,
    disableExperimentalSEAWarning: true,
    useCodeCache: true,
    execArgv: [...NODE_V8_FLAGS],
  };
}

/** The platform this machine builds for, as a target triple (Node builds for no other). */
export function hostTarget(
  platform: string = process.platform,
  arch: string = process.arch,
): string | undefined {
  const cpu = arch === "x64" ? "x86_64" : arch === "arm64" ? "aarch64" : undefined;
  const os = platform === "linux"
    ? "unknown-linux-gnu"
    : platform === "darwin"
    ? "apple-darwin"
    : platform === "win32"
    ? "pc-windows-msvc"
    : undefined;
  return cpu && os ? `${cpu}-${os}` : undefined;
}

/** Options of {@linkcode buildPlan}. */
export interface BuildOptions {
  runtime: Runtime;
  target?: string;
  /** Output path, relative to the project; default `dist/<name>`. */
  out?: string;
  apiServers?: string[];
  read?: string[];
  /** Executable of the runtime; default found with `runtimeExecutable`. */
  executable?: string;
  /** Node: the executable of Bun, its bundler; default found with `runtimeExecutable`. */
  bundler?: string;
}

/** The command line that compiles the project. */
export function buildPlan(
  settings: ProjectSettings,
  options: BuildOptions,
  env: Record<string, string | undefined> = {},
): BuildPlan {
  const target = options.target ? resolveTarget(options.target) : undefined;
  const windows = target?.deno.includes("windows") ?? false;
  const output = resolve(
    settings.dir,
    options.out ?? `dist/${settings.name}${windows ? ".exe" : ""}`,
  );
  const command = options.executable ?? runtimeExecutable(options.runtime, env);
  if (options.runtime === "node") {
    if (target && target.deno !== hostTarget()) {
      throw new UsageError(
        `--runtime node builds for this machine only (${hostTarget() ?? process.platform}), ` +
          `not ${target.deno}: Node makes a single executable from its own binary`,
        "build",
      );
    }
    // The bundle and the configuration sit beside the executable, out of the source tree.
    const work = join(dirname(output), `.${basename(output)}.sea`);
    const bundle = join(work, "main.mjs");
    const config = join(work, "sea-config.json");
    const bundler = options.bundler ?? runtimeExecutable("bun", env);
    return {
      command,
      args: ["--build-sea", config],
      output,
      notes: [],
      before: [{
        command: bundler,
        args: ["build", ...NODE_BUNDLE_FLAGS, "--outfile", bundle, settings.main],
      }],
      files: { [config]: `${JSON.stringify(nodeSeaConfig(bundle, output), null, 2)}\n` },
    };
  }
  if (options.runtime === "bun") {
    return {
      command,
      args: [
        "build",
        "--compile",
        ...BUN_COMPILE_FLAGS,
        ...(target ? [`--target=${target.bun}`] : []),
        "--outfile",
        output,
        settings.main,
      ],
      output,
      notes: [],
      before: [],
      files: {},
    };
  }
  const { flags, notes } = denoPermissionFlags(settings, {
    apiServers: options.apiServers,
    read: options.read,
  });
  const config = resolve(settings.dir, "deno.json");
  return {
    command,
    args: [
      "compile",
      ...flags,
      denoV8FlagsArg(),
      ...(existsSync(config) ? ["--config", config] : []),
      ...(target ? ["--target", target.deno] : []),
      "--output",
      output,
      settings.main,
    ],
    output,
    notes,
    before: [],
    files: {},
  };
}

/**
 * When `deno compile` failed for want of `denort` (the runtime it copies into the executable,
 * downloaded on first use), a message saying so and what to do; otherwise undefined.
 */
export function explainDenoCompileFailure(
  output: string,
  env: Record<string, string | undefined>,
  target?: string,
): string | undefined {
  const aboutDenort = /denort|dl\.deno\.land|base binary/i.test(output);
  if (!aboutDenort) return undefined;
  // deno colours its output even into a pipe; the colour codes go.
  // deno-lint-ignore no-control-regex
  const lines = output.split("\n").map((line) => line.replace(/\x1b\[[0-9;]*m/g, "").trim());
  const cause =
    lines.find((line) =>
      /Could not find denort|error sending request|failed to|denied|timed out/i.test(line)
    )?.replace(/^\d+:\s*/, "") ?? lines.find((line) => line.startsWith("error:")) ?? "";
  const platform = target ? ` for ${target}` : "";
  const what = env.DENORT_BIN
    ? `deno compile could not use DENORT_BIN=${env.DENORT_BIN} as its runtime (denort)`
    : "deno compile could not download denort, the Deno runtime it copies into the executable " +
      "(it fetches it from dl.deno.land on first use)";
  return `${what}${cause ? `: ${cause}` : ""}.\n` +
    `Set DENORT_BIN to a denort binary of the same Deno version${platform}, ` +
    "or build with --runtime bun (bun build --compile needs no download).";
}

/** `rudder build`. */
export const buildSpec: CommandSpec = {
  name: "build",
  summary: "compile the operator into one self-contained executable",
  positionals: [],
  flags: {
    dir: PROJECT_DIR_FLAG,
    runtime: {
      type: "string",
      value: "deno|bun|node",
      description: "deno compile, bun build --compile, or a Node single executable application " +
        "(default: node for a project without a deno.json, else deno).",
    },
    target: {
      type: "string",
      value: "<triple>",
      description: "Platform, e.g. x86_64-unknown-linux-gnu (default: this machine's).",
    },
    out: {
      type: "string",
      value: "<path>",
      description: "The executable, relative to the project (default: dist/<name>).",
    },
    "api-server": {
      type: "string",
      multiple: true,
      value: "<host:port>",
      description: "Deno: the only API server the executable may reach.",
    },
    "allow-read": {
      type: "string",
      multiple: true,
      value: "<path>",
      description: "Deno: another file it may read, e.g. a kubeconfig for use outside a cluster.",
    },
    ...IMAGE_FLAGS,
  },
  details: [
    "Targets: " + Object.keys(TARGETS).join(", ") + "; Bun's names work too.",
    "Deno's permissions come from the operator's needs and rudder.json's permissions field.",
  ],
  examples: [
    "rudder build",
    "rudder build --api-server 10.96.0.1:443 --target x86_64-unknown-linux-gnu",
    "rudder build --runtime bun --out dist/my-operator",
    "rudder build --runtime bun --image ghcr.io/me/my-operator:0.1.0 --push",
    "rudder build --runtime node --image my-operator:0.1.0 --output dist/image.tar",
    "rudder build --image my-operator:0.1.0 --output dist/image.tar && podman load -i dist/image.tar",
  ],
};

function formatSize(bytes: number): string {
  return bytes >= 1024 * 1024
    ? `${(bytes / (1024 * 1024)).toFixed(1)} MiB`
    : `${(bytes / 1024).toFixed(1)} KiB`;
}

/** What `rudder build` says it is compiling with. */
const COMPILERS: Record<Runtime, string> = {
  deno: "deno compile",
  bun: "bun build --compile",
  node: "bun build --target=node and node --build-sea",
};

/** Runs one command of a build to its end; resolves its exit code and what it printed. */
async function runStep(step: BuildStep, cwd: string, io: CommandIO) {
  const child = spawn(step.command, step.args, {
    cwd,
    env: io.env as Record<string, string>,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const collect = (chunk: Buffer) => {
    output += chunk;
  };
  child.stdout!.on("data", collect);
  child.stderr!.on("data", collect);
  const code = await new Promise<number | null>((resolveExit, reject) => {
    child.on("error", reject);
    child.on("close", (exitCode) => resolveExit(exitCode));
  });
  return { code, output };
}

/** Runs `rudder build`. */
export async function runBuild(args: string[], io: CommandIO): Promise<number> {
  const parsed = parseCommandArgs(buildSpec, args);
  if (!parsed) return 0;
  const dirFlag = stringFlag(parsed, "dir");
  const dir = dirFlag ? resolve(io.cwd, dirFlag) : findProjectDir(io.cwd);
  const runtime = choiceFlag(parsed, "runtime", RUNTIMES, buildRuntime(dir), "build");
  const target = stringFlag(parsed, "target");
  if (target) resolveTarget(target); // a usage error before anything runs
  const image = imageRequest(parsed, io.cwd);
  let platform;
  try {
    platform = image && imagePlatform(target && resolveTarget(target).deno, process.arch);
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err), "build");
  }
  const settings = loadProject(dir);
  const plan = buildPlan(settings, {
    runtime,
    target,
    out: stringFlag(parsed, "out"),
    apiServers: listFlag(parsed, "api-server"),
    read: listFlag(parsed, "allow-read").map((path) => resolve(io.cwd, path)),
  }, io.env);
  for (const note of plan.notes) io.err(`note: ${note}`);
  // The image's inputs first: no compiling when the image cannot be made.
  const extraFiles = image && platform && runtime === "node" ? [nodeSharedLibrary(platform)] : [];
  if (image) await checkImageRequest(image, io);
  const base = image && platform ? await resolveImageBase(image, platform, io) : undefined;
  mkdirSync(dirname(plan.output), { recursive: true });
  for (const [path, content] of Object.entries(plan.files)) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, content);
  }
  const progress = new Progress({ write: io.err, prefix: "rudder build: " });
  const step = progress.start(`compiling ${settings.main} with ${COMPILERS[runtime]}`);
  for (const command of [...plan.before, { command: plan.command, args: plan.args }]) {
    io.err(`$ ${[command.command, ...command.args].join(" ")}`);
    const { code, output } = await runStep(command, settings.dir, io);
    if (code === 0) continue;
    const name = command.command === plan.command ? runtime : "bun build";
    step.fail(`${name} exited with ${code}`);
    const explained = runtime === "deno"
      ? explainDenoCompileFailure(output, io.env, target && resolveTarget(target).deno)
      : undefined;
    io.err(output.trimEnd());
    throw new Error(explained ?? `${name} exited with ${code}; its output is above`);
  }
  step.done();
  const size = statSync(plan.output).size;
  io.out(`${relative(io.cwd, plan.output) || plan.output} (${formatSize(size)})`);
  if (image && platform) {
    await runImageStep(image, {
      executablePath: plan.output,
      name: settings.name,
      projectDir: settings.dir,
      platform,
      base,
      processEnv: operatorEnv(runtime),
      extraFiles,
    }, io);
  }
  return 0;
}
