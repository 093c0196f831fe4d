/**
 * `deno task bench`: Rudder on Deno, Bun and Node side by side with Go controller-runtime (on
 * protobuf and on JSON), `@kubernetes/client-node` and per-runtime floors, against one control
 * plane, in rounds; each round runs every measure's contenders in a fresh random order.
 * Results: bench/results/<date>.md and .json, with medians and per-round ratios against Go
 * controller-runtime on protobuf. See bench/README.md.
 *
 * Usage: deno run -A bench/suite.ts [--rounds 5] [--objects 10000] [--reconcile-objects 2000]
 *   [--latency-seconds 60] [--rate 200] [--measures sync,relist,reconcile,latency,startup,churn]
 *   (and `sharding`, not run by default: bench/sharding.ts, Rudder alone)
 *   [--churn-minutes 30] [--churn-rate 50] [--only name,name] [--variants on|off] [--name <suffix>]
 *
 * @module
 */

import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createServer as createHttpServer } from "node:http";
import os from "node:os";
import { dirname, join, relative } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { parse as parseYaml } from "yaml";
import { type Client, newClient } from "../lib/client/client.ts";
import { VERSION } from "../lib/version.ts";
import { ConfigMap } from "../lib/api/mod.ts";
import { ENVTEST_KUBERNETES_VERSION } from "../lib/testing/assets.ts";
import { Environment } from "../lib/testing/envtest.ts";
import { ROOT, setup } from "../tools/setup.ts";
import { BUN_COMPILE_FLAGS, NODE_BUNDLE_FLAGS, nodeSeaConfig } from "../cli/build.ts";
import {
  BUN_ENV,
  DENO_ENV,
  DENO_V8_FLAGS,
  NODE_RUNTIME_ENV,
  NODE_V8_FLAGS,
  operatorEnv,
} from "../cli/project.ts";
import {
  residentMemory,
  SENT_ANNOTATION,
  SEQ_ANNOTATION,
  TOKEN_ANNOTATION,
} from "./contenders/measure.ts";
import { runShardingBench, type ShardingBenchResult, shardingMarkdown } from "./sharding.ts";
import {
  measureRelist,
  RELIST_SETTLE_MS,
  RELIST_TIMEOUT_MS,
  RelistProxy,
  upstreamFromKubeconfig,
  writeProxyKubeconfig,
} from "./relist.ts";

const BENCH = dirname(fileURLToPath(import.meta.url));
const RESULTS = join(BENCH, "results");
const GO_PEER = join(BENCH, "peers", "controller-runtime");
const NODE_PEER = join(BENCH, "peers", "client-node");
const RUDDER = join(BENCH, "contenders", "rudder.ts");
const FLOOR = join(BENCH, "peers", "floor.ts");
const IDLE_FLOOR = join(BENCH, "peers", "idle_floor.mjs");
const BUN = join(ROOT, "node_modules", "bun", "bin", "bun.exe");
/** The peer's own Node (the `node` package): client-node 2.x needs Node 22.19 or later. */
const NODE = join(NODE_PEER, "node_modules", ".bin", "node");
/** The Node Rudder runs on (the `node` package of the checkout: Node 26). */
const NODE_RUDDER = join(ROOT, "node_modules", "node", "bin", "node");
const DENO = process.execPath;

/** Bun's environment without its mimalloc setting (`rudder-bun:mimalloc-defaults`). */
const BUN_ENV_BUT_MIMALLOC = Object.fromEntries(
  Object.entries(BUN_ENV).filter(([name]) => !name.startsWith("MIMALLOC_")),
);

/** Concurrent creates while filling a namespace. */
const CREATE_CONCURRENCY = 32;
/** Random bytes per ConfigMap; base64 makes them 1 KiB of data, distinct per object. */
const PAYLOAD_BYTES = 768;
/** A contender run that has not finished after this long is killed and counted as failed. */
const RUN_TIMEOUT_MS = 5 * 60_000;
/** The reference every ratio divides by. */
const REFERENCE = "go-protobuf";

function log(message: string): void {
  process.stderr.write(`bench: ${message}\n`);
}

type Measure =
  | "sync"
  | "relist"
  | "reconcile-1"
  | "reconcile-10"
  | "latency"
  | "startup"
  | "churn";
const MEASURES: Measure[] = [
  "sync",
  "relist",
  "reconcile-1",
  "reconcile-10",
  "latency",
  "startup",
  "churn",
];
/** What runs without `--measures`: churn takes half an hour per contender, so only when asked. */
const DEFAULT_MEASURES = MEASURES.filter((m) => m !== "churn");
/** How often the churn measure reads the contender's memory. */
const CHURN_SAMPLE_MS = 10_000;

/** One implementation under test, and what it can run. */
interface Contender {
  name: string;
  label: string;
  measures: Measure[];
  /** The command for a measure; built lazily, after `prepare`. */
  command: () => string[];
  /** Added to the harness's environment. */
  env?: Readonly<Record<string, string>>;
  /** Builds or installs what the contender needs. */
  prepare?: () => void;
  /** Part of the memory investigation rather than the comparison. */
  variant?: boolean;
}

function denoCommand(script: string, v8Flags: readonly string[] = [], root = ROOT): string[] {
  return [
    DENO,
    "run",
    "--allow-all",
    "--config",
    join(root, "deno.json"),
    `--v8-flags=${["--expose-gc", ...v8Flags].join(",")}`,
    script,
  ];
}

/**
 * An OTLP/HTTP endpoint that answers every export with 200 and keeps nothing, for the tracing
 * variants: the spans' cost to the operator includes sending them, not a collector's work.
 * Its address reaches the contenders as RUDDER_BENCH_OTLP_ENDPOINT in the harness's environment.
 */
function startDiscardingCollector(): void {
  if (process.env.RUDDER_BENCH_OTLP_ENDPOINT) return;
  const server = createHttpServer((request, response) => {
    request.resume();
    request.on("end", () => {
      response.writeHead(200, { "Content-Type": "application/json" });
      response.end("{}");
    });
  });
  server.listen(0, "127.0.0.1", () => {
    const address = server.address();
    if (typeof address === "object" && address) {
      process.env.RUDDER_BENCH_OTLP_ENDPOINT = `http://127.0.0.1:${address.port}`;
    }
  });
  server.unref();
}

let goBinary = "";
let bunBinary = "";
let nodeBinary = "";

/** Node with a collector the contender can force (`gc()`, as Deno's `--expose-gc`). */
function nodeCommand(script: string, v8Flags: readonly string[] = []): string[] {
  return [NODE_RUDDER, "--expose-gc", ...v8Flags, script];
}
const bunVariantBinaries: Record<string, string> = {};
const nodeVariantBinaries: Record<string, string> = {};

/**
 * `rudder-*:baseline`: Rudder's contenders run from another checkout (`root`, with its own
 * node_modules), as shipped (the same flags and environment); none without `root`.
 */
function baselineVariants(root: string | undefined): {
  name: string;
  label: string;
  command: () => string[];
  env?: Readonly<Record<string, string>>;
  measures: Measure[];
}[] {
  if (!root) return [];
  const script = join(root, relative(ROOT, RUDDER));
  const binaries: { bun?: string; node?: string } = {};
  const measures: Measure[] = ["sync", "reconcile-1", "reconcile-10", "startup"];
  return [
    {
      name: "rudder-deno:baseline",
      label: "Rudder (Deno), the baseline checkout",
      command: () => denoCommand(script, DENO_V8_FLAGS, root),
      env: DENO_ENV,
      measures,
    },
    {
      name: "rudder-bun:baseline",
      label: "Rudder (Bun), the baseline checkout",
      command: () => [BUN, "run", script],
      env: BUN_ENV,
      measures,
    },
    {
      name: "rudder-bun-binary:baseline",
      label: "Rudder (Bun single binary), the baseline checkout",
      command: () => [binaries.bun ||= buildBunBinary(BUN_COMPILE_FLAGS, "baseline", root)],
      env: BUN_ENV,
      measures: ["startup"],
    },
    {
      name: "rudder-node:baseline",
      label: "Rudder (Node), the baseline checkout",
      command: () => nodeCommand(script, NODE_V8_FLAGS),
      env: NODE_RUNTIME_ENV,
      measures,
    },
    {
      name: "rudder-node-binary:baseline",
      label: "Rudder (Node single executable), the baseline checkout",
      // Bundled as before 2026-12-04 (NODE_BUNDLE_FLAGS then).
      command: () => [
        binaries.node ||= buildNodeBinary("baseline", root, ["--target=node", "--format=esm"]),
      ],
      env: NODE_RUNTIME_ENV,
      measures: ["startup"],
    },
  ];
}

