/**
 * Builds `kube-apiserver` and `etcd` from the Go modules pinned in envtest_module.ts (its go.mod
 * and go.sum written into the cache), once, into the cache that `Environment` looks in,
 * reporting progress at least every 10 s. With `KUBEBUILDER_ASSETS` set it builds nothing and
 * checks that directory. `deno task envtest` and `rudder envtest setup` run it.
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
import {
  defaultAssetsDirectory,
  ENVTEST_FIRST_BUILD,
  ENVTEST_KUBERNETES_VERSION,
  envtestCacheRoot,
  findControlPlaneBinaries,
} from "./assets.ts";
import { ENVTEST_GO_MOD, ENVTEST_GO_SUM } from "./envtest_module.ts";
import { Progress } from "../util/progress.ts";

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
function goBuild(args: string[], cwd: string): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn("go", args, { cwd, stdio: ["ignore", "inherit", "inherit"] });
    child.on("error", reject);
    child.on("close", (code) => resolve(code));
  });
}

/** A hash of everything that decides the binaries' content, so a changed go.mod rebuilds. */
function buildStamp(): string {
  const hash = createHash("sha256");
  hash.update(ENVTEST_GO_MOD).update(ENVTEST_GO_SUM);
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

/** Writes the Go module into the cache (a published Rudder's own files are not on disk). */
function moduleDirectory(stamp: string): string {
  const dir = join(envtestCacheRoot(), "src", stamp.slice(0, 16));
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "go.mod"), ENVTEST_GO_MOD);
  writeFileSync(join(dir, "go.sum"), ENVTEST_GO_SUM);
  return dir;
}

/** Builds into a fresh directory next to `target`, then renames it into place. */
async function build(target: string, stamp: string): Promise<void> {
  log(`${goVersion()}`);
  const moduleDir = moduleDirectory(stamp);
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
      ], moduleDir).catch((err: Error) => {
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
