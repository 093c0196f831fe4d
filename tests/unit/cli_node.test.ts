// The CLI's Node paths: `rudder init --runtime node` (a project with npm scripts, tested with
// `node --test`, linked to a checkout with --local), the command lines of
// `rudder build --runtime node` (a bundle, then a Node single executable application), and the
// image layer of a Node executable, which carries the libatomic.so.1 distroless/cc lacks.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  lstatSync,
  mkdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { fileURLToPath } from "node:url";
import { buildPlan, hostTarget, nodeSeaConfig } from "../../cli/build.ts";
import { nodeSharedLibrary } from "../../cli/image.ts";
import { DEPENDENCY_VERSIONS } from "../../cli/init.ts";
import { executableLayer } from "../../cli/oci/image.ts";
import { readTar } from "../../cli/oci/tar.ts";
import {
  buildRuntime,
  currentRuntime,
  NODE_V8_FLAGS,
  operatorEnv,
  projectRuntime,
  type ProjectSettings,
  runModuleCommand,
  RUNTIMES,
} from "../../cli/project.ts";
import { NODE_PROJECT_BUN_VERSION, scaffold } from "../../cli/templates.ts";
import { VERSION } from "../../lib/version.ts";
import { MEMCACHED, runMain, useScratch } from "../support/cli_main.ts";

const checkout = fileURLToPath(new URL("../../", import.meta.url)).replace(/\/$/, "");
const published = scaffold({ ...MEMCACHED, runtime: "node" }, DEPENDENCY_VERSIONS);
const local = scaffold({ ...MEMCACHED, runtime: "node", local: checkout }, DEPENDENCY_VERSIONS);
const scratch = useScratch("rudder-node-test-");

function file(files: Map<string, string>, path: string): string {
  const content = files.get(path);
  assert.ok(content !== undefined, `${path} is generated`);
  return content;
}

