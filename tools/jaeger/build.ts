/**
 * Builds the trace backend the tracing test sends spans to: Jaeger v2's all-in-one
 * (`github.com/jaegertracing/jaeger/cmd/jaeger`, a tool of this folder's Go module, pinned by
 * its go.mod and go.sum), with its in-memory storage, OTLP receiver and query API. Built once
 * into `${XDG_CACHE_HOME:-~/.cache}/rudder/jaeger/<version>/jaeger`, as the control plane is
 * cached; with `JAEGER_BINARY` set to a prebuilt `jaeger`, nothing is built. Prints the
 * binary's path on its last line.
 *
 * Usage: deno run -A tools/jaeger/build.ts
 *
 * @module
 */

import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

const MODULE_DIR = dirname(fileURLToPath(import.meta.url));
const TOOL = "github.com/jaegertracing/jaeger/cmd/jaeger";

/** The Jaeger version go.mod pins, e.g. `v1.75.0` (the v2 binary ships in the v1 module). */
export function jaegerVersion(): string {
  const goMod = readFileSync(join(MODULE_DIR, "go.mod"), "utf8");
  const version = goMod.match(/^\s*github\.com\/jaegertracing\/jaeger (v\S+)/m)?.[1];
  if (!version) {
    throw new Error("tools/jaeger/go.mod does not require github.com/jaegertracing/jaeger");
  }
  return version;
}

/** Where the binary is (or will be): `JAEGER_BINARY`, else the cache. */
export function jaegerBinaryPath(env: Record<string, string | undefined> = process.env): string {
  if (env.JAEGER_BINARY) return env.JAEGER_BINARY;
  const cacheHome = env.XDG_CACHE_HOME || join(homedir(), ".cache");
  return join(cacheHome, "rudder", "jaeger", jaegerVersion(), "jaeger");
}

function log(message: string): void {
  process.stderr.write(`jaeger: ${message}\n`);
}

/**
 * Builds Jaeger unless it is cached (or `JAEGER_BINARY` names it); returns the binary's path.
 * Reports progress every 30 s: a fresh build takes minutes. Throws without Go.
 */
export async function ensureJaegerBinary(): Promise<string> {
  const target = jaegerBinaryPath();
  if (existsSync(target)) return target;
  if (process.env.JAEGER_BINARY) {
    throw new Error(`JAEGER_BINARY=${target} does not exist`);
  }
  mkdirSync(dirname(target), { recursive: true });
  const staging = `${target}.building-${process.pid}`;
  log(`building Jaeger ${jaegerVersion()} into ${dirname(target)} (a few minutes, once)`);
  const started = Date.now();
  const progress = setInterval(
    () => log(`still building (${Math.round((Date.now() - started) / 1000)} s)`),
    30_000,
  );
  try {
    const status = await new Promise<number | string>((resolve) => {
      const child = spawn(
        "go",
        ["build", "-trimpath", "-ldflags=-s -w", "-o", staging, TOOL],
        { cwd: MODULE_DIR, stdio: ["ignore", "inherit", "inherit"] },
      );
      child.on("error", (err) => resolve(err.message));
      child.on("exit", (code) => resolve(code ?? 1));
    });
    if (status !== 0) {
      rmSync(staging, { force: true });
      throw new Error(
        `building Jaeger failed (go build: ${status}); it needs Go and the Go module proxy, ` +
          "or set JAEGER_BINARY to a prebuilt jaeger",
      );
    }
  } finally {
    clearInterval(progress);
  }
  renameSync(staging, target);
  log(`built in ${Math.round((Date.now() - started) / 1000)} s`);
  return target;
}

if (import.meta.main) {
  try {
    console.log(await ensureJaegerBinary());
  } catch (err) {
    log(err instanceof Error ? err.message : String(err));
    process.exit(1);
  }
}
