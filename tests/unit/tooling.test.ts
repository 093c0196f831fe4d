// The project's own wiring: versions and dependencies agree across deno.json, package.json and
// the code; the test runner counts the same tests on every runtime; the envtest go.mod is what
// its generator writes; binary lookup names the places it looked.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { VERSION } from "../../lib/version.ts";
import {
  defaultAssetsDirectory,
  ENVTEST_ETCD_VERSION,
  ENVTEST_KUBERNETES_VERSION,
  findControlPlaneBinaries,
} from "../../lib/testing/assets.ts";
import { countJUnit, nodeTestPatterns } from "../../tools/test.ts";
import { publishedFiles } from "../../tools/check.ts";
import { embeddedModule, stagingModules } from "../../tools/envtest/gen_go_mod.ts";

const root = new URL("../../", import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), "utf8");
const denoJson = JSON.parse(read("deno.json"));
const packageJson = JSON.parse(read("package.json"));

describe("package metadata", () => {
  it("has one version in deno.json, package.json and lib/version.ts", () => {
    assert.equal(denoJson.version, VERSION);
    assert.equal(packageJson.version, VERSION);
    assert.equal(denoJson.name, "@rudder/operator");
  });

  it("maps every npm dependency to the same exact version for Deno and for Bun", () => {
    const fromDeno = Object.fromEntries(
      Object.entries(denoJson.imports as Record<string, string>).map(([name, spec]) => {
        assert.match(spec, /^npm:/, `${name} comes from npm, never jsr`);
        const at = spec.lastIndexOf("@");
        return [name, spec.slice(at + 1)];
      }),
    );
    assert.deepEqual(fromDeno, packageJson.dependencies);
  });

  it("pins the Deno and Bun toolchains", () => {
    assert.match(packageJson.devDependencies.deno, /^\d+\.\d+\.\d+$/);
    assert.match(packageJson.devDependencies.bun, /^\d+\.\d+\.\d+$/);
    assert.match(
      read("README.md"),
      new RegExp(`npx -y deno@${packageJson.devDependencies.deno} task test`),
    );
    assert.match(
      read(".ci/run"),
      new RegExp(`npx -y deno@${packageJson.devDependencies.deno} task test`),
    );
  });
});

describe("countJUnit", () => {
  it("counts Deno's steps and not the describe block that holds them", () => {
    const xml = `<testsuites><testsuite name="./a.test.ts">
      <testcase name="suite" classname="./a.test.ts"><failure message="x">x</failure></testcase>
      <testcase name="top level" classname="./a.test.ts"></testcase>
      <testcase name="lonely" classname="./a.test.ts"><failure message="boom">boom</failure></testcase>
    </testsuite><testsuite name="ext:deno_node/testing.ts">
      <testcase name="suite &gt; works" classname="x"></testcase>
      <testcase name="suite &gt; breaks" classname="ext:deno_node/testing.ts"><failure message="no">no</failure></testcase>
      <testcase name="suite &gt; inner &gt; deep" classname="x"></testcase>
      <testcase name="suite &gt; inner" classname="x"></testcase>
    </testsuite></testsuites>`;
    assert.deepEqual(countJUnit(xml), {
      passed: 3,
      failed: 2,
      skipped: 0,
      failures: ["lonely (./a.test.ts)", "suite > breaks"],
    });
  });

  it("counts Bun's test cases, failures and skips", () => {
    const xml = `<testsuites><testsuite name="a.test.ts"><testsuite name="suite">
      <testcase name="works" classname="suite" />
      <testcase name="skipped" classname="suite"><skipped /></testcase>
      <testcase name="fails" classname="suite"><failure type="AssertionError">x</failure></testcase>
    </testsuite><testcase name="top" classname="" /></testsuite></testsuites>`;
    assert.deepEqual(countJUnit(xml), {
      passed: 2,
      failed: 1,
      skipped: 1,
      failures: ["fails (suite)"],
    });
  });

  it("counts Node's nested suites, a test its suite's hook cancelled, and a file that failed", () => {
    // As `node --test --test-reporter=junit` writes them (Node 26), messages shortened.
    const xml = `<testsuites>
      <testsuite name="suite" tests="4" failures="1" skipped="1">
        <testcase name="works" time="0.001" classname="suite" file="/x/a.test.ts"/>
        <testcase name="skipped" classname="suite" file="/x/a.test.ts">
          <skipped type="skipped" message="why"/>
        </testcase>
        <testcase name="fails" classname="suite" file="/x/a.test.ts" failure="x">
          <failure type="testCodeFailure" message="x">[Error: x]</failure>
        </testcase>
        <testsuite name="inner" tests="1">
          <testcase name="deep" classname="suite.inner" file="/x/a.test.ts"/>
        </testsuite>
      </testsuite>
      <testsuite name="hooked" tests="1" failures="1">
        <testcase name="a" classname="hooked" file="/x/a.test.ts" failure="cancelled">
          <failure type="cancelledByParent" message="cancelled">x</failure>
        </testcase>
      </testsuite>
      <testcase name="top" classname="test" file="/x/a.test.ts"/>
      <testcase name="b.test.ts" classname="test" file="/x/b.test.ts" failure="test failed">
        <failure type="testCodeFailure" message="test failed">x</failure>
      </testcase>
      <!-- tests 7 --></testsuites>`;
    assert.deepEqual(countJUnit(xml), {
      passed: 3,
      failed: 3,
      skipped: 1,
      failures: ["fails (suite)", "a (hooked)", "b.test.ts (test)"],
    });
  });

  it("reads a name that holds `>`, which Node's reporter leaves unescaped", () => {
    const xml = `<testsuite name="s">
      <testcase name="counts &lt;error> without answer" classname="s" file="/x/a.test.ts"/>
      <testcase name="next" classname="s" failure="x"><failure message="x">x</failure></testcase>
    </testsuite>`;
    assert.deepEqual(countJUnit(xml), {
      passed: 1,
      failed: 1,
      skipped: 0,
      failures: ["next (s)"],
    });
  });

  it("gives node --test the test files under a directory, and a file as it is", () => {
    const dirs = new Set(["tests/", "tests/unit"]);
    assert.deepEqual(
      nodeTestPatterns(["tests/", "tests/unit", "tests/unit/json.test.ts"], (p) => dirs.has(p)),
      [
        "tests/**/*.test.ts",
        "tests/**/*_test.ts",
        "tests/unit/**/*.test.ts",
        "tests/unit/**/*_test.ts",
        "tests/unit/json.test.ts",
      ],
    );
  });

  it("counts a describe block whose hook failed, when no step carries the failure", () => {
    const xml = `<testcase name="suite"><failure message="before hook">x</failure></testcase>
      <testcase name="suite &gt; a"></testcase>`;
    assert.deepEqual(countJUnit(xml), {
      passed: 1,
      failed: 1,
      skipped: 0,
      failures: ["suite"],
    });
  });
});