function contenders(): Contender[] {
  const all: Contender[] = [
    {
      name: "go-protobuf",
      label: "Go controller-runtime, protobuf",
      measures: MEASURES,
      prepare: () => void (goBinary ||= buildGoPeer()),
      command: () => [goBinary, "--content-type", "protobuf"],
    },
    {
      name: "go-json",
      label: "Go controller-runtime, JSON",
      measures: ["sync", "relist", "reconcile-1", "reconcile-10", "latency", "churn"],
      prepare: () => void (goBinary ||= buildGoPeer()),
      command: () => [goBinary, "--content-type", "json"],
    },
    {
      name: "client-node",
      label: "@kubernetes/client-node informer (Node)",
      measures: ["sync", "relist"],
      prepare: installNodePeer,
      command: () => [NODE, "--expose-gc", join(NODE_PEER, "informer.mjs")],
    },
    {
      name: "rudder-deno",
      label: "Rudder (Deno)",
      measures: MEASURES,
      // What Rudder ships: the V8 flags and the environment of `rudder build` (its image),
      // `rudder dev` and the scaffold.
      command: () => denoCommand(RUDDER, DENO_V8_FLAGS),
      env: DENO_ENV,
    },
    {
      name: "rudder-bun",
      label: "Rudder (Bun)",
      measures: MEASURES,
      command: () => [BUN, "run", RUDDER],
      env: BUN_ENV,
    },
    {
      name: "rudder-bun-binary",
      label: "Rudder (Bun single binary)",
      measures: ["startup"],
      prepare: () => void (bunBinary ||= buildBunBinary()),
      command: () => [bunBinary],
      env: BUN_ENV,
    },
    {
      name: "rudder-node",
      label: "Rudder (Node)",
      measures: MEASURES,
      // Node runs the TypeScript as it is, types stripped: no bundle, no transpiler. With the
      // V8 flags and environment Rudder runs Node operators with.
      command: () => nodeCommand(RUDDER, NODE_V8_FLAGS),
      env: NODE_RUNTIME_ENV,
    },
    {
      name: "rudder-node-binary",
      label: "Rudder (Node single executable)",
      measures: ["startup"],
      prepare: () => void (nodeBinary ||= buildNodeBinary()),
      command: () => [nodeBinary],
      env: NODE_RUNTIME_ENV,
    },
    // Node's deployed memory (bench/README.md, 2026-12-04): how the single executable's bundle
    // is made, and the bundle run by `node` itself instead of a single executable.
    ...([
      ["plain", "bundled without minifying", ["--target=node", "--format=esm"]],
      ["minify-syntax", "bundled with --minify-syntax", [
        "--target=node",
        "--format=esm",
        "--minify-syntax",
      ]],
      ["minify-ws", "bundled with --minify-syntax --minify-whitespace", [
        "--target=node",
        "--format=esm",
        "--minify-syntax",
        "--minify-whitespace",
      ]],
      ["minify", "bundled with --minify (identifiers too)", [
        "--target=node",
        "--format=esm",
        "--minify",
      ]],
    ] as const).map(([suffix, what, flags]): Contender => ({
      name: `rudder-node-binary:${suffix}`,
      label: `Rudder (Node single executable), ${what}`,
      measures: ["startup"],
      prepare: () => void (nodeVariantBinaries[suffix] ||= buildNodeBinary(suffix, ROOT, flags)),
      command: () => [nodeVariantBinaries[suffix]],
      env: NODE_RUNTIME_ENV,
      variant: true,
    })),
    {
      name: "rudder-node:bundle",
      label: "Rudder (Node), the single executable's bundle run by `node` (no type stripping)",
      measures: ["startup"],
      prepare: () => void (nodeBinary ||= buildNodeBinary()),
      command: () => [NODE_RUDDER, ...NODE_V8_FLAGS, join(`${nodeBinary}.sea`, "main.mjs")],
      env: NODE_RUNTIME_ENV,
      variant: true,
    },
  ];
  const runtimeNames = { deno: "Deno", bun: "Bun", node: "Node" } as const;
  const runtimeCommand = (runtime: "deno" | "bun" | "node", script: string) =>
    runtime === "deno"
      ? denoCommand(script)
      : runtime === "bun"
      ? [BUN, "run", script]
      : nodeCommand(script);
  for (const runtime of ["deno", "bun", "node"] as const) {
    for (const wire of ["list", "stream"]) {
      for (const gzip of ["on", "off"]) {
        all.push({
          name: `floor-${runtime}-${wire}${gzip === "on" ? "-gzip" : ""}`,
          label: `floor: ${wire === "list" ? "list GET" : "streaming list"}, ${
            gzip === "on" ? "gzip" : "no gzip"
          } (${runtimeNames[runtime]})`,
          measures: ["sync"],
          env: operatorEnv(runtime),
          command: () => [
            ...runtimeCommand(runtime, FLOOR),
            "--wire",
            wire,
            "--gzip",
            gzip,
          ],
        });
      }
    }
  }
  // The startup measure's floors: an idle operator's wire work in plain JavaScript on each
  // runtime, with the flags and environment Rudder runs an operator with there.
  for (const runtime of ["deno", "bun", "node"] as const) {
    for (
      const [deps, what] of [
        ["", "no dependencies"],
        ["zod", "+ zod"],
        ["deps", "+ zod and LogTape"],
      ] as const
    ) {
      all.push({
        name: `floor-idle${deps ? `-${deps}` : ""}-${runtime}`,
        label: `floor: idle operator, ${what} (${runtimeNames[runtime]})`,
        measures: ["startup"],
        env: operatorEnv(runtime),
        command: () => [
          ...(runtime === "deno"
            ? denoCommand(IDLE_FLOOR, DENO_V8_FLAGS)
            : runtime === "bun"
            ? [BUN, "run", IDLE_FLOOR]
            : nodeCommand(IDLE_FLOOR, NODE_V8_FLAGS)),
          ...(deps ? [`--${deps}`] : []),
        ],
      });
    }
  }
  // The memory investigation: Rudder with runtime settings other than what it ships.
  const variants: {
    name: string;
    label: string;
    command: () => string[];
    env?: Readonly<Record<string, string>>;
    measures: Measure[];
    prepare?: () => void;
  }[] = [
    {
      name: "rudder-deno:v8-defaults",
      label: "Rudder (Deno), V8's defaults (no --max-semi-space-size)",
      command: () => denoCommand(RUDDER, []),
      env: DENO_ENV,
      measures: ["sync", "reconcile-10", "startup"],
    },
    // Measured on 2026-12-04 and not shipped (bench/README.md, "Issue 29 on a quiet machine"):
    // the contender bundled with `deno bundle --platform deno --code-splitting`, whose entry
    // RUDDER_BENCH_DENO_BUNDLE names.
    ...(process.env.RUDDER_BENCH_DENO_BUNDLE
      ? [{
        name: "rudder-deno:bundle",
        label: "Rudder (Deno), the contender bundled by deno bundle",
        command: () => denoCommand(process.env.RUDDER_BENCH_DENO_BUNDLE!, DENO_V8_FLAGS),
        env: DENO_ENV,
        measures: ["sync", "reconcile-1", "reconcile-10", "startup"] as Measure[],
      }]
      : []),
    {
      // Measured on 2026-12-03 and not shipped: 4-5 MiB less idle, but fewer objects/s and a
      // little more CPU at 10 workers in both runs (bench/README.md, "Idle memory").
      name: "rudder-deno:reducer-early",
      label: "Rudder (Deno), + V8's memory reducer after 2 s instead of 8 and 30 s",
      command: () =>
        denoCommand(RUDDER, [
          ...DENO_V8_FLAGS,
          "--memory-reducer-delay-ms=2000",
          "--gc-memory-reducer-start-delay-ms=2000",
        ]),
      env: DENO_ENV,
      measures: ["reconcile-1", "reconcile-10", "startup"],
    },
    {
      name: "rudder-deno:semi1",
      label: "Rudder (Deno), --max-semi-space-size=1 (the default before 2026-12-02)",
      command: () => denoCommand(RUDDER, ["--max-semi-space-size=1"]),
      env: DENO_ENV,
      measures: ["sync", "relist", "reconcile-1", "reconcile-10", "startup"],
    },
    {
      name: "rudder-deno:semi4",
      label: "Rudder (Deno), --max-semi-space-size=4",
      command: () => denoCommand(RUDDER, ["--max-semi-space-size=4"]),
      env: DENO_ENV,
      measures: ["sync", "relist", "reconcile-1", "reconcile-10", "startup"],
    },
    {
      name: "rudder-deno:minor-ms",
      label: "Rudder (Deno), + --minor-ms (young generation marked in place, not copied)",
      command: () => denoCommand(RUDDER, [...DENO_V8_FLAGS, "--minor-ms"]),
      env: DENO_ENV,
      measures: ["sync", "relist", "reconcile-1", "reconcile-10", "startup"],
    },
    {
      name: "rudder-deno:plain-gc",
      label:
        "Rudder (Deno), memory read after V8's plain full collection (the measure before 2026-12-02)",
      command: () => denoCommand(RUDDER, DENO_V8_FLAGS),
      env: { ...DENO_ENV, RUDDER_BENCH_GC: "plain" },
      measures: ["sync", "relist"],
    },
    {
      name: "rudder-deno:fetch",
      label: "Rudder (Deno), Deno's fetch instead of Rudder's HTTP/1.1 client",
      command: () => denoCommand(RUDDER, DENO_V8_FLAGS),
      env: { ...DENO_ENV, RUDDER_DENO_FETCH: "1" },
      measures: ["sync", "reconcile-1", "reconcile-10", "startup"],
    },
    {
      name: "rudder-deno:arena2",
      label: "Rudder (Deno), + MALLOC_ARENA_MAX=2 (the churn investigation)",
      command: () => denoCommand(RUDDER, DENO_V8_FLAGS),
      env: { ...DENO_ENV, MALLOC_ARENA_MAX: "2" },
      measures: ["churn"],
    },
    {
      name: "rudder-deno:trim",
      label: "Rudder (Deno), + MALLOC_TRIM_THRESHOLD_=131072, MALLOC_TOP_PAD_=0 (churn)",
      command: () => denoCommand(RUDDER, DENO_V8_FLAGS),
      env: { ...DENO_ENV, MALLOC_TRIM_THRESHOLD_: "131072", MALLOC_TOP_PAD_: "0" },
      measures: ["churn"],
    },
    {
      name: "rudder-deno:glibc-defaults",
      label: "Rudder (Deno), glibc's malloc defaults (no MALLOC_MMAP_THRESHOLD_)",
      command: () => denoCommand(RUDDER, DENO_V8_FLAGS),
      measures: ["sync", "relist", "reconcile-1", "reconcile-10", "startup"],
    },
    {
      name: "rudder-deno:single-gc",
      label: "Rudder (Deno), + --single-threaded-gc",
      command: () => denoCommand(RUDDER, [...DENO_V8_FLAGS, "--single-threaded-gc"]),
      env: DENO_ENV,
      measures: ["sync", "reconcile-10", "startup"],
    },
    {
      name: "rudder-deno:size",
      label: "Rudder (Deno), + --optimize-for-size",
      command: () => denoCommand(RUDDER, [...DENO_V8_FLAGS, "--optimize-for-size"]),
      env: DENO_ENV,
      measures: ["sync", "reconcile-10", "startup"],
    },
    ...(["deno", "bun"] as const).flatMap((runtime) => {
      const rudder = () =>
        runtime === "deno" ? denoCommand(RUDDER, DENO_V8_FLAGS) : [BUN, "run", RUDDER];
      const Runtime = runtime === "deno" ? "Deno" : "Bun";
      const env = operatorEnv(runtime);
      return [
        {
          name: `rudder-${runtime}:stream`,
          label: `Rudder (${Runtime}), a streaming list (the default before pages of 5,000)`,
          command: () => [...rudder(), "--streaming-list"],
          env,
          measures: ["sync", "relist"] as Measure[],
        },
        {
          // The OpenTelemetry SDK registered (examples/example-operator/tracing.ts), every span
          // batched and sent over OTLP/HTTP to a collector in the harness that discards them.
          name: `rudder-${runtime}:otel`,
          label: `Rudder (${Runtime}), tracing on: the OpenTelemetry SDK and its OTLP exporter`,
          prepare: startDiscardingCollector,
          command: rudder,
          env: { ...env, RUDDER_BENCH_TRACING: "1" },
          measures: ["reconcile-1", "reconcile-10", "startup"] as Measure[],
        },
        {
          name: `rudder-${runtime}:pages1000`,
          label: `Rudder (${Runtime}), a first list in pages of 1,000 instead of 5,000`,
          command: () => [...rudder(), "--page-size", "1000"],
          env,
          measures: ["sync", "relist"] as Measure[],
        },
        {
          name: `rudder-${runtime}:list`,
          label: `Rudder (${Runtime}), one list of everything instead of pages of 5,000`,
          command: () => [...rudder(), "--page-size", "100000"],
          env,
          measures: ["sync", "relist"] as Measure[],
        },
      ];
    }),
    {
      name: "rudder-node:https",
      label: "Rudder (Node), node:https instead of Rudder's HTTP/1.1 client (before 2026-12-04)",
      command: () => nodeCommand(RUDDER, NODE_V8_FLAGS),
      env: { ...NODE_RUNTIME_ENV, RUDDER_NODE_HTTPS: "1" },
      measures: ["sync", "relist", "reconcile-1", "reconcile-10", "latency", "startup"],
    },
    {
      name: "rudder-node:defaults",
      label: "Rudder (Node), Node's defaults (no --max-semi-space-size, no malloc settings)",
      command: () => nodeCommand(RUDDER),
      measures: ["sync", "reconcile-10", "startup"],
    },
    {
      name: "rudder-bun:smol",
      label: "Rudder (Bun), --smol",
      command: () => [BUN, "--smol", "run", RUDDER],
      env: BUN_ENV,
      measures: ["sync", "reconcile-10", "startup"],
    },
    {
      // LogTape's `#util` maps Bun to its `node:util` build; the `browser` condition, matched
      // first, picks the build without it (and every other package's browser build).
      name: "rudder-bun:browser",
      label: "Rudder (Bun), --conditions=browser",
      command: () => [BUN, "--conditions=browser", "run", RUDDER],
      env: BUN_ENV,
      measures: ["sync", "reconcile-1", "reconcile-10", "startup"],
    },
    {
      name: "rudder-bun:ram256",
      label: "Rudder (Bun), BUN_JSC_forceRAMSize 256 MiB",
      command: () => [BUN, "run", RUDDER],
      env: { ...BUN_ENV, BUN_JSC_forceRAMSize: String(256 * 2 ** 20) },
      measures: ["sync", "reconcile-10", "startup"],
    },
    {
      name: "rudder-bun:mimalloc-defaults",
      label: "Rudder (Bun), mimalloc's defaults (no MIMALLOC_PURGE_DELAY=0)",
      command: () => [BUN, "run", RUDDER],
      env: BUN_ENV_BUT_MIMALLOC,
      measures: ["sync", "relist", "reconcile-1", "reconcile-10", "startup"],
    },
    {
      name: "rudder-bun-binary:mimalloc-defaults",
      label: "Rudder (Bun single binary), mimalloc's defaults",
      command: () => [bunBinary ||= buildBunBinary()],
      env: BUN_ENV_BUT_MIMALLOC,
      measures: ["startup"],
    },
    {
      name: "rudder-bun-binary:smol",
      label: "Rudder (Bun single binary), --compile-exec-argv=--smol",
      command: () => [
        bunVariantBinaries.smol ||= buildBunBinary(
          [...BUN_COMPILE_FLAGS, "--compile-exec-argv=--smol"],
          "smol",
        ),
      ],
      env: BUN_ENV,
      measures: ["startup"],
    },
    {
      name: "rudder-bun-binary:minify",
      label: "Rudder (Bun single binary), --minify instead of --bytecode",
      command: () => [bunVariantBinaries.minify ||= buildBunBinary(["--minify"], "minify")],
      env: BUN_ENV,
      measures: ["startup"],
    },
    {
      name: "rudder-bun-binary:bytecode+minify",
      label: "Rudder (Bun single binary), --bytecode and --minify",
      command: () => [
        bunVariantBinaries.both ||= buildBunBinary([...BUN_COMPILE_FLAGS, "--minify"], "both"),
      ],
      env: BUN_ENV,
      measures: ["startup"],
    },
    // Idle memory, second pass (bench/README.md): with RUDDER_BENCH_BASELINE=<a checkout of
    // Rudder with node_modules>, the same contenders run from that checkout in the same rounds,
    // so a change to the start-up path is measured against its parent under the same load.
    ...baselineVariants(process.env.RUDDER_BENCH_BASELINE),
    // Engine heap settings (issue 29, bench/README.md "Engine heap settings (2026-12-03)"):
    // JavaScriptCore's options through BUN_JSC_<option>, V8's old-generation growth, glibc's
    // malloc on Node. Each on top of what Rudder ships for that runtime.
    ...([
      // JSC sizes the heap after a full collection by one of two functions: on a host of 16 GB
      // or more, heapGrowthMaxIncrease·e^(−steepness·heap/RAM) + 1 (Bun: 2 and 1, so about 3×);
      // below, smallHeapGrowthFactor (2×) while the process is under 80 % of RAM.
      ["jsc-small-grow", "BUN_JSC_smallHeapGrowthFactor=1.3 (below 16 GB of RAM only)", {
        BUN_JSC_smallHeapGrowthFactor: "1.3",
      }],
      ["jsc-grow", "the heap 1.3× its live size after a full GC (on any host), not 2–3×", {
        BUN_JSC_heapGrowthMaxIncrease: "0.3",
        BUN_JSC_smallHeapGrowthFactor: "1.3",
      }],
      ["jsc-grow2", "the heap 2× its live size after a full GC (on any host)", {
        BUN_JSC_heapGrowthMaxIncrease: "1",
        BUN_JSC_smallHeapGrowthFactor: "2",
      }],
      [
        "jsc-eden",
        "BUN_JSC_largeHeapSize=2 MiB (the least allocated between GCs, 8 MiB by default)",
        {
          BUN_JSC_largeHeapSize: String(2 * 2 ** 20),
        },
      ],
      ["jsc-grow-eden", "both of jsc-grow and jsc-eden", {
        BUN_JSC_heapGrowthMaxIncrease: "0.3",
        BUN_JSC_smallHeapGrowthFactor: "1.3",
        BUN_JSC_largeHeapSize: String(2 * 2 ** 20),
      }],
      ["jsc-noconc", "BUN_JSC_useConcurrentGC=0 (no allocation while marking)", {
        BUN_JSC_useConcurrentGC: "0",
      }],
      // Bun's memory per cached object (bench/README.md, 2026-12-04): JSC's top JIT tier on, as
      // before BUN_ENV turned it off (run as `rudder-bun:noftl`, the other way round, then).
      ["ftl", "BUN_JSC_useFTLJIT=1 (JSC's top JIT tier on, as before 2026-12-04)", {
        BUN_JSC_useFTLJIT: "1",
      }],
    ] as const).map(([suffix, what, env]) => ({
      name: `rudder-bun:${suffix}`,
      label: `Rudder (Bun), + ${what}`,
      command: () => [BUN, "run", RUDDER],
      env: { ...BUN_ENV, ...env },
      measures: ["sync", "relist", "reconcile-1", "reconcile-10"] as Measure[],
    })),
    // What a first sync pays once, out of the per-object figure (bench/README.md, "Bun's memory
    // per cached object"). Not on Bun: its conservative stack scan keeps the dropped cache alive
    // in some runs (4 of 5 in b-bunobj-probe), and the figure with it.
    {
      name: "rudder-deno:warm",
      label: "Rudder (Deno), baseline after a first sync (dropped)",
      command: () => denoCommand(RUDDER, DENO_V8_FLAGS),
      env: { ...DENO_ENV, RUDDER_BENCH_WARM: "1" },
      measures: ["sync"],
    },
    {
      name: "rudder-deno:grow30",
      label: "Rudder (Deno), + --heap-growing-percent=30 (old generation grows 1.3× between GCs)",
      command: () => denoCommand(RUDDER, [...DENO_V8_FLAGS, "--heap-growing-percent=30"]),
      env: DENO_ENV,
      measures: ["sync", "relist", "reconcile-1", "reconcile-10"],
    },
    {
      name: "rudder-node:grow30",
      label: "Rudder (Node), + --heap-growing-percent=30 (old generation grows 1.3× between GCs)",
      command: () => nodeCommand(RUDDER, [...NODE_V8_FLAGS, "--heap-growing-percent=30"]),
      env: NODE_RUNTIME_ENV,
      measures: ["sync", "relist", "reconcile-1", "reconcile-10"],
    },
    {
      // Shipped since 2026-12-03: NODE_RUNTIME_ENV has MALLOC_ARENA_MAX=2.
      name: "rudder-node:arenas",
      label: "Rudder (Node), glibc's arenas (no MALLOC_ARENA_MAX=2, the default before 2026-12-03)",
      command: () => nodeCommand(RUDDER, NODE_V8_FLAGS),
      env: DENO_ENV,
      measures: ["sync", "relist", "reconcile-1", "reconcile-10", "startup"],
    },
    {
      name: "rudder-node:mmap16k",
      label: "Rudder (Node), + MALLOC_MMAP_THRESHOLD_=16384 instead of 131072",
      command: () => nodeCommand(RUDDER, NODE_V8_FLAGS),
      env: { ...NODE_RUNTIME_ENV, MALLOC_MMAP_THRESHOLD_: "16384" },
      measures: ["sync", "relist", "reconcile-1", "reconcile-10"],
    },
  ];
  for (const variant of variants) all.push({ ...variant, variant: true });
  return all;
}

