// `rudder create api` and `rudder create webhook` on a scaffold made by `rudder init --local`
// (without webhooks): the second kind's CRD, RBAC and webhook configurations are in the
// manifests, the project type-checks, and its own tests — which run the whole operator against a
// real control plane for each kind, and the webhook's functions — pass.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { parse } from "yaml";
import { runtimeExecutable } from "../../cli/project.ts";
import { initProject, rudder as rudderCli, run as runCommand } from "../support/cli.ts";

const NAME = "memcached-operator";
const ENV = { ...process.env, NO_COLOR: "1" };
let scratch: string;
let project: string;

/** Runs `command` in `cwd`, without colours. */
function run(command: string, args: string[], cwd: string) {
  return runCommand(command, args, { cwd, env: ENV });
}

/** The CLI of this checkout, on this test's runtime. */
function rudder(cwd: string, ...args: string[]) {
  return rudderCli(args, { cwd, env: ENV });
}

before(async () => {
  scratch = mkdtempSync(join(tmpdir(), "rudder-create-it-"));
  project = await initProject(scratch, NAME);
  const create = await rudder(project, "create", "api", "--kind", "MemcachedBackup");
  assert.equal(create.code, 0, create.stderr);
  const webhook = await rudder(project, "create", "webhook", "--kind", "MemcachedBackup");
  assert.equal(webhook.code, 0, webhook.stderr);
}, { timeout: 90_000 });

after(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
}, { timeout: 30_000 });

describe("rudder create api and create webhook on a scaffold", () => {
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
    assert.match(kustomization, /webhook\/validating_webhook_configuration\.yaml/);
    for (
      const [file, path] of [
        ["mutating", "/mutate-cache-example-com-v1alpha1-memcachedbackup"],
        ["validating", "/validate-cache-example-com-v1alpha1-memcachedbackup"],
      ]
    ) {
      const configuration = parse(
        readFileSync(join(project, `config/webhook/${file}_webhook_configuration.yaml`), "utf8"),
      );
      const hooks: { clientConfig: { service: { path: string } } }[] = configuration.webhooks;
      assert.deepEqual(hooks.map((hook) => hook.clientConfig.service.path), [path]);
    }
    const deployment = readFileSync(join(project, "config/manager/deployment.yaml"), "utf8");
    assert.match(deployment, /name: ENABLE_WEBHOOKS\n\s+value: "true"/);
  });

  it(
    "reconciles both kinds: the project's tests pass on this runtime",
    { timeout: 300_000 },
    async () => {
      if ("Deno" in globalThis) {
        const deno = runtimeExecutable("deno", process.env);
        const check = await run(deno, ["task", "check"], project);
        assert.equal(check.code, 0, `deno task check:\n${check.stdout}\n${check.stderr}`);
        const result = await run(deno, ["test", "-A"], project);
        assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
        assert.match(
          result.stdout,
          /reconciles a MemcachedBackup and lets it go when it is deleted/,
        );
        assert.match(result.stdout, /refuse more than MAX_REPLICAS copies as 422 Invalid/);
        assert.match(result.stdout, /ok \| 5 passed \(9 steps\) \| 0 failed/);
      } else {
        const result = await run(runtimeExecutable("bun", process.env), ["run", "test"], project);
        assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
        assert.match(result.stderr, /\b9 pass\b/);
        assert.match(result.stderr, /\b0 fail\b/);
      }
    },
  );
});
