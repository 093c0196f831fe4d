// The example operator as a process, the way it runs in a pod: SIGTERM stops it gracefully
// (exit 0), and losing leadership makes it exit non-zero.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import process from "node:process";
import { Lease } from "../../lib/api/builtins.ts";
import { type Client, newClient } from "../../lib/client/client.ts";
import { Environment } from "../../lib/testing/envtest.ts";
import { Example } from "../../examples/example-operator/api/example.ts";
import { eventually } from "../support/eventually.ts";

const main = fileURLToPath(new URL("../../examples/example-operator/main.ts", import.meta.url));
const env = new Environment({ crds: [Example] });
let client: Client;

before(async () => {
  client = newClient(await env.start());
});

after(async () => {
  await env.stop();
});

/** Starts the operator on this runtime; resolves its exit code and collects its output. */
function operator(leaseNamespace: string) {
  const args = "Deno" in globalThis ? ["run", "-A", main] : [main];
  const child: ChildProcess = spawn(process.execPath, args, {
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      KUBECONFIG: env.kubeconfigPath,
      LEADER_ELECTION_NAMESPACE: leaseNamespace,
      METRICS_BIND_ADDRESS: "127.0.0.1:0",
      HEALTH_PROBE_BIND_ADDRESS: "127.0.0.1:0",
    },
  });
  let output = "";
  child.stdout!.on("data", (chunk) => (output += chunk));
  child.stderr!.on("data", (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, exited, output: () => output };
}

describe("the example operator process", () => {
  it("logs JSON lines, leads, and exits 0 after SIGTERM", async () => {
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "proc-a" } });
    const op = operator("proc-a");
    try {
      await eventually("it leads", () => op.output().includes("Elected leader"), 30_000);
      const line = op.output().split("\n").find((l) => l.includes("Elected leader"))!;
      const record = JSON.parse(line);
      assert.equal(record.level, "INFO");
      assert.deepEqual(record.logger, "rudder.manager");
      // process.kill, not child.kill: Deno's ChildProcess then reports the signal instead of
      // the exit code the child chose.
      process.kill(op.child.pid!, "SIGTERM");
      assert.equal(await op.exited, 0, op.output());
      assert.match(op.output(), /"SIGTERM\\?" received: stopping gracefully/);
    } finally {
      op.child.kill("SIGKILL");
    }
  });

  it("exits non-zero when another replica takes its lease", async () => {
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "proc-b" } });
    const op = operator("proc-b");
    try {
      await eventually("it leads", () => op.output().includes("Elected leader"), 30_000);
      const lease = await client.get(Lease, { namespace: "proc-b", name: "example-leader" });
      await client.update({ ...lease, spec: { ...lease.spec, holderIdentity: "another-replica" } });
      const code = await op.exited;
      assert.notEqual(code, 0);
      assert.match(op.output(), /leadership lost/);
    } finally {
      op.child.kill("SIGKILL");
    }
  });
});
