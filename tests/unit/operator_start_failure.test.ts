// An operator that cannot start says so in one line that names the problem and exits non-zero:
// no stack trace, no page of (bundled) source. The example operator's main, run as a process with
// a kubeconfig that cannot be read.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

const main = fileURLToPath(new URL("../../examples/example-operator/main.ts", import.meta.url));

function run(kubeconfig: string): Promise<{ code: number | null; stderr: string }> {
  const args = "Deno" in globalThis ? ["run", "-A", main] : [main];
  const child = spawn(process.execPath, args, {
    stdio: ["ignore", "ignore", "pipe"],
    env: {
      ...process.env,
      KUBECONFIG: kubeconfig,
      LEADER_ELECTION_NAMESPACE: "default",
      METRICS_BIND_ADDRESS: "127.0.0.1:0",
      HEALTH_PROBE_BIND_ADDRESS: "127.0.0.1:0",
    },
  });
  let stderr = "";
  child.stderr!.on("data", (chunk) => (stderr += chunk));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stderr })));
}

describe("an operator that cannot start", () => {
  it("prints one line naming the problem and the file, and exits non-zero", {
    timeout: 60_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "rudder-start-failure-"));
    try {
      const kubeconfig = join(dir, "broken-config.yaml");
      writeFileSync(kubeconfig, "apiVersion: v1\nkind: Config\nclusters: [\n");
      const { code, stderr } = await run(kubeconfig);
      assert.notEqual(code, 0);
      const lines = stderr.split("\n").filter((line) => line.trim() !== "");
      assert.equal(lines.length, 1, `one line, got:\n${stderr}`);
      assert.match(lines[0], /broken-config\.yaml/);
      assert.doesNotMatch(stderr, /^\s+at /m, "no stack frames");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