/** Runs a set-up command to completion, its output on stderr; throws when it fails. */
function runSetupCommand(command: string, args: string[], cwd: string): void {
  const result = spawnSync(command, args, {
    cwd,
    stdio: ["ignore", process.stderr, process.stderr],
  });
  if (result.error || result.status !== 0) {
    throw new Error(
      `${command} ${args.join(" ")} failed (${result.error?.message ?? `exit ${result.status}`})`,
    );
  }
}

function sha256(...parts: (string | Uint8Array)[]): string {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part);
  return hash.digest("hex");
}

function commandOutput(command: string, args: string[]): string {
  const result = spawnSync(command, args, { encoding: "utf8" });
  if (result.error || result.status !== 0) return "unknown";
  return result.stdout.trim();
}

/**
 * Drops what the page cache holds of `file` (`posix_fadvise(POSIX_FADV_DONTNEED)`, through GNU
 * dd), so that the next process to run it reads its pages from disk. A file written in a few large
 * `write()`s, as `node --build-sea` writes its executable, is cached in large folios, and Linux
 * (6.18 here) maps a whole folio on a page fault: the Node single executable of an empty script
 * then had 64 MiB of its file resident instead of 30 (bench/README.md, "Node's deployed memory").
 * An image's layer, unpacked in small writes, or a file read back from disk, is not cached so.
 */
