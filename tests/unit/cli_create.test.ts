// `rudder create api` on a project made by `rudder init`: the new kind's files, its sample, its
// registration in main.ts's setup and rudder.json, and the tests that must serve its CRD; and the
// scaffold's samples and tasks that kubebuilder users look for.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import process from "node:process";
import { registerController } from "../../cli/create.ts";
import { existingKinds } from "../../cli/kinds.ts";
import { DEPENDENCY_VERSIONS } from "../../cli/init.ts";
import { scaffold, withEnvironmentKinds } from "../../cli/templates.ts";
import { VERSION } from "../../lib/version.ts";
import { type MainRun, MEMCACHED, runMain, useScratch } from "../support/cli_main.ts";

const base = MEMCACHED;
const T = { timeout: 30_000 };
const scratch = useScratch("rudder-create-test-");

function rudder(cwd: string, ...args: string[]): Promise<MainRun> {
  return runMain(args, cwd, process.env);
}

/** A fresh scaffold on disk (published mode: nothing here runs it). */
function project(name: string): string {
  const dir = join(scratch(), name);
  for (const [path, content] of scaffold(base, DEPENDENCY_VERSIONS)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  return dir;
}

const read = (dir: string, path: string) => readFileSync(join(dir, path), "utf8");

describe("rudder create api", () => {
  it(
    "adds the kind's resource, controller, test and sample, in the first kind's group",
    T,
    async () => {
      const dir = project("adds");
      const result = await rudder(dir, "create", "api", "--kind", "MemcachedBackup");
      assert.equal(result.code, 0, result.err);
      const api = read(dir, "api/memcachedbackup.ts");
      assert.match(api, /group: "cache\.example\.com"/);
      assert.match(api, /version: "v1alpha1"/);
      assert.match(api, /kind: "MemcachedBackup"/);
      assert.match(
        read(dir, "controllers/memcachedbackup_controller.ts"),
        /setupMemcachedBackupController/,
      );
      assert.ok(existsSync(join(dir, "controllers/memcachedbackup_controller_test.ts")));
      assert.match(
        read(dir, "config/samples/cache.example.com_v1alpha1_memcachedbackup.yaml"),
        /^apiVersion: cache\.example\.com\/v1alpha1\nkind: MemcachedBackup\n/,
      );
      assert.equal(
        read(dir, "config/samples/kustomization.yaml"),
        "resources:\n  - cache.example.com_v1alpha1_memcached.yaml\n" +
          "  - cache.example.com_v1alpha1_memcachedbackup.yaml\n",
      );
    },
  );

  it("registers the controller in setup and the module in rudder.json", T, async () => {
    const dir = project("registers");
    assert.equal((await rudder(dir, "create", "api", "--kind", "Backup")).code, 0);
    const mainModule = read(dir, "main.ts");
    assert.match(
      mainModule,
      /import \{ setupBackupController \} from "\.\/controllers\/backup_controller\.ts";/,
    );
    assert.match(
      mainModule,
      /import \{ setupBackupController \} from .*\n\/\/ \+rudder:scaffold:imports\n/,
    );
    assert.match(
      mainModule,
      / {2}setupMemcachedController\(mgr\);\n {2}setupBackupController\(mgr\);\n {2}\/\/ \+rudder:scaffold:controllers\n/,
    );
    assert.deepEqual(JSON.parse(read(dir, "rudder.json")).api, [
      "api/memcached.ts",
      "api/backup.ts",
    ]);
  });

  it("gives every test's control plane the CRDs of all kinds", T, async () => {
    const dir = project("crds");
    assert.equal((await rudder(dir, "create", "api", "--kind", "Backup")).code, 0);
    const first = read(dir, "controllers/memcached_controller_test.ts");
    assert.match(first, /new Environment\(\{ crds: \[Memcached, Backup\] \}\)/);
    assert.match(first, /import \{ Backup \} from "\.\.\/api\/backup\.ts";/);
    const second = read(dir, "controllers/backup_controller_test.ts");
    assert.match(second, /new Environment\(\{ crds: \[Backup, Memcached\] \}\)/);
  });

  it("takes --group and --version", T, async () => {
    const dir = project("group");
    const result = await rudder(
      dir,
      "create",
      "api",
      "--group",
      "batch.example.com",
      "--version",
      "v1",
      "--kind",
      "Report",
    );
    assert.equal(result.code, 0, result.err);
    assert.deepEqual(
      existingKinds(dir, ["api/memcached.ts", "api/report.ts"]).map((k) =>
        `${k.kind}.${k.group}/${k.version}`
      ),
      ["Memcached.cache.example.com/v1alpha1", "Report.batch.example.com/v1"],
    );
  });

  it(
    "refuses a main.ts without the markers, naming it and the marker, and writes nothing",
    T,
    async () => {
      const dir = project("no-markers");
      const before = read(dir, "main.ts");
      writeFileSync(join(dir, "main.ts"), before.replace(/^\s*\/\/ \+rudder:scaffold:.*\n/gm, ""));
      const result = await rudder(dir, "create", "api", "--kind", "Backup");
      assert.equal(result.code, 1);
      assert.match(
        result.err,
        /main\.ts has no `\/\/ \+rudder:scaffold:imports` line, above which rudder create inserts its code; add it after its last import/,
      );
      assert.equal(existsSync(join(dir, "api/backup.ts")), false, "nothing written");
    },
  );

  it("refuses a kind the project has, a bad kind, and a missing --kind", T, async () => {
    const dir = project("refuses");
    const again = await rudder(dir, "create", "api", "--kind", "Memcached");
    assert.equal(again.code, 1);
    assert.match(again.err, /already has a Memcached/);
    const bad = await rudder(dir, "create", "api", "--kind", "backup");
    assert.equal(bad.code, 2);
    assert.match(bad.err, /--kind must be UpperCamelCase/);
    const missing = await rudder(dir, "create", "api");
    assert.equal(missing.code, 2);
    assert.match(missing.err, /--kind is required/);
    const other = await rudder(dir, "create", "controller", "--kind", "Memcached");
    assert.equal(other.code, 2);
  });
});

describe("registerController", () => {
  const main = [
    'import { Manager } from "@rudder/operator";',
    'import { setupAController } from "./controllers/a_controller.ts";',
    "// +rudder:scaffold:imports",
    "",
    "export function setup(mgr: Manager): void {",
    "  setupAController(mgr);",
    "  // +rudder:scaffold:controllers",
    "  mgr.addHealthzCheck('ping', () => {});",
    "}",
    "",
  ].join("\n");

  it("inserts above the markers, is idempotent and keeps the other lines", T, () => {
    const once = registerController(main, "B", "controllers/b_controller.ts");
    assert.equal(registerController(once, "B", "controllers/b_controller.ts"), once);
    assert.equal(
      once,
      main
        .replace(
          "// +rudder:scaffold:imports",
          'import { setupBController } from "./controllers/b_controller.ts";\n$&',
        )
        .replace("  // +rudder:scaffold:controllers", "  setupBController(mgr);\n$&"),
    );
  });

  it("names the file and the marker it lacks", T, () => {
    for (const marker of ["imports", "controllers"]) {
      const without = main.replace(new RegExp(`^.*\\+rudder:scaffold:${marker}\n`, "m"), "");
      assert.throws(
        () => registerController(without, "B", "controllers/b_controller.ts", "src/main.ts"),
        new RegExp(
          `^MissingMarkerError: src/main\\.ts has no \`// \\+rudder:scaffold:${marker}\` line`,
        ),
      );
    }
  });
});

describe("withEnvironmentKinds", () => {
  it("leaves a test without an Environment unchanged", T, () => {
    assert.equal(withEnvironmentKinds("x", "A", [{ kind: "B", file: "api/b.ts" }]), "x");
  });

  it("wraps the list as deno fmt does once it is too long, and reads it back", T, () => {
    const test = [
      'import { Alpha } from "../api/alpha.ts";',
      "",
      'describe("x", () => {',
      "  const env = new Environment({ crds: [Alpha] });",
      "});",
      "",
    ].join("\n");
    const long = (n: number) => ({ kind: `K${n}${"x".repeat(30)}`, file: `api/k${n}.ts` });
    const two = withEnvironmentKinds(test, "Alpha", [long(1), long(2)]);
    assert.match(
      two,
      /^ {2}const env = new Environment\(\{\n {4}crds: \[Alpha, K1x+, K2x+\],\n {2}\}\);$/m,
    );
    assert.match(two, /^import \{ Alpha \} from "\.\.\/api\/alpha\.ts";\nimport \{ K1x+ \}/m);
    const three = withEnvironmentKinds(two, "Alpha", [long(1), long(2), long(3)]);
    assert.match(
      three,
      /^ {2}const env = new Environment\(\{\n {4}crds: \[\n {6}Alpha,\n {6}K1x+,\n {6}K2x+,\n {6}K3x+,\n {4}\],\n {2}\}\);$/m,
    );
    assert.equal(three.match(/import \{ K1x+ \}/g)?.length, 1, "no kind imported twice");
    assert.equal(withEnvironmentKinds(three, "Alpha", [long(3)]), three);
    for (const line of three.split("\n")) assert.ok(line.length <= 100, line);
  });
});

describe("the scaffold", () => {
  it("has a sample object per kind under config/samples/", T, () => {
    const files = scaffold(base, DEPENDENCY_VERSIONS);
    assert.equal(
      files.get("config/samples/cache.example.com_v1alpha1_memcached.yaml"),
      "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata:\n" +
        "  name: memcached-sample\nspec:\n  replicas: 1\n  image: registry.k8s.io/pause:3.10\n",
    );
  });

  it(
    "has tasks for run, test, manifests, build, dev and image in deno.json and package.json",
    T,
    () => {
      const files = scaffold(base, DEPENDENCY_VERSIONS);
      const tasks = Object.keys(JSON.parse(files.get("deno.json")!).tasks);
      const scripts = Object.keys(JSON.parse(files.get("package.json")!).scripts);
      for (const name of ["run", "test", "manifests", "build", "dev", "image"]) {
        assert.ok(tasks.includes(name), `deno.json has ${name}`);
        assert.ok(scripts.includes(name), `package.json has ${name}`);
      }
    },
  );
});

describe("rudder --version", () => {
  it("prints the package's version", T, async () => {
    const result = await rudder(scratch(), "--version");
    assert.equal(result.code, 0);
    assert.equal(result.out, `${VERSION}\n`);
  });
});