describe("envtest assets", () => {
  it("embeds tools/envtest's go.mod and go.sum in lib/testing/envtest_module.ts as generated", () => {
    assert.equal(
      read("lib/testing/envtest_module.ts"),
      embeddedModule(read("tools/envtest/go.mod"), read("tools/envtest/go.sum")),
    );
  });

  it("keeps go.mod in step with the versions in lib/testing/assets.ts", () => {
    const goMod = read("tools/envtest/go.mod");
    assert.match(
      goMod,
      new RegExp(`^\\s*k8s\\.io/kubernetes v${ENVTEST_KUBERNETES_VERSION}\\b`, "m"),
    );
    assert.match(
      goMod,
      new RegExp(`^\\s*go\\.etcd\\.io/etcd/server/v3 v${ENVTEST_ETCD_VERSION}\\b`, "m"),
    );
    const staging = `v0.${ENVTEST_KUBERNETES_VERSION.split(".").slice(1).join(".")}`;
    const replaced = [...goMod.matchAll(/^\s*(k8s\.io\/\S+) => (\S+) (\S+)$/gm)];
    assert.ok(replaced.length > 20, "one replace line per staging module");
    for (const [, from, to, version] of replaced) {
      assert.equal(to, from);
      assert.equal(version, staging);
    }
  });

  it("takes the staging modules from k8s.io/kubernetes' require block only", () => {
    const goMod = `module k8s.io/kubernetes

require (
\tgithub.com/x/y v1.0.0
\tk8s.io/api v0.0.0
\tk8s.io/klog/v2 v2.140.0
\tk8s.io/apiserver v0.0.0
)

require (
\tk8s.io/gengo/v2 v2.0.0-2025 // indirect
)

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/sample-cli-plugin => ./staging/src/k8s.io/sample-cli-plugin
)
`;
    assert.deepEqual(stagingModules(goMod), ["k8s.io/api", "k8s.io/apiserver"]);
  });

  it("lays the cache out like setup-envtest, under XDG_CACHE_HOME", () => {
    const dir = defaultAssetsDirectory({ XDG_CACHE_HOME: "/cache" });
    assert.match(
      dir,
      new RegExp(`^/cache/rudder/envtest/k8s/${ENVTEST_KUBERNETES_VERSION}-\\w+-\\w+$`),
    );
  });

  it("names the directory, its origin and the build command when binaries are missing", () => {
    const dir = mkdtempSync(join(tmpdir(), "rudder-assets-"));
    try {
      writeFileSync(join(dir, "etcd"), "#!/bin/sh\n", { mode: 0o755 });
      assert.throws(
        () => findControlPlaneBinaries(undefined, { KUBEBUILDER_ASSETS: dir }),
        (err: Error) => {
          assert.match(
            err.message,
            new RegExp(`looked in ${dir} \\(KUBEBUILDER_ASSETS\\) for kube-apiserver;`),
          );
          assert.match(err.message, /deno task envtest/);
          return true;
        },
      );
      writeFileSync(join(dir, "kube-apiserver"), "#!/bin/sh\n", { mode: 0o755 });
      const found = findControlPlaneBinaries(undefined, { KUBEBUILDER_ASSETS: dir });
      assert.equal(found.kubeAPIServer, join(dir, "kube-apiserver"));
      assert.throws(
        () => findControlPlaneBinaries(undefined, { XDG_CACHE_HOME: join(dir, "none") }),
        /\(the default cache\) for etcd and kube-apiserver; run `deno task envtest`/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("the publish check", () => {
  it("reads the files of a dry run and refuses one that warns or lists nothing", () => {
    const ok = [
      "Simulating publish of @rudder/operator@0.1.0 with files:",
      "   file:///src/rudder/mod.ts (1.2KB)",
      "   file:///src/rudder/lib/api/mod.ts (3KB)",
      "Warning: Aborting due to --dry-run",
    ].join("\n");
    assert.deepEqual(publishedFiles(ok, "/src/rudder"), ["mod.ts", "lib/api/mod.ts"]);
    const warned = `warning[unanalyzable-dynamic-import]: unable to analyze dynamic import\n${ok}`;
    assert.throws(() => publishedFiles(warned, "/src/rudder"), /unanalyzable-dynamic-import/);
    assert.throws(() => publishedFiles("Checking...", "/src/rudder"), /listed no files/);
  });
});