function dropPageCache(file: string): void {
  // Written back first (fdatasync): the kernel drops only clean pages.
  const result = spawnSync(
    "dd",
    [`of=${file}`, "oflag=nocache", "conv=notrunc,fdatasync", "count=0"],
    { stdio: "ignore" },
  );
  if (result.error || result.status !== 0) log(`could not drop ${file} from the page cache`);
}

/** `${XDG_CACHE_HOME:-~/.cache}/rudder/bench`: built peers live outside the repository. */
function benchCacheDirectory(): string {
  const cacheHome = process.env.XDG_CACHE_HOME || join(os.homedir(), ".cache");
  return join(cacheHome, "rudder", "bench");
}

/** Builds into the bench cache under a name stamped with `stamp`, unless already there. */
function buildCached(prefix: string, stamp: string, build: (output: string) => void): string {
  const binary = join(benchCacheDirectory(), `${prefix}-${stamp}`);
  if (existsSync(binary)) return binary;
  log(`building ${binary}`);
  mkdirSync(dirname(binary), { recursive: true });
  const partial = `${binary}.partial`;
  build(partial);
  renameSync(partial, binary);
  for (const file of readdirSync(dirname(binary))) {
    const stale = join(dirname(binary), file);
    if (file.startsWith(`${prefix}-`) && stale !== binary) rmSync(stale, { force: true });
  }
  return binary;
}

/** The Go peer, rebuilt only when its sources or the Go toolchain change. */
function buildGoPeer(): string {
  const sources = ["go.mod", "go.sum", "main.go"].map((file) => readFileSync(join(GO_PEER, file)));
  const stamp = sha256(commandOutput("go", ["version"]), ...sources).slice(0, 16);
  return buildCached(
    "controller-runtime",
    stamp,
    (output) => runSetupCommand("go", ["build", "-trimpath", "-o", output, "."], GO_PEER),
  );
}

/**
 * The Rudder contender as a Bun single binary, compiled with `flags` (by default as
 * `rudder build --runtime bun` does: `BUN_COMPILE_FLAGS`); rebuilt every run.
 */
function buildBunBinary(
  flags: readonly string[] = BUN_COMPILE_FLAGS,
  suffix = "",
  root = ROOT,
): string {
  const output = join(benchCacheDirectory(), `rudder-bun-binary${suffix ? `-${suffix}` : ""}`);
  mkdirSync(dirname(output), { recursive: true });
  log(`building ${output}`);
  runSetupCommand(
    BUN,
    ["build", "--compile", ...flags, join(root, relative(ROOT, RUDDER)), "--outfile", output],
    root,
  );
  return output;
}

/**
 * The Rudder contender as a Node single executable application, made as
 * `rudder build --runtime node` makes one: `bun build --target=node` bundles it into one ES
 * module, `node --build-sea` embeds that in a copy of Node with the same configuration
 * (`nodeSeaConfig` in cli/build.ts); rebuilt every run.
 */
function buildNodeBinary(
  suffix = "",
  root = ROOT,
  bundleFlags: readonly string[] = NODE_BUNDLE_FLAGS,
): string {
  const output = join(benchCacheDirectory(), `rudder-node-binary${suffix ? `-${suffix}` : ""}`);
  const work = `${output}.sea`;
  mkdirSync(work, { recursive: true });
  log(`building ${output}`);
  const bundle = join(work, "main.mjs");
  runSetupCommand(
    BUN,
    ["build", ...bundleFlags, "--outfile", bundle, join(root, relative(ROOT, RUDDER))],
    root,
  );
  const config = join(work, "sea-config.json");
  writeFileSync(config, JSON.stringify(nodeSeaConfig(bundle, output)));
  runSetupCommand(NODE_RUDDER, ["--build-sea", config], ROOT);
  dropPageCache(output);
  return output;
}

