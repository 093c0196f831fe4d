/**
 * `deno task bench:profile`: a CPU profile of Rudder's contender doing one measure of the suite,
 * on Deno (over the V8 inspector: Deno has no `--cpu-prof`) and on Bun (`bun --cpu-prof`), with
 * the self time summed per function and per file, so the owners of lib/ see where the time goes.
 * Starts its own control plane. Writes bench/results/profile-<measure>-<runtime>-<date>.md and
 * keeps the raw .cpuprofile next to it (open it in Chrome DevTools).
 *
 * Usage: deno run -A bench/profile.ts [--runtime deno|bun|node] [--mode reconcile|sync]
 *   [--objects 2000] [--workers 10] [--page-size 0] [--name <suffix>] (the file then ends in -<suffix>)
 *
 * @module
 */

import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import {
  BUN_ENV,
  DENO_ENV,
  DENO_V8_FLAGS,
  NODE_RUNTIME_ENV,
  NODE_V8_FLAGS,
} from "../cli/project.ts";
import { type Client, newClient } from "../lib/client/client.ts";
import { Environment } from "../lib/testing/envtest.ts";
import { ROOT, setup } from "../tools/setup.ts";

const BENCH = dirname(fileURLToPath(import.meta.url));
const RUDDER = join(BENCH, "contenders", "rudder.ts");
const BUN = join(ROOT, "node_modules", "bun", "bin", "bun.exe");
const NODE = join(ROOT, "node_modules", "node", "bin", "node");

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  hitCount?: number;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples?: number[];
  timeDeltas?: number[];
  startTime: number;
  endTime: number;
}

function log(message: string): void {
  process.stderr.write(`bench:profile: ${message}\n`);
}

async function fill(client: Client, namespace: string, count: number): Promise<void> {
  await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const index = next++;
      await client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { namespace, name: `bench-${String(index).padStart(6, "0")}` },
        data: { payload: randomBytes(768).toString("base64") },
      });
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
}

