// docs/tutorial.md followed as a reader follows it, mechanically: tools/tutorial.ts scaffolds a
// fresh project with the CLI, writes each `file=` block and runs each `sh run` command in order.
// The result must be examples/tutorial file for file, pass deno fmt, lint and check, pass its
// own tests on Deno and on Bun, and have manifests from `rudder manifests` (step 9). Steps 10-11
// (binary, image, deploy) are the CLI's own, tested in cli.test.ts.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { parse } from "yaml";
import { runtimeExecutable } from "../../cli/project.ts";
import { ROOT } from "../../tools/check_docs.ts";
import { exampleFiles, followTutorial } from "../../tools/tutorial.ts";
import { run } from "../support/cli.ts";

/** Milliseconds for one step: following the page, or one run of a project's tests. */
const STEP_TIMEOUT = 300_000;
const EXAMPLE = join(ROOT, "examples", "tutorial");

let scratch: string;
let project: string;

before(async () => {
  scratch = mkdtempSync(join(tmpdir(), "rudder-tutorial-steps-"));
  project = await followTutorial(scratch);
}, { timeout: STEP_TIMEOUT });

after(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
}, { timeout: 10_000 });

describe("docs/tutorial.md, followed step by step in a fresh scaffold", () => {
  it("gives examples/tutorial, file for file", { timeout: 10_000 }, () => {
    assert.deepEqual(exampleFiles(project), exampleFiles(EXAMPLE));
    for (const file of exampleFiles(EXAMPLE)) {
      assert.equal(
        readFileSync(join(project, file), "utf8"),
        readFileSync(join(EXAMPLE, file), "utf8"),
        `${file} (deno run -A tools/tutorial.ts <dir> --update-example rewrites the example)`,
      );
    }
  });

  it("gives a project that deno fmt, deno lint and deno check accept", {
    timeout: STEP_TIMEOUT,
  }, async () => {
    const deno = runtimeExecutable("deno", process.env);
    for (const args of [["fmt", "--check"], ["lint"], ["check"]]) {
      const result = await run(deno, args, { cwd: project });
      assert.equal(result.code, 0, `deno ${args.join(" ")}:\n${result.stdout}${result.stderr}`);
    }
  });

  it("gives a project whose tests pass with deno test", { timeout: STEP_TIMEOUT }, async () => {
    const result = await run(runtimeExecutable("deno", process.env), ["test", "-A"], {
      cwd: project,
      env: { ...process.env, NO_COLOR: "1" },
    });
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    assert.match(result.stdout, /ok \| 3 passed \(6 steps\) \| 0 failed/);
  });

  it("gives a project whose tests pass with bun run test", { timeout: STEP_TIMEOUT }, async () => {
    const result = await run(runtimeExecutable("bun", process.env), ["run", "test"], {
      cwd: project,
    });
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    assert.match(result.stderr, /\b6 pass\b/);
    assert.match(result.stderr, /\b0 fail\b/);
  });

  it("has run rudder manifests: the CRD, the ConfigMap rule and the webhook configurations", {
    timeout: 10_000,
  }, () => {
    const config = join(project, "config");
    const crd = parse(readFileSync(join(config, "crd/tutorial.rudder.dev_websites.yaml"), "utf8"));
    assert.equal(crd.spec.names.kind, "Website");
    const spec = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec;
    assert.deepEqual(spec.required, ["contentFrom"]);
    const role = parse(readFileSync(join(config, "rbac/role.yaml"), "utf8"));
    const verbs = (resource: string) =>
      role.rules.filter((rule: { resources?: string[] }) => rule.resources?.includes(resource))
        .flatMap((rule: { verbs: string[] }) => rule.verbs);
    for (const verb of ["get", "list", "watch", "create", "update", "patch"]) {
      assert.ok(verbs("configmaps").includes(verb), `configmaps: ${verb}`);
      assert.ok(verbs("deployments").includes(verb), `deployments: ${verb}`);
      assert.ok(verbs("services").includes(verb), `services: ${verb}`);
    }
    const kustomization = parse(readFileSync(join(config, "kustomization.yaml"), "utf8"));
    const webhooks = (kustomization.resources as string[]).filter((r) => r.startsWith("webhook/"));
    assert.ok(webhooks.length > 0, `webhook manifests: ${kustomization.resources}`);
    for (const path of kustomization.resources as string[]) {
      assert.ok(existsSync(join(config, path)), path);
    }
  });
});