/** Runs `npm ci` in the client-node peer unless node_modules was installed from this lock file. */
function installNodePeer(): void {
  const lock = readFileSync(join(NODE_PEER, "package-lock.json"));
  const stamp = sha256(readFileSync(join(NODE_PEER, "package.json")), lock);
  const stampPath = join(NODE_PEER, "node_modules", ".rudder-bench-stamp");
  if (existsSync(stampPath) && readFileSync(stampPath, "utf8") === stamp) return;
  log("installing the client-node peer (npm ci)");
  runSetupCommand("npm", ["ci", "--no-audit", "--no-fund", "--loglevel=error"], NODE_PEER);
  if (!existsSync(NODE)) throw new Error(`npm ci installed no ${NODE}`);
  writeFileSync(stampPath, stamp);
}

/** Child processes running now, so a signal or a failure can stop them. */
const children = new Set<ChildProcess>();

function killChildren(): void {
  for (const child of children) {
    try {
      child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
  }
}

function loadavg(): string {
  return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
}

function lastLines(text: string, count: number): string {
  // deno-lint-ignore no-control-regex
  const plain = text.replace(/\x1b\[[0-9;]*m/g, "").trim();
  return plain.split("\n").slice(-count).join("\n");
}

type Fields = Record<string, number | boolean | number[][]>;

/** A running contender: its JSON lines as they come, and how it ended. */
interface Running {
  child: ChildProcess;
  lines: AsyncGenerator<Fields>;
  exited: Promise<number | null>;
  stderr: () => string;
}

function start(contender: Contender, args: string[]): Running {
  const command = contender.command();
  const child = spawn(command[0], [...command.slice(1), ...args], {
    cwd: ROOT,
    env: { ...process.env, DENO_NO_UPDATE_CHECK: "1", ...contender.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let stderr = "";
  child.stderr!.setEncoding("utf8").on(
    "data",
    (chunk: string) => stderr = (stderr + chunk).slice(-20_000),
  );
  const queue: Fields[] = [];
  let wake: (() => void) | undefined;
  let closed = false;
  let buffer = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    buffer += chunk;
    let newline;
    while ((newline = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, newline).trim();
      buffer = buffer.slice(newline + 1);
      if (!line.startsWith("{")) continue;
      try {
        queue.push(JSON.parse(line));
      } catch {
        // Not ours.
      }
      wake?.();
    }
  });
  const exited = new Promise<number | null>((resolve) => {
    child.on("error", (err) => {
      stderr += `\n${err.message}`;
      resolve(null);
    });
    child.on("close", (code) => {
      children.delete(child);
      closed = true;
      wake?.();
      resolve(code);
    });
  });
  async function* lines(): AsyncGenerator<Fields> {
    for (;;) {
      if (queue.length > 0) {
        yield queue.shift()!;
        continue;
      }
      if (closed) return;
      await new Promise<void>((resolve) => wake = resolve);
      wake = undefined;
    }
  }
  return { child, lines: lines(), exited, stderr: () => stderr };
}

/** Stops a contender: SIGTERM, then SIGKILL after 5 s. */
async function stopChild(running: Running): Promise<void> {
  if (running.child.exitCode !== null || running.child.signalCode !== null) return;
  running.child.kill("SIGTERM");
  const timer = setTimeout(() => running.child.kill("SIGKILL"), 5000);
  await running.exited;
  clearTimeout(timer);
}

/** Runs `body` with a deadline; kills the contender when it passes. */
async function withDeadline<T>(
  running: Running,
  body: () => Promise<T>,
  timeoutMs = RUN_TIMEOUT_MS,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      running.child.kill("SIGKILL");
      reject(new Error(`no result after ${timeoutMs / 1000} s`));
    }, timeoutMs);
  });
  try {
    return await Promise.race([body(), deadline]);
  } finally {
    clearTimeout(timer);
    await stopChild(running);
  }
}

async function nextLine(running: Running): Promise<Fields> {
  const { value, done } = await running.lines.next();
  if (done) {
    const code = await running.exited;
    throw new Error(`exit ${code}: ${lastLines(running.stderr(), 6)}`);
  }
  return value;
}

/** The namespaces and settings every run uses. */
interface Setting {
  kubeconfig: string;
  client: Client;
  syncNamespace: string;
  reconcileNamespace: string;
  idleNamespace: string;
  objects: number;
  reconcileObjects: number;
  latencySeconds: number;
  rate: number;
  idleSettleMs: number;
  /**
   * The same kubeconfig as JSON, for the startup measure: an operator in a cluster reads no
   * kubeconfig file and so never loads a YAML parser; Rudder reads a JSON one without it.
   */
  jsonKubeconfig: string;
  churnMinutes: number;
  churnRate: number;
  /** The relist measure's proxy, and a kubeconfig that points to it. */
  relist?: { proxy: RelistProxy; kubeconfig: string };
}

let runCounter = 0;