/** Runs the contender and resolves with its stdout once it exits. */
function runChild(command: string[], env: Record<string, string>) {
  const child = spawn(command[0], command.slice(1), {
    cwd: ROOT,
    env: { ...process.env, DENO_NO_UPDATE_CHECK: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (c: string) => stdout += c);
  child.stderr!.setEncoding("utf8").on("data", (c: string) => stderr += c);
  const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
  return { child, exited, stdout: () => stdout, stderr: () => stderr };
}

/** Profiles a Deno process over the inspector: attach, start the profiler, let it run. */
async function profileDeno(args: string[]): Promise<{ profile: CpuProfile; result: string }> {
  const port = 9300 + Math.floor(Math.random() * 500);
  const run = runChild([
    process.execPath,
    "run",
    "-A",
    "--config",
    join(ROOT, "deno.json"),
    `--inspect-wait=127.0.0.1:${port}`,
    // What Rudder ships (rudder build, rudder dev, the scaffold), as the suite runs it.
    `--v8-flags=${["--expose-gc", ...DENO_V8_FLAGS].join(",")}`,
    RUDDER,
    ...args,
  ], { ...DENO_ENV, BENCH_HOLD_MS: "60000" });
  try {
    let targets: { webSocketDebuggerUrl: string }[] = [];
    for (let i = 0; i < 300 && targets.length === 0; i++) {
      targets = await fetch(`http://127.0.0.1:${port}/json/list`).then((r) => r.json(), () => []);
      if (targets.length === 0) await new Promise((r) => setTimeout(r, 100));
    }
    if (targets.length === 0) throw new Error(`no inspector: ${run.stderr()}`);
    const ws = new WebSocket(targets[0].webSocketDebuggerUrl);
    await new Promise((resolve, reject) => {
      ws.onopen = resolve;
      ws.onerror = reject;
    });
    let nextId = 0;
    const pending = new Map<number, (value: unknown) => void>();
    ws.onmessage = (event) => {
      const message = JSON.parse(String(event.data));
      if (message.id !== undefined) pending.get(message.id)?.(message.result);
    };
    const call = (method: string, params: unknown = {}) =>
      new Promise<unknown>((resolve) => {
        const id = ++nextId;
        pending.set(id, resolve);
        ws.send(JSON.stringify({ id, method, params }));
      });
    await call("Profiler.enable");
    await call("Profiler.setSamplingInterval", { interval: 500 });
    await call("Profiler.start");
    await call("Runtime.runIfWaitingForDebugger");
    while (!run.stdout().includes("{") && run.child.exitCode === null) {
      await new Promise((r) => setTimeout(r, 50));
    }
    // The result line is out; the contender holds on for BENCH_HOLD_MS.
    const { profile } = await call("Profiler.stop") as { profile: CpuProfile };
    ws.close();
    return { profile, result: run.stdout().trim() };
  } finally {
    run.child.kill("SIGKILL");
    await run.exited;
  }
}

async function profileBun(args: string[]): Promise<{ profile: CpuProfile; result: string }> {
  const dir = mkdtempSync(join(os.tmpdir(), "rudder-prof-"));
  try {
    const run = runChild([BUN, "--cpu-prof", `--cpu-prof-dir=${dir}`, "run", RUDDER, ...args], {
      ...BUN_ENV,
    });
    const code = await run.exited;
    if (code !== 0) throw new Error(`bun exited ${code}: ${run.stderr()}`);
    const file = readdirSync(dir).find((name) => name.endsWith(".cpuprofile"));
    if (!file) throw new Error("bun wrote no .cpuprofile");
    return {
      profile: JSON.parse(readFileSync(join(dir, file), "utf8")),
      result: run.stdout().trim(),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Node's own `--cpu-prof`, with the V8 flags and environment Rudder runs Node operators with. */
async function profileNode(args: string[]): Promise<{ profile: CpuProfile; result: string }> {
  const dir = mkdtempSync(join(os.tmpdir(), "rudder-prof-"));
  try {
    const run = runChild([
      NODE,
      "--cpu-prof",
      `--cpu-prof-dir=${dir}`,
      "--cpu-prof-interval=500",
      ...NODE_V8_FLAGS,
      RUDDER,
      ...args,
    ], { ...NODE_RUNTIME_ENV });
    const code = await run.exited;
    if (code !== 0) throw new Error(`node exited ${code}: ${run.stderr()}`);
    const file = readdirSync(dir).find((name) => name.endsWith(".cpuprofile"));
    if (!file) throw new Error("node wrote no .cpuprofile");
    return {
      profile: JSON.parse(readFileSync(join(dir, file), "utf8")),
      result: run.stdout().trim(),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Self time per function and per file, from the sample counts (or hit counts). */
function summarize(profile: CpuProfile, top: number): string[] {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<number, number>();
  if (profile.samples && profile.timeDeltas) {
    for (let i = 0; i < profile.samples.length; i++) {
      const delta = profile.timeDeltas[i + 1] ?? 0;
      self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + delta);
    }
  } else {
    const interval = (profile.endTime - profile.startTime) /
      Math.max(1, profile.nodes.reduce((sum, n) => sum + (n.hitCount ?? 0), 0));
    for (const node of profile.nodes) self.set(node.id, (node.hitCount ?? 0) * interval);
  }
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const fn = new Map<string, number>();
  const file = new Map<string, number>();
  for (const [id, micros] of self) {
    const frame = byId.get(id)!.callFrame;
    const url = frame.url.replace(`file://${ROOT}/`, "").replace(/^.*node_modules\//, "npm:");
    const name = `${frame.functionName || "(anonymous)"} ${url || ""}${
      url ? `:${frame.lineNumber + 1}` : ""
    }`;
    fn.set(name, (fn.get(name) ?? 0) + micros);
    const fileKey = url || frame.functionName || "(native)";
    file.set(fileKey, (file.get(fileKey) ?? 0) + micros);
  }
  const rows = (map: Map<string, number>) =>
    [...map].sort((a, b) => b[1] - a[1]).slice(0, top).map(([name, micros]) =>
      `| ${name.replaceAll("|", "\\|")} | ${(micros / 1000).toFixed(1)} | ${
        (100 * micros / total).toFixed(1)
      } % |`
    );
  return [
    `Profiled ${(total / 1e6).toFixed(2)} s of samples.`,
    "",
    "### Self time by function",
    "",
    "| function and place (line of its declaration) | ms | share |",
    "| --- | ---: | ---: |",
    ...rows(fn),
    "",
    "### Self time by file",
    "",
    "| file | ms | share |",
    "| --- | ---: | ---: |",
    ...rows(file),
  ];
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      runtime: { type: "string", default: "deno" },
      mode: { type: "string", default: "reconcile" },
      objects: { type: "string", default: "2000" },
      workers: { type: "string", default: "10" },
      "page-size": { type: "string", default: "0" },
      name: { type: "string" },
    },
  });
  const objects = Number(values.objects);
  const env = new Environment({ binaryAssetsDirectory: await setup() });
  try {
    const config = await env.start();
    const client = newClient(config);
    const namespace = `profile-${Date.now().toString(36)}`;
    await fill(client, namespace, objects);
    const args = [
      "--mode",
      values.mode,
      "--kubeconfig",
      env.kubeconfigPath,
      "--namespace",
      namespace,
      "--objects",
      String(objects),
      "--workers",
      values.workers,
      "--token",
      `p${Date.now().toString(36)}`,
      "--page-size",
      values["page-size"],
    ];
    log(`profiling ${values.mode} of ${objects} objects on ${values.runtime}`);
    const { profile, result } = values.runtime === "bun"
      ? await profileBun(args)
      : values.runtime === "node"
      ? await profileNode(args)
      : await profileDeno(args);
    const date = new Date().toISOString().slice(0, 10);
    const suffix = values.name ? `-${values.name}` : "";
    const base = join(
      BENCH,
      "results",
      `profile-${values.mode}-${values.runtime}-${date}${suffix}`,
    );
    mkdirSync(dirname(base), { recursive: true });
    writeFileSync(`${base}.cpuprofile`, JSON.stringify(profile));
    const text = [
      `# CPU profile: Rudder on ${values.runtime}, ${values.mode}, ${objects} objects, ${values.workers} workers`,
      "",
      `Result line: \`${result}\`. Machine load: ${
        readFileSync("/proc/loadavg", "utf8").trim()
      }, ${os.cpus().length} CPUs. Raw profile: ${base.split("/").pop()}.cpuprofile.`,
      "",
      values.runtime === "bun"
        ? "Bun's sampler covers wall time, so the native `fetch` row includes waiting for " +
          "answers; compare the lib/ rows with each other and with `cpuSeconds` above."
        : values.runtime === "node"
        ? "Node's own sampler (`--cpu-prof`, 500 µs), CPU time of the main thread; the line " +
          "numbers are the TypeScript's (Node strips types in place)."
        : "Line numbers are those of Deno's transpiled JavaScript (look functions up by name). " +
          "`op_inspector_emit_protocol_event`, `inspector_network_bridge.js` and " +
          "`readableByteStreamTee` are the inspector's own network instrumentation: the cost " +
          "of profiling, not of Rudder.",
      "",
      ...summarize(profile, 40),
      "",
    ].join("\n");
    writeFileSync(`${base}.md`, text);
    // As the suite does: the file is committed, and `deno task check` checks its format.
    spawnSync(process.execPath, [
      "fmt",
      "--quiet",
      "--config",
      join(ROOT, "deno.json"),
      `${base}.md`,
    ], {
      stdio: "ignore",
    });
    console.log(text);
  } finally {
    await env.stop();
  }
}

if (import.meta.main) await main();
