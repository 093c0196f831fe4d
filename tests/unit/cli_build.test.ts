// `rudder build`: the command line chosen for each runtime and target, the narrow permissions
// deno compile gets, and the message when deno compile cannot get its runtime (denort).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import process from "node:process";
import {
  buildPlan,
  denoPermissionFlags,
  explainDenoCompileFailure,
  OPERATOR_ENV,
  resolveTarget,
  TARGETS,
} from "../../cli/build.ts";
import { BUN_ENV, DENO_ENV, type ProjectSettings, runModuleCommand } from "../../cli/project.ts";

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
  permissions: { apiServers: [], net: [], read: [], env: ["LOG_FORMAT"] },
};

/** What deno compile printed here, where dl.deno.land cannot be reached. */
const DOWNLOAD_FAILED = `Check main.ts
Compile main.ts to dist/widget-operator
Download https://dl.deno.land/release/v2.9.6/denort-x86_64-unknown-linux-gnu.zip
error: Writing deno compile executable to temporary file '/work/widget-operator/dist/widget-operator.tmp-ad40'

Caused by:
    0: Setting up base binary.
    1: error sending request for url (https://dl.deno.land/release/v2.9.6/denort-x86_64-unknown-linux-gnu.zip): client error (Connect): dns error: failed to lookup address information: Name or service not known
    2: client error (Connect)
    3: dns error
`;

/** What it printed with DENORT_BIN pointing nowhere. */
const DENORT_BIN_MISSING = `Compile main.ts to dist/widget-operator
error: Writing deno compile executable to temporary file '/work/widget-operator/dist/widget-operator.tmp-f60f'

Caused by:
    0: Could not find denort at '/opt/denort'
    1: No such file or directory (os error 2)
`;

describe("build targets", () => {
  it("maps Deno's target triples to Bun's names and back", () => {
    assert.deepEqual(resolveTarget("x86_64-unknown-linux-gnu"), {
      deno: "x86_64-unknown-linux-gnu",
      bun: "bun-linux-x64",
    });
    assert.deepEqual(resolveTarget("bun-darwin-arm64"), {
      deno: "aarch64-apple-darwin",
      bun: "bun-darwin-arm64",
    });
    for (const [deno, bun] of Object.entries(TARGETS)) {
      assert.deepEqual(resolveTarget(bun), { deno, bun });
    }
  });

  it("refuses an unknown target, listing the known ones", () => {
    assert.throws(() => resolveTarget("x86_64-unknown-linux-musl"), (err: Error) => {
      assert.equal(err.name, "UsageError");
      assert.match(err.message, /unknown --target "x86_64-unknown-linux-musl"; one of: x86_64/);
      return true;
    });
  });
});

describe("build with Bun", () => {
  it("runs bun build --compile with --outfile, and --target in Bun's spelling", () => {
    const plan = buildPlan(settings, {
      runtime: "bun",
      target: "aarch64-unknown-linux-gnu",
      executable: "/usr/bin/bun",
    });
    assert.equal(plan.command, "/usr/bin/bun");
    assert.deepEqual(plan.args, [
      "build",
      "--compile",
      "--bytecode",
      "--format=esm",
      "--target=bun-linux-arm64",
      "--outfile",
      "/work/widget-operator/dist/widget-operator",
      "main.ts",
    ]);
    assert.equal(plan.output, "/work/widget-operator/dist/widget-operator");
  });

  it("builds for this machine without --target, to the --out path given", () => {
    const plan = buildPlan(settings, { runtime: "bun", out: "bin/op", executable: "bun" });
    assert.deepEqual(plan.args, [
      "build",
      "--compile",
      "--bytecode",
      "--format=esm",
      "--outfile",
      "/work/widget-operator/bin/op",
      "main.ts",
    ]);
  });

  it("names a Windows executable .exe", () => {
    const plan = buildPlan(settings, {
      runtime: "bun",
      target: "bun-windows-x64",
      executable: "bun",
    });
    assert.equal(plan.output, "/work/widget-operator/dist/widget-operator.exe");
  });
});