async function runMeasure(contender: Contender, measure: Measure, s: Setting): Promise<Fields> {
  const base = ["--kubeconfig", s.kubeconfig];
  if (measure === "sync") {
    const running = start(contender, [
      ...base,
      "--mode",
      "sync",
      "--namespace",
      s.syncNamespace,
      "--objects",
      String(s.objects),
    ]);
    return await withDeadline(running, async () => {
      const result = await nextLine(running);
      if (result.objects !== s.objects) {
        throw new Error(`synced ${result.objects} objects, expected ${s.objects}`);
      }
      return {
        ...result,
        rssPerObject: ((result.rssSyncedBytes as number) - (result.rssBaselineBytes as number)) /
          s.objects,
        heapPerObject: ((result.heapSyncedBytes as number) - (result.heapBaselineBytes as number)) /
          s.objects,
      };
    });
  }
  if (measure === "relist") {
    // The sync through the relist proxy, held; then the forced 410 and the relist (bench/relist.ts).
    const { proxy, kubeconfig } = s.relist!;
    proxy.reset();
    const running = start(contender, [
      ...["--kubeconfig", kubeconfig, "--mode", "sync", "--hold"],
      ...["--namespace", s.syncNamespace, "--objects", String(s.objects)],
    ]);
    return await withDeadline(running, async () => {
      const synced = await nextLine(running);
      if (synced.objects !== s.objects) {
        throw new Error(`synced ${synced.objects} objects, expected ${s.objects}`);
      }
      return await measureRelist(proxy, running.child.pid!, {
        collection: `/api/v1/namespaces/${s.syncNamespace}/configmaps`,
        steadyMs: s.idleSettleMs,
        settleMs: RELIST_SETTLE_MS,
        timeoutMs: RELIST_TIMEOUT_MS,
        log: (line) => log(`relist ${contender.name}: ${line}`),
      });
    });
  }
  if (measure === "reconcile-1" || measure === "reconcile-10") {
    const workers = measure === "reconcile-1" ? 1 : 10;
    const token = `r${Date.now().toString(36)}-${++runCounter}`;
    const running = start(contender, [
      ...base,
      "--mode",
      "reconcile",
      "--namespace",
      s.reconcileNamespace,
      "--objects",
      String(s.reconcileObjects),
      "--workers",
      String(workers),
      "--token",
      token,
    ]);
    return await withDeadline(running, async () => {
      const result = await nextLine(running);
      if (result.objects !== s.reconcileObjects) {
        throw new Error(`patched ${result.objects} objects, expected ${s.reconcileObjects}`);
      }
      return { ...result, objectsPerSecond: s.reconcileObjects / ((result.ms as number) / 1000) };
    });
  }
  if (measure === "latency") {
    const prefix = `l${Date.now().toString(36)}-${++runCounter}`;
    const count = Math.round(s.rate * s.latencySeconds);
    const running = start(contender, [
      ...base,
      "--mode",
      "latency",
      "--namespace",
      s.reconcileNamespace,
      "--objects",
      String(s.reconcileObjects),
      "--workers",
      "10",
      "--token",
      prefix,
      "--count",
      String(count),
    ]);
    return await withDeadline(running, async () => {
      const ready = await nextLine(running);
      if (!ready.ready) throw new Error("expected the ready line");
      const achievedRate = await driveChanges(s, prefix, count);
      const result = await nextLine(running);
      return { ...result, achievedRate };
    });
  }
  if (measure === "churn") return await runChurn(contender, s);
  // startup: process start to /readyz 200, then the idle RSS.
  const port = await freePort();
  const began = performance.now();
  const running = start(contender, [
    "--kubeconfig",
    s.jsonKubeconfig,
    "--mode",
    "idle",
    "--namespace",
    s.idleNamespace,
    "--objects",
    "0",
    "--port",
    String(port),
  ]);
  return await withDeadline(running, async () => {
    for (;;) {
      if (running.child.exitCode !== null) {
        throw new Error(`exited ${running.child.exitCode}: ${lastLines(running.stderr(), 6)}`);
      }
      const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then(async (r) => {
        await r.body?.cancel();
        return r.status === 200;
      }, () => false);
      if (ok) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const readyMs = performance.now() - began;
    await new Promise((resolve) => setTimeout(resolve, s.idleSettleMs));
    const memory = residentMemory(running.child.pid!);
    // Rudder's contenders print their live heap when asked (after RSS was read, so the answer
    // does not count in it); the peers have no such handler.
    let heapUsedBytes: number | undefined;
    if (contender.name.startsWith("rudder")) {
      // Not `child.kill`: Deno's node:child_process takes any signal it sent for the child's
      // end (`signalCode` set, later kills ignored), so the SIGTERM that stops it never went
      // out and every idle contender outlived its round (and kept the suite from exiting).
      process.kill(running.child.pid!, "SIGUSR2");
      // The operator's JSON log records come on stdout too: skip them.
      while (heapUsedBytes === undefined) {
        const line = await nextLine(running);
        if (typeof line.heapUsedBytes === "number") heapUsedBytes = line.heapUsedBytes;
      }
    }
    return {
      readyMs,
      idleRssBytes: memory.rss,
      idleRssAnonBytes: memory.anon,
      idleRssFileBytes: memory.file,
      ...(heapUsedBytes === undefined ? {} : { idleHeapUsedBytes: heapUsedBytes }),
    };
  });
}

/** Writes `kubeconfig.json` beside the YAML kubeconfig at `path`; returns its path. */
function writeJsonKubeconfig(path: string): string {
  const file = join(dirname(path), "kubeconfig.json");
  writeFileSync(file, JSON.stringify(parseYaml(readFileSync(path, "utf8"))), { mode: 0o600 });
  return file;
}

/**
 * churn: the latency measure's operator (10 workers, read-only reconciles) under
 * `--churn-rate` changes per second for `--churn-minutes`; its VmRSS read from outside every
 * 10 s and its live heap (`heapUsed`, no forced collection) as it reports it; the slopes are
 * least-squares fits over the last half of the samples, so the warm-up is left out.
 */
async function runChurn(contender: Contender, s: Setting): Promise<Fields> {
  const prefix = `c${Date.now().toString(36)}-${++runCounter}`;
  const count = Math.round(s.churnRate * s.churnMinutes * 60);
  const running = start(contender, [
    ...["--kubeconfig", s.kubeconfig, "--mode", "latency"],
    ...["--namespace", s.reconcileNamespace, "--objects", String(s.reconcileObjects)],
    ...["--workers", "10", "--token", prefix, "--count", String(count)],
    ...["--timeout", `${Math.ceil(s.churnMinutes * 90 + 300)}s`],
    // Rudder's contender reports its live heap; the Go peer has no such flag.
    ...(contender.name.startsWith("rudder") ? ["--heap-every-ms", String(CHURN_SAMPLE_MS)] : []),
  ]);
  const timeoutMs = RUN_TIMEOUT_MS + s.churnMinutes * 60_000 * 1.5;
  return await withDeadline(running, async () => {
    const ready = await nextLine(running);
    if (!ready.ready) throw new Error("expected the ready line");
    const pid = running.child.pid!;
    const began = performance.now();
    const rss: [number, number][] = [];
    const sample = () => {
      try {
        rss.push([(performance.now() - began) / 60_000, residentMemory(pid).rss]);
      } catch {
        // The process is gone: the run fails on its missing result.
      }
    };
    sample();
    const sampler = setInterval(sample, CHURN_SAMPLE_MS);
    let achievedRate: number;
    try {
      achievedRate = await driveChanges(s, prefix, count, s.churnRate);
    } finally {
      clearInterval(sampler);
    }
    sample();
    // The contender's heap samples come as lines of their own, before its result.
    const heap: [number, number][] = [];
    let result = await nextLine(running);
    while (typeof result.heapBytes === "number") {
      heap.push([(result.atMs as number) / 60_000, result.heapBytes]);
      result = await nextLine(running);
    }
    const heapStart = heap.length ? heap[0][0] : 0;
    return {
      achievedRate,
      rssSlopeMiBPerMin: lastHalfSlope(rss) / 2 ** 20,
      heapSlopeMiBPerMin: heap.length
        ? lastHalfSlope(heap.map(([t, v]) => [t - heapStart, v])) / 2 ** 20
        : NaN,
      rssStartBytes: rss[0]?.[1] ?? NaN,
      rssEndBytes: rss[rss.length - 1]?.[1] ?? NaN,
      rssMaxBytes: Math.max(...rss.map(([, v]) => v)),
      rssSamples: rss.map(([t, v]) => [Number(t.toFixed(3)), v]),
      heapSamples: heap.map(([t, v]) => [Number((t - heapStart).toFixed(3)), v]),
    };
  }, timeoutMs);
}

/** The least-squares slope of the second half of `points` (x, y), in y per x. */
export function lastHalfSlope(points: readonly (readonly [number, number])[]): number {
  const half = points.slice(Math.floor(points.length / 2));
  if (half.length < 2) return NaN;
  const n = half.length;
  const mx = half.reduce((a, [x]) => a + x, 0) / n;
  const my = half.reduce((a, [, y]) => a + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of half) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? NaN : num / den;
}

/** A port that was free a moment ago. */
async function freePort(): Promise<number> {
  const { createServer } = await import("node:net");
  return await new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Makes `count` changes at `s.rate` per second, round-robin over the reconcile namespace's
 * objects, each a merge patch that carries its send time; returns the rate achieved.
 */
async function driveChanges(
  s: Setting,
  prefix: string,
  count: number,
  rate = s.rate,
): Promise<number> {
  const intervalMs = 1000 / rate;
  const begin = performance.now();
  const inFlight = new Set<Promise<unknown>>();
  for (let seq = 0; seq < count; seq++) {
    const due = begin + seq * intervalMs;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    while (inFlight.size >= 64) await Promise.race(inFlight);
    const name = `bench-${String(seq % s.reconcileObjects).padStart(6, "0")}`;
    const sent = performance.timeOrigin + performance.now();
    const patch = s.client.patch(
      { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: s.reconcileNamespace, name } },
      {
        type: "application/merge-patch+json",
        data: () => ({
          metadata: {
            annotations: {
              [TOKEN_ANNOTATION]: `${prefix}-${seq}`,
              [SENT_ANNOTATION]: sent.toFixed(3),
              [SEQ_ANNOTATION]: String(seq),
            },
          },
        }),
      },
    ).catch((err) => log(`latency: patch ${name} failed: ${err}`));
    const tracked = patch.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
  }
  await Promise.all(inFlight);
  return count / ((performance.now() - begin) / 1000);
}

/** Creates `count` ConfigMaps with distinct 1 KiB payloads. */
async function fillNamespace(client: Client, namespace: string, count: number): Promise<void> {
  await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const index = next++;
      await client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { namespace, name: `bench-${String(index).padStart(6, "0")}` },
        data: { payload: randomBytes(PAYLOAD_BYTES).toString("base64") },
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(CREATE_CONCURRENCY, count) }, worker));
}

/** One run of one contender in one round. */
interface RunRecord {
  round: number;
  measure: Measure;
  contender: string;
  order: number;
  loadBefore: string;
  loadAfter: string;
  ok: boolean;
  error?: string;
  fields: Fields;
}

function shuffle<T>(items: T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy;
}

