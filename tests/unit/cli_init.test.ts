// `rudder init`: the files of a new operator project, in both modes — importing a Rudder
// checkout (`--local`, no registry) and the published package (JSR for Deno, its npm mirror
// for Bun) — and how the command writes them.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { lstatSync, mkdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { DEPENDENCY_VERSIONS } from "../../cli/init.ts";
import { DENO_V8_FLAGS, envAssignments, loadProject } from "../../cli/project.ts";
import { scaffold, SUBPATH_FILES } from "../../cli/templates.ts";
import { VERSION } from "../../lib/version.ts";
import { type MainRun, MEMCACHED, runMain, useScratch } from "../support/cli_main.ts";

const checkout = fileURLToPath(new URL("../../", import.meta.url)).replace(/\/$/, "");
const base = MEMCACHED;
const local = scaffold({ ...base, local: checkout }, DEPENDENCY_VERSIONS);
const published = scaffold(base, DEPENDENCY_VERSIONS);
const scratch = useScratch("rudder-init-test-");

function file(files: Map<string, string>, path: string): string {
  const content = files.get(path);
  assert.ok(content !== undefined, `${path} is generated`);
  return content;
}

/** Every module specifier imported by a TypeScript file. */
function importsOf(source: string): string[] {
  return [...source.matchAll(/^\s*(?:import|export)\b[^"']*?from\s+["']([^"']+)["']/gm)]
    .map((m) => m[1]);
}

function rudder(cwd: string, ...args: string[]): Promise<MainRun> {
  return runMain(args, cwd);
}

describe("the scaffold", () => {
  it("has the layout of the example operator, a Dockerfile, tests and settings", () => {
    const expected = [
      ".dockerignore",
      ".gitignore",
      "Dockerfile",
      "README.md",
      "api/memcached.ts",
      "bun_test_setup.ts",
      "bunfig.toml",
      "config/samples/cache.example.com_v1alpha1_memcached.yaml",
      "config/samples/kustomization.yaml",
      "controllers/memcached_controller.ts",
      "controllers/memcached_controller_test.ts",
      "deno.json",
      "main.ts",
      "package.json",
      "rudder.json",
      "tracing.ts",
      "tsconfig.json",
    ];
    assert.deepEqual([...local.keys()].sort(), expected);
    assert.deepEqual([...published.keys()].sort(), [".npmrc", ...expected].sort());
  });

  it("declares the kind with defineResource and zod", () => {
    const api = file(local, "api/memcached.ts");
    assert.match(api, /export const Memcached = defineResource\(\{/);
    assert.match(
      api,
      /group: "cache\.example\.com",\n {2}version: "v1alpha1",\n {2}kind: "Memcached"/,
    );
    assert.match(api, /import \{ z \} from "zod";/);
  });

  it("exports setup(mgr) from main.ts, which rudder manifests calls", () => {
    const main = file(local, "main.ts");
    assert.match(main, /export function setup\(mgr: Manager\): void \{/);
    assert.match(main, /setupMemcachedController\(mgr\);/);
    assert.match(main, /export function createManager\(/);
    assert.match(main, /leaderElectionID: "memcached-operator-leader"/);
    assert.match(main, /env\.LEADER_ELECTION_NAMESPACE/);
    // On Deno `node:process` would start its Node layer in every operator (bench/README.md).
    assert.doesNotMatch(main, /from "node:process"/);
    assert.match(main, /if \(import\.meta\.main\) \{/);
    const controller = file(local, "controllers/memcached_controller.ts");
    assert.match(controller, /\.for\(Memcached\)\n\s+\.owns\(Deployment\)/);
    assert.match(controller, /export const FINALIZER = "cache\.example\.com\/cleanup";/);
  });

  it("marks where rudder create inserts imports, controllers and webhooks", () => {
    for (const files of [local, scaffold({ ...base, webhooks: true }, DEPENDENCY_VERSIONS)]) {
      const main = file(files, "main.ts");
      assert.match(
        main,
        /\nimport \{ setupMemcached\w+ \} from .*\n\/\/ \+rudder:scaffold:imports\n\n/,
      );
      assert.match(
        main,
        /\n {2}setupMemcachedController\(mgr\);\n {2}\/\/ \+rudder:scaffold:controllers\n(.*\n)? {2}\/\/ \+rudder:scaffold:webhooks\n\}\n/,
      );
    }
  });

  it("tests the reconciler with FakeClient and the operator with Environment", () => {
    const test = file(local, "controllers/memcached_controller_test.ts");
    assert.match(test, /import \{ Environment, FakeClient \} from "@rudder\/operator\/testing";/);
    assert.match(test, /new Environment\(\{ crds: \[Memcached\] \}\)/);
    assert.match(test, /await env\.stop\(\);/);
  });

  it("gives every test and hook of its tests a timeout, and raises bun test's default for hooks", () => {
    const test = file(local, "controllers/memcached_controller_test.ts");
    const calls = [...test.matchAll(/^\s*(it|test|before|after)\(/gm)].length;
    const timed = [...test.matchAll(/\{\s*timeout: [A-Z_]+,?\s*\}/g)].length;
    assert.ok(calls >= 4, `${calls} tests and hooks`);
    assert.equal(timed, calls, "each states its timeout");
    assert.match(file(local, "bunfig.toml"), /^\[test\]\npreload = \["\.\/bun_test_setup\.ts"\]$/m);
    assert.match(file(local, "bun_test_setup.ts"), /setDefaultTimeout\(300000\)/);
  });

  it("serves metrics securely unless METRICS_SERVING says insecure-http in so many words", () => {
    const main = file(local, "main.ts");
    assert.match(main, /metricsBindAddress: env\.METRICS_BIND_ADDRESS \?\? ":8443"/);
    assert.match(
      main,
      /metricsServing: env\.METRICS_SERVING === "insecure-http" \? "insecure-http" : "secure"/,
    );
  });

  it("imports only Rudder, node: built-ins, its own modules and OpenTelemetry, in both modes", () => {
    for (const files of [local, published]) {
      for (const [path, content] of files) {
        if (!path.endsWith(".ts")) continue;
        for (const specifier of importsOf(content)) {
          // bun:test only in the file that Bun alone preloads.
          if (specifier === "bun:test") assert.equal(path, "bun_test_setup.ts");
          // The SDK only in the module main.ts loads when tracing is on.
          if (specifier.startsWith("@opentelemetry/")) assert.equal(path, "tracing.ts");
          assert.match(
            specifier,
            /^(@rudder\/operator(\/[a-z]+)?|zod|node:[a-z/_]+|\.\.?\/.+\.ts|@opentelemetry\/[a-z-]+)$|^bun:test$/,
            `${path} imports ${specifier}`,
          );
        }
      }
    }
  });

  it("builds on gcr.io/distroless/cc as a non-root user, with the single binary", () => {
    const dockerfile = file(local, "Dockerfile");
    assert.match(dockerfile, /^FROM gcr\.io\/distroless\/cc/m);
    assert.match(dockerfile, /^USER 65532:65532$/m);
    assert.match(dockerfile, /^COPY dist\/memcached-operator \/memcached-operator$/m);
    assert.match(dockerfile, /^ENTRYPOINT \["\/memcached-operator"\]$/m);
    assert.doesNotMatch(dockerfile, /^RUN /m, "nothing runs in a distroless image");
    assert.equal(file(local, ".dockerignore"), "*\n!dist/memcached-operator\n");
  });

  it("has settings that rudder's other commands read", () => {
    const project = join(scratch(), "memcached-operator");
    for (const [path, content] of local) {
      mkdirSync(dirname(join(project, path)), { recursive: true });
      writeFileSync(join(project, path), content);
    }
    const settings = loadProject(project);
    assert.equal(settings.name, "memcached-operator");
    assert.equal(settings.namespace, "memcached-operator-system");
    assert.equal(settings.image, "memcached-operator:0.1.0");
    assert.deepEqual(settings.api, ["api/memcached.ts"]);
    assert.equal(settings.setup, "setup");
    assert.equal(settings.main, "main.ts");
    assert.deepEqual(settings.permissions.env, [
      "LOG_FORMAT",
      "METRICS_SERVING",
      "OTEL_EXPORTER_OTLP_ENDPOINT",
      "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    ]);
    assert.equal(settings.metricsBindAddress, ":8443");
  });
});

describe("the scaffold with --local", () => {
  it("maps @rudder/operator to the checkout in deno.json and resolves npm from its node_modules", () => {
    const deno = JSON.parse(file(local, "deno.json"));
    assert.deepEqual(deno.imports, {
      "@rudder/operator": `${checkout}/mod.ts`,
      ...Object.fromEntries(
        Object.entries(SUBPATH_FILES).map((
          [sub, f],
        ) => [`@rudder/operator/${sub}`, `${checkout}/${f}`]),
      ),
      zod: `${checkout}/lib/api/zod.ts`,
    });
    assert.equal(deno.nodeModulesDir, "manual");
    assert.equal(deno.tasks.rudder, `deno run -A ${checkout}/cli/main.ts`);
    assert.equal(deno.tasks.test, "deno test -A");
  });

  it("maps the same paths for Bun in tsconfig.json, strictly typed", () => {
    const tsconfig = JSON.parse(file(local, "tsconfig.json"));
    assert.equal(tsconfig.compilerOptions.strict, true);
    assert.deepEqual(tsconfig.compilerOptions.paths, {
      "@rudder/operator": [`${checkout}/mod.ts`],
      ...Object.fromEntries(
        Object.entries(SUBPATH_FILES).map((
          [sub, f],
        ) => [`@rudder/operator/${sub}`, [`${checkout}/${f}`]]),
      ),
      zod: [`${checkout}/lib/api/zod.ts`],
    });
  });

  it("needs no registry: no jsr: or npm: specifier, no dependency, no .npmrc", () => {
    for (const path of ["deno.json", "package.json", "tsconfig.json"]) {
      assert.doesNotMatch(file(local, path), /jsr:|npm:|npm\.jsr\.io/, path);
    }
    assert.deepEqual(JSON.parse(file(local, "package.json")).dependencies, {});
    assert.equal(local.has(".npmrc"), false);
  });

  it("runs the operator on Deno with Rudder's V8 flags and environment, and tests without", () => {
    for (const scaffolded of [local, published]) {
      const deno = JSON.parse(file(scaffolded, "deno.json"));
      const run = `${envAssignments("deno").join(" ")} deno run -A --v8-flags=${
        DENO_V8_FLAGS.join(",")
      } main.ts`;
      assert.equal(deno.tasks.start, run);
      assert.equal(deno.tasks.run, run);
      assert.equal(deno.tasks.test, "deno test -A");
    }
    assert.deepEqual(DENO_V8_FLAGS, ["--max-semi-space-size=2"]);
  });

  it("runs the operator on Bun with Rudder's environment, and tests without", () => {
    for (const scaffolded of [local, published]) {
      const pkg = JSON.parse(file(scaffolded, "package.json"));
      assert.equal(pkg.scripts.start, "MIMALLOC_PURGE_DELAY=0 BUN_JSC_useFTLJIT=0 bun main.ts");
      assert.equal(pkg.scripts.run, "MIMALLOC_PURGE_DELAY=0 BUN_JSC_useFTLJIT=0 bun main.ts");
      assert.equal(pkg.scripts.test, "bun test --timeout 120000");
    }
  });

  it("quotes a checkout path with spaces in the tasks", () => {
    const spaced = scaffold({ ...base, local: "/src/my rudder" }, DEPENDENCY_VERSIONS);
    const deno = JSON.parse(file(spaced, "deno.json"));
    assert.equal(deno.tasks.rudder, "deno run -A '/src/my rudder/cli/main.ts'");
    assert.equal(deno.imports["@rudder/operator"], "/src/my rudder/mod.ts");
  });
});

/** The OpenTelemetry packages a project's tracing.ts imports. */
const OTEL_PACKAGES = [
  "@opentelemetry/api",
  "@opentelemetry/context-async-hooks",
  "@opentelemetry/exporter-trace-otlp-http",
  "@opentelemetry/resources",
  "@opentelemetry/sdk-trace",
] as const;

describe("the scaffold for the published package", () => {
  it("imports jsr:@rudder/operator in deno.json, with zod and LogTape from npm", () => {
    const deno = JSON.parse(file(published, "deno.json"));
    assert.deepEqual(deno.imports, {
      "@rudder/operator": `jsr:@rudder/operator@^${VERSION}`,
      "@logtape/logtape": `npm:@logtape/logtape@^${DEPENDENCY_VERSIONS["@logtape/logtape"]}`,
      ...Object.fromEntries(
        OTEL_PACKAGES.map((name) => [name, `npm:${name}@^${DEPENDENCY_VERSIONS[name]}`]),
      ),
      zod: `npm:zod@^${DEPENDENCY_VERSIONS.zod}`,
    });
    assert.equal(deno.nodeModulesDir, undefined);
    assert.equal(deno.tasks.rudder, `deno run -A jsr:@rudder/operator@^${VERSION}/cli`);
  });

  it("gets @rudder/operator for Bun from JSR's npm registry", () => {
    const pkg = JSON.parse(file(published, "package.json"));
    assert.deepEqual(pkg.dependencies, {
      "@rudder/operator": `npm:@jsr/rudder__operator@^${VERSION}`,
      "@logtape/logtape": `^${DEPENDENCY_VERSIONS["@logtape/logtape"]}`,
      ...Object.fromEntries(
        OTEL_PACKAGES.map((name) => [name, `^${DEPENDENCY_VERSIONS[name]}`]),
      ),
      zod: `^${DEPENDENCY_VERSIONS.zod}`,
    });
    assert.equal(pkg.type, "module");
    assert.equal(pkg.scripts.test, "bun test --timeout 120000");
    assert.equal(file(published, ".npmrc"), "@jsr:registry=https://npm.jsr.io\n");
    assert.equal(JSON.parse(file(published, "tsconfig.json")).compilerOptions.paths, undefined);
  });

  it("uses the versions of zod, LogTape and OpenTelemetry that Rudder itself uses", () => {
    const pkg = JSON.parse(readFileSync(join(checkout, "package.json"), "utf8"));
    for (const [name, version] of Object.entries(DEPENDENCY_VERSIONS)) {
      assert.equal({ ...pkg.devDependencies, ...pkg.dependencies }[name], version, name);
    }
  });
});

describe("rudder init", () => {
  it("writes the project and links Node's types and OpenTelemetry from the checkout", async () => {
    const dir = join(scratch(), "written");
    const { code, out, err } = await rudder(scratch(), "init", "written", "--local", checkout);
    assert.equal(code, 0, err);
    assert.match(out, /^ {2}main\.ts$/m);
    // rudder init's defaults: the directory's name, and an Example of example.com/v1alpha1.
    const defaults = {
      name: "written",
      group: "example.com",
      version: "v1alpha1",
      kind: "Example",
    };
    const expected = scaffold({ ...defaults, local: checkout }, DEPENDENCY_VERSIONS);
    assert.ok(expected.has("controllers/example_controller.ts"));
    for (const [path, content] of expected) {
      assert.equal(readFileSync(join(dir, path), "utf8"), content, path);
    }
    const link = join(dir, "node_modules", "@types", "node");
    assert.ok(lstatSync(link).isSymbolicLink());
    assert.equal(readlinkSync(link), join(checkout, "node_modules", "@types", "node"));
    const otel = join(dir, "node_modules", "@opentelemetry");
    assert.equal(readlinkSync(otel), join(checkout, "node_modules", "@opentelemetry"));
    assert.match(
      err,
      /Created the written operator \(Example\.example\.com\/v1alpha1\) in written\./,
    );
  });

  it("refuses a directory that is not empty, unless --force", async () => {
    const dir = join(scratch(), "busy");
    mkdirSync(dir);
    writeFileSync(join(dir, "notes.txt"), "mine");
    const refused = await rudder(scratch(), "init", "busy");
    assert.equal(refused.code, 1);
    assert.match(refused.err, /busy is not empty; choose another directory or pass --force/);
    const forced = await rudder(scratch(), "init", "busy", "--force", "--kind", "Widget");
    assert.equal(forced.code, 0, forced.err);
    assert.equal(readFileSync(join(dir, "notes.txt"), "utf8"), "mine");
    assert.match(readFileSync(join(dir, "api", "widget.ts"), "utf8"), /kind: "Widget"/);
  });
});