describe("build with Deno", () => {
  it("runs deno compile with permissions, --target as a triple, --output, then main", () => {
    const plan = buildPlan(settings, {
      runtime: "deno",
      target: "bun-linux-x64",
      apiServers: ["10.96.0.1:443"],
      executable: "/usr/bin/deno",
    });
    assert.equal(plan.command, "/usr/bin/deno");
    assert.deepEqual(plan.args, [
      "compile",
      "--allow-net=0.0.0.0:8080,0.0.0.0:8081,10.96.0.1:443,127.0.0.1",
      "--allow-read=/var/run/secrets/kubernetes.io/serviceaccount",
      `--allow-env=${[...OPERATOR_ENV, "LOG_FORMAT"].sort().join(",")}`,
      "--allow-sys=homedir,hostname",
      "--v8-flags=--max-semi-space-size=2",
      "--target",
      "x86_64-unknown-linux-gnu",
      "--output",
      "/work/widget-operator/dist/widget-operator",
      "main.ts",
    ]);
    assert.deepEqual(plan.notes, []);
  });

  it("grants nothing broad: no -A, run, write, ffi, and no env or read without a list", () => {
    const { flags } = denoPermissionFlags(settings, { apiServers: ["10.96.0.1:443"] });
    for (const flag of flags) {
      assert.doesNotMatch(flag, /^(-A|--allow-all|--allow-run|--allow-write|--allow-ffi)/);
      assert.match(flag, /^--allow-(net|read|env|sys)=\S+$/, flag);
    }
  });

  it("reads the environment loadConfig and the generated main read", () => {
    const { flags } = denoPermissionFlags(settings, { apiServers: ["10.96.0.1:443"] });
    const env = flags.find((f) => f.startsWith("--allow-env="))!.slice(12).split(",");
    for (
      const name of [
        "KUBECONFIG",
        "KUBERNETES_SERVICE_HOST",
        "KUBERNETES_SERVICE_PORT",
        "LEADER_ELECTION_NAMESPACE",
        "METRICS_BIND_ADDRESS",
        "HEALTH_PROBE_BIND_ADDRESS",
        "LOG_FORMAT",
      ]
    ) {
      assert.ok(env.includes(name), name);
    }
  });

  it("adds the project's extra permissions and extra readable files, without duplicates", () => {
    const { flags } = denoPermissionFlags(
      {
        ...settings,
        metricsBindAddress: "127.0.0.1:9090",
        healthProbeBindAddress: "[::]:9091",
        permissions: {
          apiServers: ["api.example.com:6443"],
          net: ["hooks.example.com:443"],
          read: ["/etc/operator"],
          env: ["LOG_FORMAT", "TEAM"],
        },
      },
      { apiServers: ["api.example.com:6443"], read: ["/home/me/.kube/config"] },
    );
    assert.deepEqual(flags.slice(0, 2), [
      "--allow-net=127.0.0.1,127.0.0.1:9090,[::]:9091,api.example.com:6443,hooks.example.com:443",
      "--allow-read=/etc/operator,/home/me/.kube/config,/var/run/secrets/kubernetes.io/serviceaccount",
    ]);
    assert.match(flags[2], /,LOG_FORMAT,.*,TEAM$/);
  });

  it("leaves the network open, and says why, when no API server is known", () => {
    const { flags, notes } = denoPermissionFlags(settings);
    assert.equal(flags[0], "--allow-net");
    assert.match(notes[0], /network access is not limited to the API server/);
    assert.match(notes[0], /--api-server <host:port>/);
  });

  it("leaves a disabled server's address out", () => {
    const { flags } = denoPermissionFlags(
      { ...settings, metricsBindAddress: "0" },
      { apiServers: ["10.0.0.1:443"] },
    );
    assert.equal(flags[0], "--allow-net=0.0.0.0:8081,10.0.0.1:443,127.0.0.1");
  });
});

describe("a failed deno compile", () => {
  it("explains a failed denort download and suggests DENORT_BIN or --runtime bun", () => {
    const message = explainDenoCompileFailure(DOWNLOAD_FAILED, {}, "x86_64-unknown-linux-gnu")!;
    assert.match(message, /could not download denort/);
    assert.match(message, /dl\.deno\.land/);
    assert.match(message, /dns error: failed to lookup address information/);
    assert.match(message, /Set DENORT_BIN to a denort binary .* for x86_64-unknown-linux-gnu/);
    assert.match(message, /or build with --runtime bun/);
  });

  it("names DENORT_BIN when that is what failed", () => {
    const message = explainDenoCompileFailure(DENORT_BIN_MISSING, { DENORT_BIN: "/opt/denort" })!;
    assert.match(message, /could not use DENORT_BIN=\/opt\/denort as its runtime \(denort\)/);
    assert.match(message, /Could not find denort at '\/opt\/denort'/);
    assert.match(message, /--runtime bun/);
  });

  it("leaves other failures to the compiler's own output", () => {
    const typeError = "error: TS2322 [ERROR]: Type 'string' is not assignable to type 'number'.";
    assert.equal(explainDenoCompileFailure(typeError, {}), undefined);
  });
});

describe("running a module", () => {
  it("gives an operator Rudder's V8 flags and environment on Deno, its environment on Bun, and a helper module none", () => {
    const env = { PATH: process.env.PATH };
    const operator = runModuleCommand("deno", "main.ts", env, {
      config: "/p/deno.json",
      operator: true,
    });
    assert.deepEqual(operator.args, [
      "run",
      "-A",
      "--v8-flags=--max-semi-space-size=2",
      "--config",
      "/p/deno.json",
      "main.ts",
    ]);
    assert.deepEqual(operator.env, { MALLOC_MMAP_THRESHOLD_: "131072" });
    assert.deepEqual(operator.env, DENO_ENV);
    const helper = runModuleCommand("deno", "discover.ts", env, { config: "/p/deno.json" });
    assert.deepEqual(helper.args, ["run", "-A", "--config", "/p/deno.json", "discover.ts"]);
    assert.deepEqual(helper.env, {});
    const bun = runModuleCommand("bun", "main.ts", env, { operator: true });
    assert.deepEqual(bun.args, ["main.ts"]);
    assert.deepEqual(bun.env, { MIMALLOC_PURGE_DELAY: "0", BUN_JSC_useFTLJIT: "0" });
    assert.deepEqual(bun.env, BUN_ENV);
    assert.deepEqual(runModuleCommand("bun", "discover.ts", env).env, {});
  });
});