function median(values: number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** The figures each measure reports, with how to show them. */
const FIGURES: Record<Measure, [field: string, label: string, format: (v: number) => string][]> = {
  sync: [
    ["syncMs", "time to synced (ms)", (v) => v.toFixed(0)],
    ["rssPerObject", "RSS per object (B)", (v) => v.toFixed(0)],
    ["heapPerObject", "live heap per object (B)", (v) => v.toFixed(0)],
    ["rssSyncedBytes", "RSS synced (MiB)", (v) => (v / 2 ** 20).toFixed(1)],
  ],
  relist: [
    ["steadyRssBytes", "steady RSS (MiB)", (v) => (v / 2 ** 20).toFixed(1)],
    ["relistPeakBytes", "relist peak (MiB)", (v) => (v / 2 ** 20).toFixed(1)],
    ["peakOverSteady", "peak / steady", (v) => v.toFixed(2)],
    ["relistMs", "expire → relisted (ms)", (v) => v.toFixed(0)],
  ],
  "reconcile-1": [
    ["ms", "time (ms)", (v) => v.toFixed(0)],
    ["objectsPerSecond", "objects/s", (v) => v.toFixed(0)],
    ["cpuSeconds", "CPU (s)", (v) => v.toFixed(2)],
    ["rssAfterBytes", "RSS after (MiB)", (v) => (v / 2 ** 20).toFixed(1)],
    ["rssAnonAfterBytes", "anonymous RSS after (MiB)", (v) => (v / 2 ** 20).toFixed(1)],
  ],
  "reconcile-10": [
    ["ms", "time (ms)", (v) => v.toFixed(0)],
    ["objectsPerSecond", "objects/s", (v) => v.toFixed(0)],
    ["cpuSeconds", "CPU (s)", (v) => v.toFixed(2)],
    ["rssAfterBytes", "RSS after (MiB)", (v) => (v / 2 ** 20).toFixed(1)],
    ["rssAnonAfterBytes", "anonymous RSS after (MiB)", (v) => (v / 2 ** 20).toFixed(1)],
  ],
  latency: [
    ["p50Ms", "p50 (ms)", (v) => v.toFixed(1)],
    ["p99Ms", "p99 (ms)", (v) => v.toFixed(1)],
    ["achievedRate", "changes/s made", (v) => v.toFixed(0)],
  ],
  churn: [
    ["rssSlopeMiBPerMin", "RSS slope, last half (MiB/min)", (v) => v.toFixed(3)],
    ["heapSlopeMiBPerMin", "live heap slope, last half (MiB/min)", (v) => v.toFixed(3)],
    ["rssStartBytes", "RSS when ready (MiB)", (v) => (v / 2 ** 20).toFixed(1)],
    ["rssEndBytes", "RSS at the end (MiB)", (v) => (v / 2 ** 20).toFixed(1)],
    ["rssMaxBytes", "highest RSS (MiB)", (v) => (v / 2 ** 20).toFixed(1)],
    ["achievedRate", "changes/s made", (v) => v.toFixed(0)],
  ],
  startup: [
    ["readyMs", "start → /readyz 200 (ms)", (v) => v.toFixed(0)],
    ["idleRssBytes", "idle RSS (MiB)", (v) => (v / 2 ** 20).toFixed(1)],
    ["idleRssAnonBytes", "anonymous (MiB)", (v) => (v / 2 ** 20).toFixed(1)],
    ["idleRssFileBytes", "file-backed (MiB)", (v) => (v / 2 ** 20).toFixed(1)],
    ["idleHeapUsedBytes", "live heap (MiB)", (v) => (v / 2 ** 20).toFixed(1)],
  ],
};

const MEASURE_TITLES: Record<Measure, string> = {
  sync: "Cache sync",
  relist: "Relist after a forced 410 (peak over steady)",
  "reconcile-1": "Reconcile throughput, 1 worker",
  "reconcile-10": "Reconcile throughput, 10 workers",
  latency: "Event → reconcile latency",
  startup: "Start to ready, idle operator",
  churn: "Memory under churn (slope over the last half)",
};

/** Per-round ratios of `field` of `contender` against the reference in the same round. */
function roundRatios(
  runs: RunRecord[],
  measure: Measure,
  contender: string,
  field: string,
): number[] {
  const ratios: number[] = [];
  for (const run of runs) {
    if (run.measure !== measure || run.contender !== contender || !run.ok) continue;
    const ref = runs.find((r) =>
      r.measure === measure && r.contender === REFERENCE && r.round === run.round && r.ok
    );
    const value = run.fields[field] as number;
    const reference = ref?.fields[field] as number | undefined;
    if (reference && Number.isFinite(value) && reference !== 0) ratios.push(value / reference);
  }
  return ratios;
}

function summaries(runs: RunRecord[], all: Contender[]) {
  const out: Record<string, Record<string, Record<string, unknown>>> = {};
  for (const measure of MEASURES) {
    for (const contender of all) {
      const mine = runs.filter((r) => r.measure === measure && r.contender === contender.name);
      if (mine.length === 0) continue;
      const entry: Record<string, unknown> = {
        runs: mine.filter((r) => r.ok).length,
        failures: mine.filter((r) => !r.ok).map((r) => r.error),
      };
      for (const [field] of FIGURES[measure]) {
        const values = mine.filter((r) => r.ok).map((r) => r.fields[field] as number)
          .filter(Number.isFinite);
        const ratios = roundRatios(runs, measure, contender.name, field);
        entry[field] = {
          median: median(values),
          min: values.length ? Math.min(...values) : undefined,
          max: values.length ? Math.max(...values) : undefined,
          ratioMedian: median(ratios),
          ratios,
        };
      }
      (out[measure] ??= {})[contender.name] = entry;
    }
  }
  return out;
}

function markdown(
  runs: RunRecord[],
  all: Contender[],
  info: { date: Date; machine: string[]; options: Record<string, unknown>; binarySizes: string[] },
): string {
  const sums = summaries(runs, all);
  const lines = [
    `# Benchmark suite, ${info.date.toISOString().slice(0, 16).replace("T", " ")} UTC`,
    "",
    `Options: ${JSON.stringify(info.options)}. Values are medians over rounds (min–max in ` +
    `brackets); "× Go" is the median of the per-round ratios against ${REFERENCE} ` +
    "(Go controller-runtime on protobuf) in the same round, min–max of those ratios in brackets. " +
    "Below 1× is faster, smaller or cheaper than Go, except objects/s where above 1× is faster. " +
    "How to read this: bench/README.md.",
    "",
  ];
  for (const measure of MEASURES) {
    const byContender = sums[measure];
    if (!byContender) continue;
    lines.push(`## ${MEASURE_TITLES[measure]}`, "");
    const figures = FIGURES[measure];
    lines.push(
      `| contender | runs | ${figures.map(([, label]) => `${label} | × Go`).join(" | ")} |`,
      `| --- | ---: | ${figures.map(() => "---: | ---:").join(" | ")} |`,
    );
    for (const contender of all) {
      const entry = byContender[contender.name];
      if (!entry) continue;
      const cells = figures.map(([field, , format]) => {
        const f = entry[field] as {
          median?: number;
          min?: number;
          max?: number;
          ratioMedian?: number;
          ratios: number[];
        };
        if (f.median === undefined) return "— | —";
        const value = f.min === f.max
          ? format(f.median)
          : `${format(f.median)} (${format(f.min!)}–${format(f.max!)})`;
        const ratio = f.ratioMedian === undefined
          ? "—"
          : f.ratios.length > 1
          ? `${f.ratioMedian.toFixed(2)}× (${Math.min(...f.ratios).toFixed(2)}–${
            Math.max(...f.ratios).toFixed(2)
          })`
          : `${f.ratioMedian.toFixed(2)}×`;
        return `${value} | ${ratio}`;
      });
      const failures = entry.failures as string[];
      lines.push(
        `| ${contender.label}${
          failures.length ? ` (${failures.length} failed)` : ""
        } | ${entry.runs} | ${cells.join(" | ")} |`,
      );
    }
    lines.push("");
  }
  const failed = runs.filter((r) => !r.ok);
  if (failed.length > 0) {
    lines.push("## Failures", "");
    for (const r of failed) {
      lines.push(
        `- round ${r.round}, ${r.measure}, ${r.contender}: ${r.error?.replaceAll("\n", " ")}`,
      );
    }
    lines.push("");
  }
  lines.push("## Binary size", "", ...info.binarySizes, "", "## Machine", "", ...info.machine, "");
  lines.push(
    "## Every run, in order, with /proc/loadavg before and after",
    "",
    "| round | measure | # | contender | load before | load after | result |",
    "| ---: | --- | ---: | --- | --- | --- | --- |",
  );
  for (const r of runs) {
    const result = r.ok
      ? Object.entries(r.fields).filter(([, v]) => typeof v === "number")
        .map(([k, v]) => `${k}=${Number(v).toFixed(Number.isInteger(v) ? 0 : 1)}`).join(" ")
      : `failed: ${r.error?.replaceAll("\n", " ").slice(0, 200)}`;
    lines.push(
      `| ${r.round} | ${r.measure} | ${r.order} | ${r.contender} | ${r.loadBefore} | ${r.loadAfter} | ${result} |`,
    );
  }
  lines.push("");
  return lines.join("\n");
}

/** The commit the suite runs, and whether the tree differs from it: read before the first run. */
function sourceState(): { commit: string; dirty: boolean } {
  return {
    commit: commandOutput("git", ["-C", ROOT, "rev-parse", "--short", "HEAD"]),
    dirty: commandOutput("git", ["-C", ROOT, "status", "--porcelain"]) !== "",
  };
}

function machineInfo({ commit, dirty }: { commit: string; dirty: boolean }): string[] {
  const cpuinfo = existsSync("/proc/cpuinfo") ? readFileSync("/proc/cpuinfo", "utf8") : "";
  const cpu = cpuinfo.match(/^model name\s*:\s*(.+)$/m)?.[1] ?? os.cpus()[0]?.model ?? "unknown";
  const goMod = readFileSync(join(GO_PEER, "go.mod"), "utf8");
  const goModule = (path: string) =>
    goMod.match(new RegExp(`^\\s*${path.replaceAll(".", "\\.")} (v\\S+)`, "m"))?.[1] ?? "?";
  const lock = JSON.parse(readFileSync(join(NODE_PEER, "package-lock.json"), "utf8"));
  const clientNode = lock.packages?.["node_modules/@kubernetes/client-node"]?.version ?? "?";
  return [
    `- CPU: ${cpu}, ${os.cpus().length} cores (CPU count), memory ${
      (os.totalmem() / 2 ** 30).toFixed(1)
    } GiB; shared with other work: see the load columns`,
    `- OS: ${os.type()} ${os.release()} ${os.arch()}`,
    `- Control plane: kube-apiserver ${ENVTEST_KUBERNETES_VERSION} (envtest) on loopback`,
    `- Rudder ${VERSION} at ${commit}${dirty ? " with uncommitted changes" : ""}`,
    `- ${commandOutput(DENO, ["--version"]).split("\n").join(", ")}`,
    `- Bun ${commandOutput(BUN, ["--version"])}`,
    `- Node ${commandOutput(NODE_RUDDER, ["--version"])} (Rudder)`,
    `- Node ${
      existsSync(NODE) ? commandOutput(NODE, ["--version"]) : "?"
    } (the peer), @kubernetes/client-node ${clientNode}`,
    `- ${commandOutput("go", ["version"])}, controller-runtime ${
      goModule("sigs.k8s.io/controller-runtime")
    }, client-go ${goModule("k8s.io/client-go")}`,
  ];
}

function parseOptions() {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      rounds: { type: "string", default: "5" },
      objects: { type: "string", default: "10000" },
      "reconcile-objects": { type: "string", default: "2000" },
      "latency-seconds": { type: "string", default: "60" },
      rate: { type: "string", default: "200" },
      measures: { type: "string", default: DEFAULT_MEASURES.join(",") },
      "churn-minutes": { type: "string", default: "30" },
      "churn-rate": { type: "string", default: "50" },
      only: { type: "string" },
      variants: { type: "string", default: "on" },
      "idle-settle-ms": { type: "string", default: "10000" },
      name: { type: "string" },
    },
  });
  const number = (name: keyof typeof values) => {
    const n = Number(values[name]);
    if (!(n > 0)) throw new Error(`--${name} must be a positive number`);
    return n;
  };
  const requested = values.measures.split(",").map((m) => m.trim());
  // Sharding compares Rudder with itself (one replica against several), not with the peers.
  const sharding = requested.includes("sharding");
  const measures = requested.filter((m) => m !== "sharding").flatMap((m) =>
    m === "reconcile" ? ["reconcile-1", "reconcile-10"] : [m]
  ) as Measure[];
  for (const m of measures) if (!MEASURES.includes(m)) throw new Error(`unknown measure ${m}`);
  let all = contenders();
  if (values.variants === "off") all = all.filter((c) => !c.variant);
  if (values.only) {
    const names = values.only.split(",").map((n) => n.trim());
    const unknown = names.filter((n) => !all.some((c) => c.name === n));
    if (unknown.length) throw new Error(`unknown contender ${unknown.join(", ")}`);
    all = all.filter((c) => names.includes(c.name) || c.name === REFERENCE);
  }
  return {
    rounds: number("rounds"),
    objects: number("objects"),
    reconcileObjects: number("reconcile-objects"),
    latencySeconds: number("latency-seconds"),
    rate: number("rate"),
    idleSettleMs: number("idle-settle-ms"),
    churnMinutes: number("churn-minutes"),
    churnRate: number("churn-rate"),
    measures,
    sharding,
    contenders: all,
    name: values.name,
  };
}

