// The exec credential plugin's deadline: a plugin that hangs is killed with everything it
// started, the error names the command and the timeout, concurrent callers share one run and a
// failed run is not cached.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { stringify } from "yaml";
import { KubeconfigError } from "../../lib/kube/config/errors.ts";
import { DEFAULT_EXEC_TIMEOUT_MS, ExecCredentialProvider } from "../../lib/kube/config/exec.ts";
import { loadKubeconfigFile } from "../../lib/kube/config/load.ts";
import { RestClient } from "../../lib/kube/rest.ts";

const V1 = "client.authentication.k8s.io/v1";
const TIMEOUT = { timeout: 20_000 };
let root = "";

before(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "rudder-exec-test-"));
}, TIMEOUT);

after(() => {
  fs.rmSync(root, { recursive: true, force: true });
}, TIMEOUT);

/** A plugin script in a fresh directory; `$dir` is that directory, `$count` the run number. */
function plugin(body: string): { dir: string; command: string } {
  const dir = fs.mkdtempSync(path.join(root, "plugin-"));
  const command = path.join(dir, "plugin.sh");
  fs.writeFileSync(
    command,
    `#!/bin/sh
dir="$(dirname "$0")"
count=$(( $(cat "$dir/count" 2>/dev/null || echo 0) + 1 ))
echo "$count" > "$dir/count"
${body}
`,
  );
  fs.chmodSync(command, 0o755);
  return { dir, command };
}

function runs(dir: string): number {
  const file = path.join(dir, "count");
  return fs.existsSync(file) ? Number(fs.readFileSync(file, "utf8").trim()) : 0;
}

const TOKEN_OUTPUT =
  `printf '{"apiVersion":"${V1}","kind":"ExecCredential","status":{"token":"tok-%s"}}' "$count"`;

function provider(command: string, timeoutMs?: number): ExecCredentialProvider {
  return new ExecCredentialProvider({
    command,
    apiVersion: V1,
    user: "deadline-user",
    origin: { file: "/kubeconfig", field: "users[0].user.exec" },
    timeoutMs,
  });
}

