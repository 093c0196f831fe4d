/**
 * `deno task envtest`: builds `kube-apiserver` and `etcd` from the Go modules pinned in this
 * folder's go.mod, once, into the cache that `Environment` looks in; prints that directory on
 * its last line. With `KUBEBUILDER_ASSETS` set it builds nothing and checks that directory.
 *
 * Usage: deno run -A tools/envtest/build.ts [--force]
 *
 * @module
 */

import { createHash } from "node:crypto";
import { spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import {
  defaultAssetsDirectory,
  ENVTEST_FIRST_BUILD,
  ENVTEST_KUBERNETES_VERSION,
  findControlPlaneBinaries,
} from "../../lib/testing/assets.ts";
import { Progress } from "../../lib/util/progress.ts";

const MODULE_DIR = dirname(fileURLToPath(import.meta.url));
const STAMP_FILE = ".rudder-build";

const [major, minor] = ENVTEST_KUBERNETES_VERSION.split(".");
const versionFlags = ["k8s.io/component-base/version", "k8s.io/client-go/pkg/version"].flatMap(
  (pkg) => [
    `-X ${pkg}.gitVersion=v${ENVTEST_KUBERNETES_VERSION}`,
    `-X ${pkg}.gitMajor=${major}`,
    `-X ${pkg}.gitMinor=${minor}`,
    `-X ${pkg}.gitTreeState=clean`,
  ],
);

/** The binaries to build: output name, Go package, extra linker flags. */
const TARGETS = [
  { name: "etcd", pkg: "go.etcd.io/etcd/server/v3", ldflags: [] as string[] },
  { name: "kube-apiserver", pkg: "k8s.io/kubernetes/cmd/kube-apiserver", ldflags: versionFlags },
];

function log(message: string): void {
  process.stderr.write(`envtest: ${message}\n`);
}

/** Line-based progress on stderr (no escape codes: it reads the same in CI logs). */
const progress = new Progress({
  write: (line) => process.stderr.write(`${line}\n`),
  prefix: "envtest: ",
});

/** Runs `go build` without blocking, so the progress heartbeat keeps writing. */
function goBuild(args: string[]): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn("go", args, { cwd: MODULE_DIR, stdio: ["ignore", "inherit", "inherit"] });
    child.on("error", reject);
    child.on("close", (code) => resolve(code));
  });
}

/** A hash of everything that decides the binaries' content, so a changed go.mod rebuilds. */
function buildStamp(): string {
  const hash = createHash("sha256");
  for (const file of ["go.mod", "go.sum"]) hash.update(readFileSync(join(MODULE_DIR, file)));
  hash.update(JSON.stringify(TARGETS));
  return hash.digest("hex");
}

function goVersion(): string {
  const result = spawnSync("go", ["version"], { encoding: "utf8" });
  if (result.error || result.status !== 0) {
    throw new Error(
      "the Go toolchain is needed to build kube-apiserver and etcd, but `go version` failed" +
        (result.error ? `: ${result.error.message}` : "") +
        "; install Go or set KUBEBUILDER_ASSETS to a directory that holds both binaries",
    );
  }
  return result.stdout.trim();
}

/** Builds into a fresh directory next to `target`, then renames it into place. */
async function build(target: string, stamp: string): Promise<void> {
  log(`${goVersion()}`);
  log(`building Kubernetes ${ENVTEST_KUBERNETES_VERSION}'s control plane into ${target}`);
  mkdirSync(dirname(target), { recursive: true });
  const staging = mkdtempSync(`${target}.building-`);
  chmodSync(staging, 0o755);
  const whole = Date.now();
  try {
    for (const { name, pkg, ldflags } of TARGETS) {
      const step = progress.start(`building ${name} from ${pkg}`, {
        usually: ENVTEST_FIRST_BUILD,
      });
      const code = await goBuild([
        "build",
        "-trimpath",
        `-ldflags=-s -w ${ldflags.join(" ")}`,
        "-o",
        join(staging, name),
        pkg,
      ]).catch((err: Error) => {
        step.fail(err.message);
        throw err;
      });
      if (code !== 0) {
        step.fail(`go build exited with ${code}`);
        throw new Error(
          `go build ${pkg} failed (exit ${code}); see the compiler output above`,
        );
      }
      step.done();
    }
    writeFileSync(join(staging, STAMP_FILE), `${stamp}\n`);
    rmSync(target, { recursive: true, force: true });
    renameSync(staging, target);
    log(`built the control plane in ${((Date.now() - whole) / 1000).toFixed(0)} s`);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** Ensures the binaries exist and returns their directory. */
export async function ensureEnvtestBinaries(
  options: { force?: boolean } = {},
): Promise<string> {
  if (process.env.KUBEBUILDER_ASSETS) {
    const found = findControlPlaneBinaries(process.env.KUBEBUILDER_ASSETS);
    log(`using KUBEBUILDER_ASSETS=${found.directory}; nothing to build`);
    return found.directory;
  }
  const target = defaultAssetsDirectory();
  const stamp = buildStamp();
  const stampPath = join(target, STAMP_FILE);
  const current = existsSync(stampPath) ? readFileSync(stampPath, "utf8").trim() : "";
  if (!options.force && current === stamp) {
    findControlPlaneBinaries(target);
    log(`reusing the cached build in ${target} (up to date with go.mod; --force rebuilds)`);
    return target;
  }
  if (current === "" && existsSync(target)) {
    log(`${target} has no build stamp: building again`);
  } else if (current !== "") log("go.mod or go.sum changed since the cached build: building again");
  await build(target, stamp);
  return findControlPlaneBinaries(target).directory;
}

if (import.meta.main) {
  try {
    const directory = await ensureEnvtestBinaries({ force: process.argv.includes("--force") });
    console.log(directory);
  } catch (err) {
    log(err instanceof Error ? err.message : String(err));
    process.exit(1);
  }
}