async function main(): Promise<number> {
  const options = parseOptions();
  const assets = await setup();
  const ready: Contender[] = [];
  for (const contender of options.contenders) {
    try {
      contender.prepare?.();
      ready.push(contender);
    } catch (err) {
      log(`${contender.name}: set-up failed: ${err instanceof Error ? err.message : err}`);
    }
  }
  const env = new Environment({ binaryAssetsDirectory: assets });
  let interrupted = false;
  const onSignal = (signal: string) => {
    if (interrupted) return;
    interrupted = true;
    log(`${signal}: stopping`);
    killChildren();
    void env.stop().finally(() => process.exit(130));
  };
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, onSignal);
  const date = new Date();
  const source = sourceState();
  const runs: RunRecord[] = [];
  let sharding: ShardingBenchResult | undefined;
  let shardingFailed = false;
  let relistProxy: RelistProxy | undefined;
  try {
    const config = await env.start();
    const client = newClient(config);
    const stamp = date.getTime().toString(36);
    const setting: Setting = {
      kubeconfig: env.kubeconfigPath,
      jsonKubeconfig: writeJsonKubeconfig(env.kubeconfigPath),
      client,
      syncNamespace: `bench-sync-${stamp}`,
      reconcileNamespace: `bench-reconcile-${stamp}`,
      idleNamespace: `bench-idle-${stamp}`,
      objects: options.objects,
      reconcileObjects: options.reconcileObjects,
      latencySeconds: options.latencySeconds,
      rate: options.rate,
      idleSettleMs: options.idleSettleMs,
      churnMinutes: options.churnMinutes,
      churnRate: options.churnRate,
    };
    if (options.measures.includes("relist")) {
      relistProxy = await RelistProxy.start(upstreamFromKubeconfig(env.kubeconfigPath));
      const kubeconfig = join(dirname(env.kubeconfigPath), "kubeconfig-relist-proxy");
      writeProxyKubeconfig(env.kubeconfigPath, kubeconfig, relistProxy);
      setting.relist = { proxy: relistProxy, kubeconfig };
    }
    const fillStart = performance.now();
    if (options.measures.includes("sync") || options.measures.includes("relist")) {
      await fillNamespace(client, setting.syncNamespace, options.objects);
      const warm = await client.list(ConfigMap, { namespace: setting.syncNamespace });
      if (warm.items.length !== options.objects) throw new Error("the sync namespace is short");
    }
    if (options.measures.length > 0) {
      await fillNamespace(client, setting.reconcileNamespace, options.reconcileObjects);
    }
    await client.create({
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: setting.idleNamespace },
    });
    log(`namespaces filled in ${((performance.now() - fillStart) / 1000).toFixed(1)} s`);

    for (let round = 1; round <= options.rounds && !interrupted; round++) {
      for (const measure of options.measures) {
        const order = shuffle(ready.filter((c) => c.measures.includes(measure)));
        for (const [index, contender] of order.entries()) {
          if (interrupted) break;
          const loadBefore = loadavg();
          let record: RunRecord;
          try {
            const fields = await runMeasure(contender, measure, setting);
            record = {
              round,
              measure,
              contender: contender.name,
              order: index + 1,
              loadBefore,
              loadAfter: loadavg(),
              ok: true,
              fields,
            };
          } catch (err) {
            record = {
              round,
              measure,
              contender: contender.name,
              order: index + 1,
              loadBefore,
              loadAfter: loadavg(),
              ok: false,
              fields: {},
              error: err instanceof Error ? err.message : String(err),
            };
          }
          runs.push(record);
          log(
            `round ${round}/${options.rounds} ${measure} ${contender.name}: ${
              record.ok
                ? FIGURES[measure].map(([f]) => `${f}=${Number(record.fields[f]).toFixed(1)}`)
                  .join(" ")
                : `FAILED ${record.error}`
            } (load ${record.loadBefore} → ${record.loadAfter})`,
          );
        }
      }
    }
    if (options.sharding && !interrupted) {
      try {
        sharding = await runShardingBench(env.kubeconfigPath, client, {
          objects: 3000,
          replicas: 3,
          runtime: "deno",
          idleSettleMs: options.idleSettleMs,
        });
      } catch (err) {
        shardingFailed = true;
        log(`sharding: FAILED ${err instanceof Error ? err.message : err}`);
      }
    }
  } finally {
    killChildren();
    await relistProxy?.close();
    await env.stop();
    for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.off(signal, onSignal);
  }

  const binarySizes = [
    [goBinary, "Go controller-runtime peer (all modes, -trimpath)"],
    [bunBinary, `Rudder contender, \`bun build --compile ${BUN_COMPILE_FLAGS.join(" ")}\``],
    [nodeBinary, "Rudder contender, Node single executable application (`node --build-sea`)"],
  ].filter(([path]) => path && existsSync(path)).map(([path, what]) =>
    `- ${what}: ${(statSync(path).size / 2 ** 20).toFixed(1)} MiB`
  );
  const machine = machineInfo(source);
  const { contenders: _, name, ...shownOptions } = options;
  const text = markdown(runs, ready, { date, machine, options: shownOptions, binarySizes }) +
    (sharding ? `\n${shardingMarkdown(sharding)}` : "");
  mkdirSync(RESULTS, { recursive: true });
  const day = date.toISOString().slice(0, 10);
  const base = name ? `${day}-${name}` : day;
  const md = join(RESULTS, `${base}.md`);
  writeFileSync(md, text);
  spawnSync(DENO, ["fmt", "--quiet", "--config", join(ROOT, "deno.json"), md], { stdio: "ignore" });
  writeFileSync(
    join(RESULTS, `${base}.json`),
    JSON.stringify(
      {
        date: date.toISOString(),
        reference: REFERENCE,
        options: shownOptions,
        cpuCount: os.cpus().length,
        machine,
        binarySizes,
        contenders: ready.map(({ name, label, measures, env, variant }) => ({
          name,
          label,
          measures,
          env,
          variant: !!variant,
        })),
        summaries: summaries(runs, ready),
        runs,
        ...(sharding ? { sharding } : {}),
      },
      null,
      2,
    ) + "\n",
  );
  log(`wrote ${md} and ${base}.json`);
  console.log(readFileSync(md, "utf8"));
  return runs.some((r) => !r.ok) || shardingFailed ? 1 : 0;
}

if (import.meta.main) {
  try {
    process.exitCode = await main();
  } catch (err) {
    log(err instanceof Error ? (err.stack ?? err.message) : String(err));
    killChildren();
    process.exitCode = 1;
  }
}