describe("rudder init --runtime node", () => {
  it("makes a Node project: package.json and tsconfig.json, no deno.json or bunfig.toml", () => {
    const expected = [
      ".dockerignore",
      ".gitignore",
      "Dockerfile",
      "README.md",
      "api/memcached.ts",
      "config/samples/cache.example.com_v1alpha1_memcached.yaml",
      "config/samples/kustomization.yaml",
      "controllers/memcached_controller.ts",
      "controllers/memcached_controller_test.ts",
      "main.ts",
      "package.json",
      "rudder.json",
      "tracing.ts",
      "tsconfig.json",
    ];
    assert.deepEqual([...local.keys()].sort(), expected);
    assert.deepEqual([...published.keys()].sort(), [".npmrc", ...expected].sort());
  });

  it("has npm scripts to run, test, develop, make manifests, build and make the image", () => {
    const pkg = JSON.parse(file(published, "package.json"));
    const cli = "node node_modules/@rudder/operator/cli/main.js";
    assert.equal(pkg.type, "module");
    assert.deepEqual(pkg.scripts, {
      start:
        "MALLOC_MMAP_THRESHOLD_=131072 MALLOC_ARENA_MAX=2 node --max-semi-space-size=2 main.ts",
      run: "MALLOC_MMAP_THRESHOLD_=131072 MALLOC_ARENA_MAX=2 node --max-semi-space-size=2 main.ts",
      test: "node --test",
      rudder: cli,
      dev: `${cli} dev --runtime node`,
      manifests: `${cli} manifests`,
      build: `${cli} build --runtime node`,
      image: `${cli} build --runtime node --image memcached-operator:0.1.0 ` +
        "--output dist/memcached-operator-image.tar",
      "image:push": `${cli} build --runtime node --image memcached-operator:0.1.0 --push`,
      "docker-build": "docker build -t memcached-operator:0.1.0 .",
    });
  });

  it("depends on the JSR package through npm, and on Bun to bundle the executable", () => {
    const pkg = JSON.parse(file(published, "package.json"));
    assert.deepEqual(pkg.dependencies, {
      "@rudder/operator": `npm:@jsr/rudder__operator@^${VERSION}`,
      "@logtape/logtape": `^${DEPENDENCY_VERSIONS["@logtape/logtape"]}`,
      ...Object.fromEntries(
        [
          "@opentelemetry/api",
          "@opentelemetry/context-async-hooks",
          "@opentelemetry/exporter-trace-otlp-http",
          "@opentelemetry/resources",
          "@opentelemetry/sdk-trace",
        ].map((
          name,
        ) => [name, `^${DEPENDENCY_VERSIONS[name as keyof typeof DEPENDENCY_VERSIONS]}`]),
      ),
      zod: `^${DEPENDENCY_VERSIONS.zod}`,
    });
    assert.deepEqual(pkg.devDependencies, { bun: NODE_PROJECT_BUN_VERSION });
    assert.equal(file(published, ".npmrc"), "@jsr:registry=https://npm.jsr.io\n");
    const own = JSON.parse(readFileSync(join(checkout, "package.json"), "utf8"));
    assert.equal(own.devDependencies.bun, NODE_PROJECT_BUN_VERSION, "the Bun Rudder is built with");
  });

  it("with --local runs the checkout's CLI and lists no dependencies", () => {
    const pkg = JSON.parse(file(local, "package.json"));
    assert.equal(pkg.scripts.build, `node ${checkout}/cli/main.ts build --runtime node`);
    assert.equal(pkg.dependencies, undefined);
    assert.equal(pkg.devDependencies, undefined);
    assert.match(file(local, "README.md"), /node_modules\/@rudder\/operator` links to it/);
  });

  it("shares its TypeScript with the Deno and Bun project", () => {
    const both = scaffold(MEMCACHED, DEPENDENCY_VERSIONS);
    for (
      const path of ["main.ts", "api/memcached.ts", "controllers/memcached_controller_test.ts"]
    ) {
      assert.equal(file(published, path), file(both, path), path);
    }
  });

  it("tells Node users to run npm, and builds the image with libatomic in the Dockerfile", () => {
    const readme = file(published, "README.md");
    assert.match(readme, /^npm test {14}# node --test/m);
    assert.match(readme, /^npm run build -- --image /m);
    assert.doesNotMatch(readme, /deno task/);
    assert.match(file(published, "Dockerfile"), /libatomic\.so\.1/);
  });

  it("writes the project and links the checkout, its zod, LogTape and OpenTelemetry into node_modules", async () => {
    const { code, err } = await runMain(
      ["init", "node-op", "--runtime", "node", "--local", checkout],
      scratch(),
    );
    assert.equal(code, 0, err);
    const dir = join(scratch(), "node-op");
    const rudder = join(dir, "node_modules", "@rudder", "operator");
    assert.ok(lstatSync(rudder).isSymbolicLink());
    assert.equal(readlinkSync(rudder), checkout);
    for (const name of ["zod", "@logtape/logtape", "@opentelemetry/sdk-trace"]) {
      assert.equal(
        realpathSync(join(dir, "node_modules", name)),
        realpathSync(join(checkout, "node_modules", name)),
        name,
      );
    }
    assert.equal(lstatSync(join(dir, "deno.json"), { throwIfNoEntry: false }), undefined);
    assert.match(err, /^ {2}npm test$/m);
  });

  it("refuses a runtime it does not know", async () => {
    const { code, err } = await runMain(["init", "x", "--runtime", "python"], scratch());
    assert.equal(code, 2);
    assert.match(err, /--runtime must be one of deno, bun, node \(got "python"\)/);
  });
});

describe("the runtimes", () => {
  it("are Deno, Bun and Node, and this process runs on one of them", () => {
    assert.deepEqual(RUNTIMES, ["deno", "bun", "node"]);
    const expected = "Deno" in globalThis ? "deno" : "Bun" in globalThis ? "bun" : "node";
    assert.equal(currentRuntime(), expected);
  });

  it("load a Deno and Bun project with Deno when rudder runs on Node, which reads no import map", () => {
    const both = join(scratch(), "both");
    const node = join(scratch(), "node-only");
    mkdirSync(both, { recursive: true });
    mkdirSync(node, { recursive: true });
    writeFileSync(join(both, "deno.json"), "{}");
    writeFileSync(join(both, "package.json"), "{}");
    writeFileSync(join(node, "package.json"), "{}");
    assert.equal(projectRuntime(both, "node"), "deno");
    assert.equal(projectRuntime(both, "bun"), "bun");
    assert.equal(projectRuntime(node, "node"), "node");
    assert.equal(projectRuntime(node, "deno"), "deno");
    assert.equal(buildRuntime(both), "deno");
    assert.equal(buildRuntime(node), "node", "a Node project builds a Node executable");
  });
});

const settings: ProjectSettings = {
  dir: "/work/widget-operator",
  name: "widget-operator",
  namespace: "widget-system",
  image: "widget-operator:latest",
  main: "main.ts",
  setup: "setup",
  api: ["api/widget.ts"],
  metricsBindAddress: ":8080",
  healthProbeBindAddress: ":8081",
  rbac: [],
  permissions: { apiServers: [], net: [], read: [], env: [] },
};

describe("a Node operator's settings", () => {
  it("are Deno's and two glibc arenas: a 2 MiB semi-space, a fixed mmap threshold, wherever Rudder runs it", () => {
    const env = { MALLOC_MMAP_THRESHOLD_: "131072", MALLOC_ARENA_MAX: "2" };
    assert.deepEqual(NODE_V8_FLAGS, ["--max-semi-space-size=2"]);
    assert.deepEqual(operatorEnv("node"), env);
    const run = runModuleCommand("node", "main.ts", {}, { operator: true });
    assert.deepEqual(run.args, ["--max-semi-space-size=2", "main.ts"]);
    assert.deepEqual(run.env, env);
    assert.deepEqual(runModuleCommand("node", "discover.ts", {}).args, ["discover.ts"]);
  });
});

describe("rudder build --runtime node", () => {
  it("bundles main.ts with bun build --target=node, minified with names kept, then runs node --build-sea", () => {
    const plan = buildPlan(settings, {
      runtime: "node",
      executable: "/usr/bin/node",
      bundler: "/usr/bin/bun",
    });
    const work = "/work/widget-operator/dist/.widget-operator.sea";
    assert.deepEqual(plan.before, [{
      command: "/usr/bin/bun",
      args: [
        "build",
        "--target=node",
        "--format=esm",
        "--minify-syntax",
        "--minify-whitespace",
        "--outfile",
        `${work}/main.mjs`,
        "main.ts",
      ],
    }]);
    assert.equal(plan.command, "/usr/bin/node");
    assert.deepEqual(plan.args, ["--build-sea", `${work}/sea-config.json`]);
    assert.equal(plan.output, "/work/widget-operator/dist/widget-operator");
    assert.deepEqual(JSON.parse(plan.files[`${work}/sea-config.json`]), {
      main: `${work}/main.mjs`,
      mainFormat: "module",
      output: "/work/widget-operator/dist/widget-operator",
      disableExperimentalSEAWarning: true,
      useCodeCache: true,
      execArgv: ["--max-semi-space-size=2"],
    });
    assert.deepEqual(
      nodeSeaConfig(`${work}/main.mjs`, plan.output),
      JSON.parse(plan.files[`${work}/sea-config.json`]),
    );
  });

  it("builds for this machine's platform, and refuses another", () => {
    const here = hostTarget();
    if (here) {
      const plan = buildPlan(settings, {
        runtime: "node",
        target: here,
        out: "bin/op",
        executable: "node",
        bundler: "bun",
      });
      assert.equal(plan.output, "/work/widget-operator/bin/op");
    }
    const other = here === "aarch64-apple-darwin"
      ? "x86_64-pc-windows-msvc"
      : "aarch64-apple-darwin";
    assert.throws(
      () =>
        buildPlan(settings, { runtime: "node", target: other, executable: "node", bundler: "bun" }),
      (err: Error) => {
        assert.equal(err.name, "UsageError");
        assert.match(err.message, /--runtime node builds for this machine only/);
        return true;
      },
    );
  });

  it("names the platforms as target triples", () => {
    assert.equal(hostTarget("linux", "x64"), "x86_64-unknown-linux-gnu");
    assert.equal(hostTarget("linux", "arm64"), "aarch64-unknown-linux-gnu");
    assert.equal(hostTarget("darwin", "arm64"), "aarch64-apple-darwin");
    assert.equal(hostTarget("freebsd", "x64"), undefined);
  });
});

describe("the image of a Node executable", () => {
  it("gets libatomic.so.1 from this machine, at Debian's path for the image's platform", () => {
    const root = join(scratch(), "root");
    mkdirSync(join(root, "lib", "x86_64-linux-gnu"), { recursive: true });
    writeFileSync(join(root, "lib", "x86_64-linux-gnu", "libatomic.so.1"), "ELF atomic");
    const found = nodeSharedLibrary({ os: "linux", architecture: "amd64" }, [root]);
    assert.equal(found.path, "usr/lib/x86_64-linux-gnu/libatomic.so.1");
    assert.equal(new TextDecoder().decode(found.data), "ELF atomic");
    assert.equal(found.mode, 0o644);
  });

  it("fails naming the package to install when this machine has no libatomic", () => {
    const empty = join(scratch(), "empty-root");
    mkdirSync(empty, { recursive: true });
    assert.throws(
      () => nodeSharedLibrary({ os: "linux", architecture: "arm64" }, [empty]),
      /needs libatomic\.so\.1, which distroless\/cc lacks.*apt-get install libatomic1/s,
    );
  });

  it("is one layer: the executable, and the library beside the base's own", () => {
    const layer = executableLayer("op", new TextEncoder().encode("sea"), 7, [{
      path: "usr/lib/x86_64-linux-gnu/libatomic.so.1",
      data: new TextEncoder().encode("lib"),
      mode: 0o644,
    }]);
    const records = readTar(new Uint8Array(gunzipSync(layer.blob)));
    assert.deepEqual(records.map(({ path, mode, uid, mtime }) => ({ path, mode, uid, mtime })), [
      { path: "op", mode: 0o755, uid: 0, mtime: 7 },
      { path: "usr/lib/x86_64-linux-gnu/libatomic.so.1", mode: 0o644, uid: 0, mtime: 7 },
    ]);
  });
});