/** True while `pid` is a live (not zombie) process; Linux /proc, else signal 0. */
function alive(pid: number): boolean {
  const stat = `/proc/${pid}/stat`;
  if (fs.existsSync("/proc/self/stat")) {
    if (!fs.existsSync(stat)) return false;
    const state = fs.readFileSync(stat, "utf8").replace(/^.*\) /s, "")[0];
    return state !== "Z" && state !== "X";
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitUntil(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return check();
}

describe("exec plugin deadline", () => {
  it("defaults to 30 seconds", TIMEOUT, () => {
    assert.equal(DEFAULT_EXEC_TIMEOUT_MS, 30_000);
  });

  it(
    "kills a plugin that does not answer in time, with what it started, naming command and timeout",
    TIMEOUT,
    async () => {
      const { dir, command } = plugin(
        `sleep 30 &\necho $! > "$dir/child.pid"\necho $$ > "$dir/plugin.pid"\nwait`,
      );
      const started = Date.now();
      const err = await provider(command, 300).credentials().then(
        () => assert.fail("a hung plugin must fail"),
        (e: unknown) => e,
      );
      const elapsed = Date.now() - started;
      assert.ok(err instanceof KubeconfigError, String(err));
      assert.match(err.message, /did not answer within 300 ms and was killed/);
      assert.ok(err.message.includes(JSON.stringify(command)), err.message);
      assert.ok(err.message.includes('"deadline-user"'), err.message);
      assert.equal(err.field, "users[0].user.exec");
      assert.ok(elapsed < 5_000, `failed after ${elapsed} ms`);
      const pluginPid = Number(fs.readFileSync(path.join(dir, "plugin.pid"), "utf8"));
      const childPid = Number(fs.readFileSync(path.join(dir, "child.pid"), "utf8"));
      assert.ok(await waitUntil(() => !alive(pluginPid), 3_000), "the plugin was killed");
      assert.ok(await waitUntil(() => !alive(childPid), 3_000), "its child was killed");
    },
  );

  it("takes the timeout from loadKubeconfigFile's execTimeoutMs", TIMEOUT, async () => {
    const { dir } = plugin("sleep 30");
    const file = path.join(dir, "config");
    fs.writeFileSync(
      file,
      stringify({
        clusters: [{ name: "c", cluster: { server: "https://exec.test" } }],
        users: [{ name: "u", user: { exec: { apiVersion: V1, command: "./plugin.sh" } } }],
        contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
        "current-context": "c",
      }),
    );
    const config = await loadKubeconfigFile(file, { execTimeoutMs: 200 });
    await assert.rejects(config.auth.credentials(), /did not answer within 200 ms/);
  });

  it("shares one timed-out run between concurrent callers", TIMEOUT, async () => {
    const { dir, command } = plugin("sleep 30");
    const auth = provider(command, 300);
    const results = await Promise.allSettled([1, 2, 3].map(() => auth.credentials()));
    assert.deepEqual(results.map((r) => r.status), ["rejected", "rejected", "rejected"]);
    assert.equal(runs(dir), 1);
  });

  it("does not cache a failed run: the next call runs the plugin again", TIMEOUT, async () => {
    const { dir, command } = plugin(
      `if [ "$count" = 1 ]; then sleep 30; fi\nif [ "$count" = 2 ]; then exit 7; fi\n${TOKEN_OUTPUT}`,
    );
    const auth = provider(command, 300);
    await assert.rejects(auth.credentials(), /did not answer within 300 ms/);
    await assert.rejects(auth.credentials(), /exit code 7/);
    assert.deepEqual(await auth.credentials(), { headers: { Authorization: "Bearer tok-3" } });
    assert.deepEqual(await auth.credentials(), { headers: { Authorization: "Bearer tok-3" } });
    assert.equal(runs(dir), 3);
  });

  it("refuses a timeout that is not positive", TIMEOUT, () => {
    assert.throws(() => provider("/bin/true", 0), RangeError);
  });

  it(
    "names the plugin and its deadline when a request times out waiting for it",
    TIMEOUT,
    async () => {
      const secret = "rudderleak-exec-arg-7y6t";
      const { dir } = plugin("sleep 30");
      const file = path.join(dir, "config");
      fs.writeFileSync(
        file,
        stringify({
          // Never reached: the request waits for the plugin first.
          clusters: [{ name: "c", cluster: { server: "https://127.0.0.1:9" } }],
          users: [{
            name: "hung-user",
            user: {
              exec: {
                apiVersion: V1,
                command: "./plugin.sh",
                args: ["--password", secret],
                env: [{ name: "PLUGIN_SECRET", value: secret }],
              },
            },
          }],
          contexts: [{ name: "c", context: { cluster: "c", user: "hung-user" } }],
          "current-context": "c",
        }),
      );
      const config = await loadKubeconfigFile(file, { execTimeoutMs: 1_500 });
      const rest = new RestClient(config, { timeout: 300 });
      try {
        const started = Date.now();
        const err = await rest.request({ path: "/version" }).then(
          () => assert.fail("the request must time out"),
          (e: unknown) => e as Error,
        );
        assert.ok(Date.now() - started < 1_400, "the request's deadline, not the plugin's");
        assert.equal(err.name, "TimeoutError");
        assert.match(
          err.message,
          /^The request timed out after 300 ms while waiting for credentials from the exec plugin of user "hung-user" \(command ".*\/plugin\.sh"\), which had not answered after \d+ ms; the plugin is killed when it has run 1\.5 s \(its deadline\)$/,
        );
        assert.ok(!err.message.includes(secret), err.message);
        // The plugin itself still runs to its own deadline, and then is killed.
        await assert.rejects(config.auth.credentials(), /did not answer within 1\.5 s/);
      } finally {
        rest.close();
      }
    },
  );
});
