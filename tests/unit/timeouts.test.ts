// Timeouts for a busy machine. No test depends on a runtime's default timeout: Bun runs
// node:test's before and after hooks under bun test's default (5 s) whatever timeout they ask
// for, so the repository and the scaffold both preload a longer default (bunfig.toml). Here
// `bun test` runs a hook slower than 5 s with each set of settings, as a control plane starting
// on a busy machine is. And Environment's start and stop timeouts can be set from the
// environment as in controller-runtime.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { DEPENDENCY_VERSIONS } from "../../cli/init.ts";
import { runtimeExecutable } from "../../cli/project.ts";
import { scaffold } from "../../cli/templates.ts";
import { parseDuration } from "../../lib/testing/envtest.ts";

const CHECKOUT = fileURLToPath(new URL("../../", import.meta.url));
/** Longer than Bun's default of 5 s. */
const SLOW_HOOK_MS = 5_500;

const SLOW_TEST = `import { before, describe, it } from "node:test";
describe("a suite whose set-up is slow", () => {
  let ready = false;
  before(async () => {
    await new Promise((resolve) => setTimeout(resolve, ${SLOW_HOOK_MS}));
    ready = true;
  });
  it("runs after it", () => {
    if (!ready) throw new Error("the hook did not finish");
  });
});
`;

/** Runs `bun test` in `dir`; resolves its exit code and output. */
function bunTest(dir: string): Promise<{ code: number | null; output: string }> {
  const child = spawn(runtimeExecutable("bun", process.env), ["test"], {
    cwd: dir,
    env: { ...process.env, NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (chunk) => (output += chunk));
  child.stderr!.on("data", (chunk) => (output += chunk));
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, output }));
  });
}

/** A directory with `files` and the slow test. */
function project(root: string, name: string, files: Record<string, string>): string {
  const dir = join(root, name);
  for (const [path, content] of Object.entries({ ...files, "slow_test.ts": SLOW_TEST })) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  return dir;
}

describe("bun test settings", () => {
  let scratch: string;
  type Run = Promise<{ code: number | null; output: string }>;
  let runs: { bare: Run; repository: Run; scaffold: Run } | undefined;
  before(() => {
    scratch = mkdtempSync(join(tmpdir(), "rudder-bun-timeouts-"));
  }, { timeout: 10_000 });
  after(async () => {
    // A test that failed early leaves its siblings' runs going: the scratch goes after them.
    if (runs) await Promise.allSettled(Object.values(runs));
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }, { timeout: 60_000 });

  /**
   * The three `bun test` runs, started together on first use: each waits out Bun's real 5 s
   * hook timeout (no fake clock reaches into the child), so side by side they take 6 s, not 16.
   */
  function started(): { bare: Run; repository: Run; scaffold: Run } {
    if (runs) return runs;
    const preload = "tests/support/bun_test_setup.ts";
    const files = scaffold(
      { name: "slow-operator", group: "example.com", version: "v1", kind: "Slow" },
      DEPENDENCY_VERSIONS,
    );
    runs = {
      bare: bunTest(project(scratch, "bare", {})),
      repository: bunTest(project(scratch, "repository", {
        "bunfig.toml": readFileSync(join(CHECKOUT, "bunfig.toml"), "utf8"),
        [preload]: readFileSync(join(CHECKOUT, preload), "utf8"),
      })),
      scaffold: bunTest(project(scratch, "scaffold", {
        "bunfig.toml": files.get("bunfig.toml")!,
        "bun_test_setup.ts": files.get("bun_test_setup.ts")!,
      })),
    };
    for (const run of Object.values(runs)) run.catch(() => {}); // Awaited by its own test.
    return runs;
  }

  it("are needed: without them the hook is cut off at 5 s", { timeout: 60_000 }, async () => {
    const { code, output } = await started().bare;
    assert.notEqual(code, 0, output);
    assert.match(output, /timed out/);
  });

  it(
    "of the repository let a before hook run longer than Bun's 5 s",
    { timeout: 60_000 },
    async () => {
      const { code, output } = await started().repository;
      assert.equal(code, 0, output);
      assert.match(output, /\b1 pass\b/);
    },
  );

  it(
    "of the scaffold let a before hook run longer than Bun's 5 s",
    { timeout: 60_000 },
    async () => {
      const { code, output } = await started().scaffold;
      assert.equal(code, 0, output);
      assert.match(output, /\b1 pass\b/);
    },
  );
});

describe("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT and _STOP_TIMEOUT", () => {
  it("are Go durations or milliseconds", { timeout: 1_000 }, () => {
    assert.equal(parseDuration("90s"), 90_000);
    assert.equal(parseDuration("2m"), 120_000);
    assert.equal(parseDuration("1m30s"), 90_000);
    assert.equal(parseDuration("1.5s"), 1_500);
    assert.equal(parseDuration("250ms"), 250);
    assert.equal(parseDuration("1h"), 3_600_000);
    assert.equal(parseDuration("45000"), 45_000);
    for (const bad of ["", "soon", "10 s", "5x", "-1s", "1s garbage"]) {
      assert.equal(parseDuration(bad), undefined, bad);
    }
  });
});
