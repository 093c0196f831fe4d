// `rudder create api` on a scaffold made by `rudder init --local`: the second kind's CRD and RBAC
// are in the manifests, and the project's own tests — which run the whole operator against a
// real control plane for each kind — pass, so the new kind reconciles.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { runtimeExecutable } from "../../cli/project.ts";

const CHECKOUT = fileURLToPath(new URL("../../", import.meta.url)).replace(/\/$/, "");
const CLI = join(CHECKOUT, "cli", "main.ts");
const NAME = "memcached-operator";
let scratch: string;
let project: string;

function run(command: string, args: string[], cwd: string) {
  const child = spawn(command, args, {
    cwd,
    env: { ...process.env, NO_COLOR: "1" } as Record<string, string>,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk) => (stdout += chunk));
  child.stderr!.on("data", (chunk) => (stderr += chunk));
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** The CLI of this checkout, on this test's runtime. */
function rudder(cwd: string, ...args: string[]) {
  const runtimeArgs = "Deno" in globalThis ? ["run", "-A", CLI, ...args] : [CLI, ...args];
  return run(process.execPath, runtimeArgs, cwd);
}

before(async () => {
  scratch = mkdtempSync(join(tmpdir(), "rudder-create-it-"));
  project = join(scratch, NAME);
  const init = await rudder(
    scratch,
    "init",
    NAME,
    "--group",
    "cache.example.com",
    "--kind",
    "Memcached",
    "--local",
    CHECKOUT,
  );
  assert.equal(init.code, 0, init.stderr);
  const create = await rudder(project, "create", "api", "--kind", "MemcachedBackup");
  assert.equal(create.code, 0, create.stderr);
}, { timeout: 60_000 });

after(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
}, { timeout: 30_000 });

describe("rudder create api on a scaffold", () => {
  it("puts the second kind's CRD and RBAC in the manifests", { timeout: 120_000 }, async () => {
    const result = await rudder(project, "manifests");
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /2 CRD\(s\), controllers: memcached, memcachedbackup/);
    const crd = parse(
      readFileSync(join(project, "config/crd/cache.example.com_memcachedbackups.yaml"), "utf8"),
    );
    assert.equal(crd.spec.names.kind, "MemcachedBackup");
    const kustomization = readFileSync(join(project, "config/kustomization.yaml"), "utf8");
    assert.match(kustomization, /crd\/cache\.example\.com_memcachedbackups\.yaml/);
    const role = parse(readFileSync(join(project, "config/rbac/role.yaml"), "utf8"));
    const resources = role.rules.flatMap((rule: { resources?: string[] }) => rule.resources ?? []);
    for (const resource of ["memcachedbackups", "memcachedbackups/status", "memcacheds"]) {
      assert.ok(resources.includes(resource), `the ClusterRole covers ${resource}`);
    }
  });

  it(
    "reconciles both kinds: the project's tests pass on this runtime",
    { timeout: 300_000 },
    async () => {
      if ("Deno" in globalThis) {
        const result = await run(runtimeExecutable("deno", process.env), ["test", "-A"], project);
        assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
        assert.match(
          result.stdout,
          /reconciles a MemcachedBackup and lets it go when it is deleted/,
        );
        assert.match(result.stdout, /ok \| 4 passed \(6 steps\) \| 0 failed/);
      } else {
        const result = await run(runtimeExecutable("bun", process.env), ["run", "test"], project);
        assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
        assert.match(result.stderr, /\b6 pass\b/);
        assert.match(result.stderr, /\b0 fail\b/);
      }
    },
  );
});
