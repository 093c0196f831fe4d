/**
 * Builds the PromQL checker the dashboard tests run: `main.go` in this folder, Prometheus's own
 * parser (`github.com/prometheus/prometheus/promql/parser`, pinned by this folder's go.mod) behind
 * a JSON-lines filter (one JSON string in, one `{"error"}` or `{"metrics"}` object out). Built
 * once into `${XDG_CACHE_HOME:-~/.cache}/rudder/promql/<prometheus version>/promql-check`, rebuilt
 * when go.mod, go.sum or main.go change; `RUDDER_PROMQL_CHECK` names a prebuilt binary instead.
 * Prints the binary's path on its last line.
 *
 * Usage: deno run -A tools/promql/build.ts [--force]
 *
 * @module
 */

import { createHash } from "node:crypto";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

const MODULE_DIR = dirname(fileURLToPath(import.meta.url));
const SOURCES = ["go.mod", "go.sum", "main.go"];
const STAMP = ".rudder-build";

/** The environment variable that points at a prebuilt checker. */
export const PROMQL_CHECK_ENV = "RUDDER_PROMQL_CHECK";

function log(message: string): void {
  process.stderr.write(`promql: ${message}\n`);
}

/** The Prometheus version go.mod pins, e.g. `v0.316.0`. */
export function prometheusVersion(): string {
  const goMod = readFileSync(join(MODULE_DIR, "go.mod"), "utf8");
  const match = goMod.match(/github\.com\/prometheus\/prometheus (v\S+)/);
  if (!match) {
    throw new Error("tools/promql/go.mod does not require github.com/prometheus/prometheus");
  }
  return match[1];
}

/** The hash of everything that decides the binary. */
function buildStamp(): string {
  const hash = createHash("sha256");
  for (const file of SOURCES) hash.update(readFileSync(join(MODULE_DIR, file)));
  return hash.digest("hex");
}

/** Where the checker is: `RUDDER_PROMQL_CHECK`, else its place in the cache. */
export function promqlCheckerPath(env: Record<string, string | undefined> = process.env): string {
  if (env[PROMQL_CHECK_ENV]) return env[PROMQL_CHECK_ENV];
  const cacheHome = env.XDG_CACHE_HOME || join(homedir(), ".cache");
  return join(cacheHome, "rudder", "promql", prometheusVersion(), "promql-check");
}

/** Whether the cached checker was built from the current sources. */
function current(target: string, stamp: string): boolean {
  const stampFile = join(dirname(target), STAMP);
  return existsSync(target) && existsSync(stampFile) &&
    readFileSync(stampFile, "utf8").trim() === stamp;
}

/** Runs `go build` without blocking, so the heartbeat keeps writing. */
function goBuild(output: string): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn("go", ["build", "-trimpath", "-ldflags=-s -w", "-o", output, "."], {
      cwd: MODULE_DIR,
      stdio: ["ignore", "inherit", "inherit"],
    });
    child.on("error", reject);
    child.on("close", resolve);
  });
}

/**
 * Builds the checker unless it is current in the cache (or `RUDDER_PROMQL_CHECK` names one);
 * returns its path. Throws without Go, naming what to do.
 */
export async function ensurePromqlChecker(options: { force?: boolean } = {}): Promise<string> {
  const given = process.env[PROMQL_CHECK_ENV];
  if (given) {
    if (!existsSync(given)) throw new Error(`${PROMQL_CHECK_ENV}=${given} does not exist`);
    return given;
  }
  const target = promqlCheckerPath();
  const stamp = buildStamp();
  if (!options.force && current(target, stamp)) return target;
  const go = spawnSync("go", ["version"], { encoding: "utf8" });
  if (go.error || go.status !== 0) {
    throw new Error(
      "building the PromQL checker needs the Go toolchain (`go version` failed); install Go or " +
        `set ${PROMQL_CHECK_ENV} to a prebuilt tools/promql binary`,
    );
  }
  log(`building Prometheus ${prometheusVersion()}'s PromQL parser (${go.stdout.trim()})`);
  mkdirSync(dirname(target), { recursive: true });
  const staging = `${target}.building-${process.pid}`;
  const began = Date.now();
  const heartbeat = setInterval(
    () => log(`still building (${((Date.now() - began) / 1000).toFixed(0)} s)`),
    10_000,
  );
  try {
    const code = await goBuild(staging);
    if (code !== 0) {
      throw new Error(
        `building the PromQL checker failed (go build exited with ${code}); ` +
          "it needs the Go module proxy the first time",
      );
    }
    renameSync(staging, target);
    writeFileSync(join(dirname(target), STAMP), `${stamp}\n`);
  } finally {
    clearInterval(heartbeat);
    rmSync(staging, { force: true });
  }
  log(`built ${target} in ${((Date.now() - began) / 1000).toFixed(1)} s`);
  return target;
}

if (import.meta.main) {
  try {
    console.log(await ensurePromqlChecker({ force: process.argv.includes("--force") }));
  } catch (err) {
    log(err instanceof Error ? err.message : String(err));
    process.exit(1);
  }
}
