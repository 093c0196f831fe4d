import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import process from "node:process";
import { stringify } from "yaml";
import { KubeconfigError } from "../../lib/kube/config/errors.ts";
import { FileTokenSource } from "../../lib/kube/config/auth.ts";
import { ExecCredentialProvider } from "../../lib/kube/config/exec.ts";
import { inClusterConfig } from "../../lib/kube/config/in_cluster.ts";
import {
  kubeconfigFromObject,
  loadConfig,
  loadConfigFrom,
  loadKubeconfigFile,
} from "../../lib/kube/config/load.ts";
import { createCertificateAuthority } from "../../lib/testing/certs.ts";

/** Explicit, so no test depends on a runtime's default (Bun: 5 s). */
const TIMEOUT = { timeout: 30_000 };

const CA_PEM = "-----BEGIN CERTIFICATE-----\nY2EgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n";
// A real pair: loading checks that the certificate parses and the key is its own.
const { cert: CERT_PEM, key: KEY_PEM } = await (await createCertificateAuthority("config-test"))
  .issueClient({ commonName: "config-test-user" });
const V1 = "client.authentication.k8s.io/v1";

let root = "";
let counter = 0;

/** A fresh directory under the suite's temp dir. */
function freshDir(label: string): string {
  const dir = path.join(root, `${label}-${++counter}`);
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

function write(file: string, content: string, mode?: number): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, content);
  if (mode !== undefined) fs.chmodSync(file, mode);
  return file;
}

function writeYaml(file: string, value: unknown): string {
  return write(file, stringify(value));
}

function base64(text: string): string {
  return Buffer.from(text, "utf8").toString("base64");
}

/** A one-context kubeconfig whose cluster, user and context are all named `name`. */
function oneContext(options: {
  name?: string;
  cluster?: Record<string, unknown>;
  user?: Record<string, unknown>;
  context?: Record<string, unknown>;
} = {}): Record<string, unknown> {
  const name = options.name ?? "test";
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name, cluster: options.cluster ?? { server: "https://example.test:6443" } }],
    users: [{ name, user: options.user ?? {} }],
    contexts: [{ name, context: { cluster: name, user: name, ...options.context } }],
    "current-context": name,
  };
}

async function rejectsWith(
  promise: Promise<unknown>,
  expected: { file: string; field?: string; includes?: string[]; excludes?: string[] },
): Promise<KubeconfigError> {
  let caught: unknown;
  try {
    await promise;
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof KubeconfigError, `expected a KubeconfigError, got ${caught}`);
  assert.equal(caught.file, expected.file);
  assert.ok(caught.message.includes(expected.file), `message names the file: ${caught.message}`);
  if (expected.field !== undefined) {
    assert.equal(caught.field, expected.field);
    assert.ok(
      caught.message.includes(expected.field),
      `message names the field: ${caught.message}`,
    );
  }
  for (const text of expected.includes ?? []) {
    assert.ok(caught.message.includes(text), `message includes ${text}: ${caught.message}`);
  }
  for (const text of expected.excludes ?? []) {
    assert.ok(!caught.message.includes(text), `message leaks ${text}: ${caught.message}`);
  }
  return caught;
}

/**
 * Writes an exec plugin that counts its runs in `count`, records KUBERNETES_EXEC_INFO and
 * $PLUGIN_GREETING, then runs `output` (shell) to print its result.
 */
function writePlugin(dir: string, output: string): string {
  return write(
    path.join(dir, "plugin.sh"),
    `#!/bin/sh
dir="$(dirname "$0")"
count=$(( $(cat "$dir/count" 2>/dev/null || echo 0) + 1 ))
echo "$count" > "$dir/count"
printf '%s' "$KUBERNETES_EXEC_INFO" > "$dir/exec-info.json"
printf '%s' "$PLUGIN_GREETING" > "$dir/greeting"
${output}
`,
    0o755,
  );
}

function tokenOutput(apiVersion: string, expiration?: string): string {
  const expiry = expiration ? `,"expirationTimestamp":"${expiration}"` : "";
  return `printf '{"apiVersion":"${apiVersion}","kind":"ExecCredential",` +
    `"status":{"token":"exec-token-%s"${expiry}}}' "$count"`;
}

function runs(dir: string): number {
  const file = path.join(dir, "count");
  return fs.existsSync(file) ? Number(fs.readFileSync(file, "utf8").trim()) : 0;
}

function execInfo(dir: string): unknown {
  return JSON.parse(fs.readFileSync(path.join(dir, "exec-info.json"), "utf8"));
}

before(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "rudder-config-test-"));
}, TIMEOUT);

after(() => {
  fs.rmSync(root, { recursive: true, force: true });
}, TIMEOUT);

describe("kubeconfig fields", () => {
  it("reads embedded base64 data and the cluster's TLS settings", TIMEOUT, async () => {
    const file = writeYaml(
      path.join(freshDir("embedded"), "config"),
      oneContext({
        cluster: {
          server: "https://10.1.2.3:6443/",
          "certificate-authority-data": base64(CA_PEM),
          "tls-server-name": "kubernetes.default",
          "proxy-url": "http://proxy.test:3128",
          extensions: [{ name: "something", extension: { a: 1 } }],
        },
        user: {
          "client-certificate-data": base64(CERT_PEM),
          "client-key-data": base64(KEY_PEM),
        },
        context: { namespace: "team-a", extensions: [] },
      }),
    );
    const config = await loadKubeconfigFile(file);
    assert.equal(config.server, "https://10.1.2.3:6443");
    assert.equal(config.caData, CA_PEM);
    assert.equal(config.tlsServerName, "kubernetes.default");
    assert.equal(config.proxyURL, "http://proxy.test:3128");
    assert.equal(config.namespace, "team-a");
    assert.equal(config.contextName, "test");
    assert.equal(config.source, file);
    assert.equal(config.insecureSkipTLSVerify, undefined);
    assert.deepEqual(await config.auth.credentials(), {
      clientCertificate: { cert: CERT_PEM, key: KEY_PEM },
    });
  });

  it("resolves relative file paths against the kubeconfig's directory", TIMEOUT, async () => {
    const dir = freshDir("relative");
    write(path.join(dir, "pki", "ca.crt"), CA_PEM);
    write(path.join(dir, "pki", "client.crt"), CERT_PEM);
    write(path.join(dir, "pki", "client.key"), KEY_PEM);
    write(path.join(dir, "secrets", "token"), "file-token\n");
    const file = writeYaml(
      path.join(dir, "config"),
      oneContext({
        cluster: { server: "https://example.test", "certificate-authority": "pki/ca.crt" },
        user: {
          "client-certificate": "pki/client.crt",
          "client-key": "./pki/client.key",
          tokenFile: "secrets/token",
        },
      }),
    );
    assert.notEqual(process.cwd(), dir);
    const config = await loadKubeconfigFile(file);
    assert.equal(config.caData, CA_PEM);
    assert.deepEqual(await config.auth.credentials(), {
      headers: { Authorization: "Bearer file-token" },
      clientCertificate: { cert: CERT_PEM, key: KEY_PEM },
    });
  });

  it("prefers -data fields over file paths", TIMEOUT, async () => {
    const file = writeYaml(
      path.join(freshDir("data-wins"), "config"),
      oneContext({
        cluster: {
          server: "https://example.test",
          "certificate-authority": "does-not-exist.crt",
          "certificate-authority-data": base64(CA_PEM),
        },
      }),
    );
    assert.equal((await loadKubeconfigFile(file)).caData, CA_PEM);
  });

  it(
    "reads a kubeconfig written as JSON, and reports a broken one by position",
    TIMEOUT,
    async () => {
      const value = oneContext({
        cluster: { server: "https://127.0.0.1:6443", "insecure-skip-tls-verify": true },
        user: { token: "json-token" },
      });
      const dir = freshDir("json");
      const file = write(path.join(dir, "config"), JSON.stringify(value, null, 2));
      const config = await loadKubeconfigFile(file);
      assert.equal(config.server, "https://127.0.0.1:6443");
      assert.equal(config.insecureSkipTLSVerify, true);
      const broken = write(path.join(dir, "broken"), '{"clusters": [');
      await assert.rejects(loadKubeconfigFile(broken), /invalid YAML at line 1/);
    },
  );

  it("defaults the namespace to default and reads insecure-skip-tls-verify", TIMEOUT, async () => {
    const file = writeYaml(
      path.join(freshDir("defaults"), "config"),
      oneContext({
        cluster: { server: "http://127.0.0.1:8080", "insecure-skip-tls-verify": true },
      }),
    );
    const config = await loadKubeconfigFile(file);
    assert.equal(config.namespace, "default");
    assert.equal(config.insecureSkipTLSVerify, true);
    assert.equal(config.server, "http://127.0.0.1:8080");
  });

  it(
    "builds a config from an already parsed object, resolving paths against baseDir",
    TIMEOUT,
    async () => {
      const dir = freshDir("object");
      write(path.join(dir, "ca.crt"), CA_PEM);
      const config = await kubeconfigFromObject(
        oneContext({
          cluster: { server: "https://object.test/", "certificate-authority": "ca.crt" },
        }),
        { baseDir: dir, source: "secret default/kubeconfig" },
      );
      assert.equal(config.server, "https://object.test");
      assert.equal(config.caData, CA_PEM);
      assert.equal(config.source, "secret default/kubeconfig");
    },
  );

  it("uses the context option instead of current-context", TIMEOUT, async () => {
    const kubeconfig = oneContext({ name: "first" });
    (kubeconfig.clusters as unknown[]).push({
      name: "second",
      cluster: { server: "https://second.test" },
    });
    (kubeconfig.contexts as unknown[]).push({
      name: "second",
      context: { cluster: "second", namespace: "ns-2" },
    });
    const file = writeYaml(path.join(freshDir("context-option"), "config"), kubeconfig);
    assert.equal((await loadKubeconfigFile(file)).server, "https://example.test:6443");
    const chosen = await loadKubeconfigFile(file, { context: "second" });
    assert.equal(chosen.server, "https://second.test");
    assert.equal(chosen.namespace, "ns-2");
    assert.equal(chosen.contextName, "second");
    assert.deepEqual(await chosen.auth.credentials(), {});
    await rejectsWith(loadKubeconfigFile(file, { context: "third" }), {
      file,
      includes: ['"third"', "context option", '"first", "second"'],
    });
  });
});

describe("merging $KUBECONFIG files", () => {
  let first = "";
  let second = "";
  let third = "";
  let secondDir = "";
  let home = "";

  before(() => {
    first = writeYaml(path.join(freshDir("merge-first"), "config"), {
      clusters: [{ name: "shared", cluster: { server: "https://first.test" } }],
      contexts: [{ name: "work", context: { cluster: "shared", user: "me", namespace: "first" } }],
    });
    secondDir = freshDir("merge-second");
    write(path.join(secondDir, "token"), "second-token");
    second = writeYaml(path.join(secondDir, "config"), {
      clusters: [{ name: "shared", cluster: { server: "https://second.test" } }],
      users: [{ name: "me", user: { tokenFile: "token" } }],
      contexts: [
        { name: "work", context: { cluster: "shared", user: "me", namespace: "second" } },
        { name: "play", context: { cluster: "shared", namespace: "play" } },
      ],
      "current-context": "work",
    });
    third = writeYaml(path.join(freshDir("merge-third"), "config"), {
      users: [{ name: "me", user: { token: "third-token" } }],
      "current-context": "play",
    });
    home = freshDir("merge-home");
  }, TIMEOUT);

  it(
    "lets the first file that defines a name win and takes current-context from the first setter",
    TIMEOUT,
    async () => {
      const config = await loadKubeconfigFile([first, second, third]);
      assert.equal(config.contextName, "work");
      assert.equal(config.server, "https://first.test");
      assert.equal(config.namespace, "first");
      // The user comes from the second file, its tokenFile resolved against that file's directory.
      assert.deepEqual(await config.auth.credentials(), {
        headers: { Authorization: "Bearer second-token" },
      });
      assert.equal(config.source, `${first}, ${second}, ${third}`);
    },
  );

  it("skips files of the list that do not exist", TIMEOUT, async () => {
    const missing = path.join(root, "missing", "config");
    const env = { KUBECONFIG: [missing, third, second].join(path.delimiter) };
    const config = await loadConfigFrom({ env, homeDir: home });
    assert.equal(config.contextName, "play");
    assert.equal(config.server, "https://second.test");
    assert.equal(config.source, `${third}, ${second}`);
  });

  it("fails when no file of the list exists, listing them", TIMEOUT, async () => {
    const a = path.join(root, "nope-a");
    const b = path.join(root, "nope-b");
    const err = await rejectsWith(
      loadConfigFrom({ env: { KUBECONFIG: `${a}${path.delimiter}${b}` }, homeDir: home }),
      { file: `${a}, ${b}`, includes: [a, b] },
    );
    assert.match(err.message, /none of the kubeconfig files exist/);
  });

  it("reads process.env.KUBECONFIG in loadConfig", TIMEOUT, async () => {
    const saved = process.env.KUBECONFIG;
    process.env.KUBECONFIG = [second, first].join(path.delimiter);
    try {
      const config = await loadConfig();
      assert.equal(config.server, "https://second.test");
      assert.equal(config.namespace, "second");
    } finally {
      if (saved === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = saved;
    }
  });
});

describe("static credentials", () => {
  it("sends a token as a bearer token and does not retry it after a 401", TIMEOUT, async () => {
    const config = await kubeconfigFromObject(oneContext({ user: { token: "static-token" } }));
    assert.deepEqual(await config.auth.credentials(), {
      headers: { Authorization: "Bearer static-token" },
    });
    assert.equal(await config.auth.invalidate?.(), false);
  });

  it("prefers token over tokenFile", TIMEOUT, async () => {
    const config = await kubeconfigFromObject(
      oneContext({ user: { token: "literal", tokenFile: "/nonexistent/token" } }),
    );
    assert.deepEqual(await config.auth.credentials(), {
      headers: { Authorization: "Bearer literal" },
    });
  });

  it("sends username and password as basic auth", TIMEOUT, async () => {
    const config = await kubeconfigFromObject(
      oneContext({ user: { username: "admin", password: "pä55:word" } }),
    );
    const expected = Buffer.from("admin:pä55:word", "utf8").toString("base64");
    assert.deepEqual(await config.auth.credentials(), {
      headers: { Authorization: `Basic ${expected}` },
    });
  });

  it("sends both a client certificate and a token", TIMEOUT, async () => {
    const config = await kubeconfigFromObject(
      oneContext({
        user: {
          token: "both-token",
          "client-certificate-data": base64(CERT_PEM),
          "client-key-data": base64(KEY_PEM),
        },
      }),
    );
    assert.deepEqual(await config.auth.credentials(), {
      headers: { Authorization: "Bearer both-token" },
      clientCertificate: { cert: CERT_PEM, key: KEY_PEM },
    });
  });

  it("returns no credentials for a context without a user", TIMEOUT, async () => {
    const config = await kubeconfigFromObject({
      clusters: [{ name: "c", cluster: { server: "https://anon.test" } }],
      contexts: [{ name: "anon", context: { cluster: "c" } }],
      "current-context": "anon",
    });
    assert.deepEqual(await config.auth.credentials(), {});
  });

  it(
    "hands out copies, so a caller cannot change the credentials of the next one",
    TIMEOUT,
    async () => {
      const config = await kubeconfigFromObject(oneContext({ user: { token: "stable" } }));
      const first = await config.auth.credentials();
      first.headers!.Authorization = "tampered";
      assert.deepEqual(await config.auth.credentials(), {
        headers: { Authorization: "Bearer stable" },
      });
    },
  );
});

describe("token files", () => {
  it(
    "re-reads a rotated token file once the cached token is older than maxAge",
    TIMEOUT,
    async () => {
      const file = write(path.join(freshDir("rotate"), "token"), "  token-one\n");
      let now = 1_000_000;
      const source = new FileTokenSource({ path: file, maxAgeMs: 500, now: () => now });
      assert.equal(await source.token(), "token-one");
      write(file, "token-two\n");
      now += 499;
      assert.equal(await source.token(), "token-one");
      now += 1;
      assert.equal(await source.token(), "token-two");
      assert.deepEqual(await source.credentials(), {
        headers: { Authorization: "Bearer token-two" },
      });
    },
  );

  it("defaults maxAge to one minute", TIMEOUT, () => {
    assert.equal(new FileTokenSource({ path: "/x" }).maxAgeMs, 60_000);
  });

  it("re-reads at once after invalidate", TIMEOUT, async () => {
    const file = write(path.join(freshDir("invalidate"), "token"), "before");
    const source = new FileTokenSource({ path: file, now: () => 0 });
    assert.equal(await source.token(), "before");
    write(file, "after");
    assert.equal(await source.token(), "before");
    assert.equal(await source.invalidate(), true);
    assert.equal(await source.token(), "after");
  });

  it("keeps the last good token when a re-read fails", TIMEOUT, async () => {
    const file = write(path.join(freshDir("keep"), "token"), "good");
    let now = 0;
    const source = new FileTokenSource({ path: file, maxAgeMs: 10, now: () => now });
    assert.equal(await source.token(), "good");
    fs.rmSync(file);
    now = 100;
    assert.equal(await source.token(), "good");
  });

  it("rejects an empty token file, naming it", TIMEOUT, async () => {
    const file = write(path.join(freshDir("empty"), "token"), " \n");
    await rejectsWith(new FileTokenSource({ path: file }).token(), {
      file,
      includes: ["is empty"],
    });
  });

  it("rotates a kubeconfig tokenFile on the injected clock", TIMEOUT, async () => {
    const dir = freshDir("kubeconfig-rotate");
    const tokenFile = write(path.join(dir, "token"), "v1");
    const file = writeYaml(path.join(dir, "config"), oneContext({ user: { tokenFile: "token" } }));
    let now = 0;
    const config = await loadConfigFrom(
      { env: {}, homeDir: dir, now: () => now },
      { kubeconfig: file },
    );
    write(tokenFile, "v2");
    assert.deepEqual(await config.auth.credentials(), { headers: { Authorization: "Bearer v1" } });
    now = 60_000;
    assert.deepEqual(await config.auth.credentials(), { headers: { Authorization: "Bearer v2" } });
    write(tokenFile, "v3");
    assert.equal(await config.auth.invalidate?.(), true);
    assert.deepEqual(await config.auth.credentials(), { headers: { Authorization: "Bearer v3" } });
  });
});

describe("exec credential plugins", () => {
  function execConfig(dir: string, exec: Record<string, unknown>, cluster = {}): string {
    return writeYaml(
      path.join(dir, "config"),
      oneContext({
        name: "exec-user",
        cluster: { server: "https://exec.test", ...cluster },
        user: { exec: { apiVersion: V1, command: "./plugin.sh", ...exec } },
      }),
    );
  }

  it("runs the plugin once and caches its token until it expires", TIMEOUT, async () => {
    const dir = freshDir("exec-cache");
    writePlugin(dir, tokenOutput(V1, new Date(Date.now() + 3_600_000).toISOString()));
    const config = await loadKubeconfigFile(execConfig(dir, {}));
    assert.equal(runs(dir), 0, "the plugin runs on first use, not on load");
    const expected = { headers: { Authorization: "Bearer exec-token-1" } };
    assert.deepEqual(await config.auth.credentials(), expected);
    assert.deepEqual(await config.auth.credentials(), expected);
    assert.equal(runs(dir), 1);
  });

  it("runs the plugin again once the token is about to expire", TIMEOUT, async () => {
    const dir = freshDir("exec-expiry");
    const plugin = writePlugin(dir, tokenOutput(V1, "2030-01-01T00:00:00Z"));
    const expiresAt = Date.parse("2030-01-01T00:00:00Z");
    let now = expiresAt - 60_000;
    const provider = new ExecCredentialProvider({
      command: plugin,
      apiVersion: V1,
      user: "u",
      origin: { file: "f", field: "users[0].user.exec" },
      expirySkewMs: 10_000,
      now: () => now,
    });
    assert.deepEqual(await provider.credentials(), {
      headers: { Authorization: "Bearer exec-token-1" },
    });
    now = expiresAt - 10_001;
    await provider.credentials();
    assert.equal(runs(dir), 1);
    now = expiresAt - 10_000;
    assert.deepEqual(await provider.credentials(), {
      headers: { Authorization: "Bearer exec-token-2" },
    });
    assert.equal(runs(dir), 2);
  });

  it(
    "caches a token without expiry for the life of the process, until invalidated",
    TIMEOUT,
    async () => {
      const dir = freshDir("exec-forever");
      const plugin = writePlugin(dir, tokenOutput(V1));
      let now = 0;
      const provider = new ExecCredentialProvider({
        command: plugin,
        apiVersion: V1,
        user: "u",
        origin: { file: "f", field: "users[0].user.exec" },
        now: () => now,
      });
      await provider.credentials();
      now = 365 * 24 * 3_600_000;
      await provider.credentials();
      assert.equal(runs(dir), 1);
      assert.equal(await provider.invalidate(), true);
      assert.deepEqual(await provider.credentials(), {
        headers: { Authorization: "Bearer exec-token-2" },
      });
      assert.equal(runs(dir), 2);
    },
  );

  it("shares one run between concurrent callers", TIMEOUT, async () => {
    const dir = freshDir("exec-concurrent");
    writePlugin(dir, `sleep 0.2\n${tokenOutput(V1)}`);
    const config = await loadKubeconfigFile(execConfig(dir, {}));
    const all = await Promise.all([1, 2, 3, 4, 5].map(() => config.auth.credentials()));
    assert.equal(runs(dir), 1);
    for (const credentials of all) {
      assert.deepEqual(credentials, { headers: { Authorization: "Bearer exec-token-1" } });
    }
  });

  it(
    "lets one caller give up on a shared run without cancelling it for the others",
    TIMEOUT,
    async () => {
      const dir = freshDir("exec-abort");
      writePlugin(dir, `sleep 0.2\n${tokenOutput(V1)}`);
      const config = await loadKubeconfigFile(execConfig(dir, {}));
      const controller = new AbortController();
      const impatient = config.auth.credentials(controller.signal);
      const patient = config.auth.credentials();
      controller.abort(new Error("gave up"));
      await assert.rejects(impatient, /gave up/);
      assert.deepEqual(await patient, { headers: { Authorization: "Bearer exec-token-1" } });
      assert.equal(runs(dir), 1);
      await config.auth.invalidate?.();
      const aborted = AbortSignal.abort(new Error("already aborted"));
      await assert.rejects(config.auth.credentials(aborted), /already aborted/);
      assert.equal(runs(dir), 1, "an aborted caller starts no run");
    },
  );

  it(
    "passes args, env entries and KUBERNETES_EXEC_INFO without cluster info by default",
    TIMEOUT,
    async () => {
      const dir = freshDir("exec-env");
      writePlugin(dir, `printf '%s' "$*" > "$dir/args"\n${tokenOutput(V1)}`);
      const config = await loadKubeconfigFile(
        execConfig(dir, {
          args: ["get-token", "--cluster", "a b"],
          env: [{ name: "PLUGIN_GREETING", value: "hello from kubeconfig" }],
        }),
      );
      await config.auth.credentials();
      assert.equal(fs.readFileSync(path.join(dir, "greeting"), "utf8"), "hello from kubeconfig");
      assert.equal(fs.readFileSync(path.join(dir, "args"), "utf8"), "get-token --cluster a b");
      assert.deepEqual(execInfo(dir), {
        apiVersion: V1,
        kind: "ExecCredential",
        spec: { interactive: false },
      });
    },
  );

  it("passes the cluster when provideClusterInfo is set", TIMEOUT, async () => {
    const dir = freshDir("exec-cluster");
    const beta = "client.authentication.k8s.io/v1beta1";
    writePlugin(dir, tokenOutput(beta));
    const config = await loadKubeconfigFile(
      execConfig(dir, { apiVersion: beta, provideClusterInfo: true }, {
        "certificate-authority-data": base64(CA_PEM),
        "tls-server-name": "api.internal",
        extensions: [
          { name: "client.authentication.k8s.io/exec", extension: { audience: "prod" } },
          { name: "other", extension: { ignored: true } },
        ],
      }),
    );
    assert.deepEqual(await config.auth.credentials(), {
      headers: { Authorization: "Bearer exec-token-1" },
    });
    assert.deepEqual(execInfo(dir), {
      apiVersion: beta,
      kind: "ExecCredential",
      spec: {
        interactive: false,
        cluster: {
          server: "https://exec.test",
          "certificate-authority-data": base64(CA_PEM),
          "tls-server-name": "api.internal",
          config: { audience: "prod" },
        },
      },
    });
  });

  it("uses a client certificate the plugin prints", TIMEOUT, async () => {
    const dir = freshDir("exec-cert");
    const credential = JSON.stringify({
      apiVersion: V1,
      kind: "ExecCredential",
      status: { clientCertificateData: CERT_PEM, clientKeyData: KEY_PEM },
    });
    write(path.join(dir, "credential.json"), credential);
    writePlugin(dir, `cat "$dir/credential.json"`);
    const config = await loadKubeconfigFile(execConfig(dir, {}));
    assert.deepEqual(await config.auth.credentials(), {
      clientCertificate: { cert: CERT_PEM, key: KEY_PEM },
    });
  });

  it(
    "reports a failing plugin with its stderr, never its stdout, and the install hint",
    TIMEOUT,
    async () => {
      const dir = freshDir("exec-fail");
      writePlugin(
        dir,
        `echo '{"status":{"token":"STDOUT-SECRET"}}'\necho 'noise' >&2\necho 'login expired' >&2\nexit 3`,
      );
      const file = execConfig(dir, { installHint: "Install it with: brew install plugin" });
      const config = await loadKubeconfigFile(file);
      await rejectsWith(config.auth.credentials(), {
        file,
        field: "users[0].user.exec",
        includes: [
          '"exec-user"',
          path.join(dir, "plugin.sh"),
          "exit code 3",
          "login expired",
          "brew install plugin",
        ],
        excludes: ["STDOUT-SECRET"],
      });
    },
  );

  it(
    "reports output that is not JSON or not an ExecCredential of the same apiVersion",
    TIMEOUT,
    async () => {
      const cases: [string, string][] = [
        [`echo 'token: NOT-JSON-SECRET'`, "not JSON"],
        [tokenOutput("client.authentication.k8s.io/v1beta1"), "expected client.authentication"],
        [`echo '{"apiVersion":"${V1}","kind":"Secret","status":{"token":"x"}}'`, "kind"],
        [`echo '{"apiVersion":"${V1}","kind":"ExecCredential","status":{}}'`, "neither"],
      ];
      for (const [output, reason] of cases) {
        const dir = freshDir("exec-bad-output");
        writePlugin(dir, output);
        const file = execConfig(dir, {});
        const config = await loadKubeconfigFile(file);
        await rejectsWith(config.auth.credentials(), {
          file,
          field: "users[0].user.exec",
          includes: [reason, '"exec-user"'],
          excludes: ["NOT-JSON-SECRET", "exec-token"],
        });
      }
    },
  );

  it("names the install hint when the command does not exist", TIMEOUT, async () => {
    const dir = freshDir("exec-missing");
    const file = execConfig(dir, {
      command: "rudder-no-such-plugin",
      installHint: "see https://example.test/install",
    });
    const config = await loadKubeconfigFile(file);
    await rejectsWith(config.auth.credentials(), {
      file,
      field: "users[0].user.exec",
      includes: ["rudder-no-such-plugin", "command not found", "https://example.test/install"],
    });
  });

  it("refuses plugins that must run interactively", TIMEOUT, async () => {
    const dir = freshDir("exec-interactive");
    const file = execConfig(dir, { interactiveMode: "Always" });
    await rejectsWith(loadKubeconfigFile(file), {
      file,
      field: "users[0].user.exec.interactiveMode",
      includes: ['"exec-user"'],
    });
  });

  it("refuses unsupported exec apiVersions", TIMEOUT, async () => {
    const dir = freshDir("exec-alpha");
    const file = execConfig(dir, { apiVersion: "client.authentication.k8s.io/v1alpha1" });
    await rejectsWith(loadKubeconfigFile(file), {
      file,
      field: "users[0].user.exec.apiVersion",
      includes: ["v1alpha1"],
    });
  });
});

describe("in-cluster config", () => {
  function serviceAccount(files: Record<string, string>): string {
    const dir = freshDir("serviceaccount");
    for (const [name, content] of Object.entries(files)) write(path.join(dir, name), content);
    return dir;
  }
  const env = { KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" };

  it("reads the service account's token, CA and namespace", TIMEOUT, async () => {
    const dir = serviceAccount({ token: "sa-token\n", "ca.crt": CA_PEM, namespace: "operators\n" });
    const config = await inClusterConfig({ serviceAccountDir: dir, env });
    assert.equal(config.server, "https://10.96.0.1:443");
    assert.equal(config.caData, CA_PEM);
    assert.equal(config.namespace, "operators");
    assert.equal(config.source, "in-cluster");
    assert.equal(config.contextName, undefined);
    assert.deepEqual(await config.auth.credentials(), {
      headers: { Authorization: "Bearer sa-token" },
    });
  });

  it("brackets an IPv6 host and defaults the namespace", TIMEOUT, async () => {
    const dir = serviceAccount({ token: "t", "ca.crt": CA_PEM });
    const config = await inClusterConfig({
      serviceAccountDir: dir,
      env: { KUBERNETES_SERVICE_HOST: "fd00::1", KUBERNETES_SERVICE_PORT: "6443" },
    });
    assert.equal(config.server, "https://[fd00::1]:6443");
    assert.equal(config.namespace, "default");
  });

  it("re-reads the rotated token within a minute and on invalidate", TIMEOUT, async () => {
    const dir = serviceAccount({ token: "first", "ca.crt": CA_PEM });
    let now = 0;
    const config = await loadConfigFrom({
      env,
      serviceAccountDir: dir,
      homeDir: freshDir("no-home"),
      now: () => now,
    });
    assert.equal(config.source, "in-cluster");
    write(path.join(dir, "token"), "second");
    now = 59_999;
    assert.deepEqual(await config.auth.credentials(), {
      headers: { Authorization: "Bearer first" },
    });
    now = 60_000;
    assert.deepEqual(await config.auth.credentials(), {
      headers: { Authorization: "Bearer second" },
    });
    write(path.join(dir, "token"), "third");
    assert.equal(await config.auth.invalidate?.(), true);
    assert.deepEqual(await config.auth.credentials(), {
      headers: { Authorization: "Bearer third" },
    });
  });

  it("fails without a token file, naming it", TIMEOUT, async () => {
    const dir = serviceAccount({ "ca.crt": CA_PEM });
    await rejectsWith(inClusterConfig({ serviceAccountDir: dir, env }), {
      file: path.join(dir, "token"),
      includes: ["in-cluster"],
    });
  });
});

describe("kubeconfig errors", () => {
  function configFile(value: unknown): string {
    return writeYaml(path.join(freshDir("errors"), "config"), value);
  }

  it("names the file and field of a value of the wrong type", TIMEOUT, async () => {
    const file = configFile(oneContext({ user: { token: 42 } }));
    const err = await rejectsWith(loadKubeconfigFile(file), {
      file,
      field: "users[0].user.token",
    });
    assert.equal(
      err.message,
      `kubeconfig ${file}: users[0].user.token: expected a string, got number`,
    );
  });

  it("checks types in entries the selected context does not use", TIMEOUT, async () => {
    const kubeconfig = oneContext();
    (kubeconfig.clusters as unknown[]).push({
      name: "other",
      cluster: { server: "https://o", "insecure-skip-tls-verify": "yes" },
    });
    const file = configFile(kubeconfig);
    await rejectsWith(loadKubeconfigFile(file), {
      file,
      field: "clusters[1].cluster.insecure-skip-tls-verify",
      includes: ["expected a boolean, got string"],
    });
  });

  it("names the file and line of invalid YAML without quoting it", TIMEOUT, async () => {
    const file = write(
      path.join(freshDir("bad-yaml"), "config"),
      "apiVersion: v1\nusers:\n- name: a\n  user:\n    token: YAML-SECRET\n   oops: [\n",
    );
    await rejectsWith(loadKubeconfigFile(file), {
      file,
      includes: ["invalid YAML", "line 6"],
      excludes: ["YAML-SECRET"],
    });
  });

  it("rejects a top level that is not a mapping", TIMEOUT, async () => {
    const file = write(path.join(freshDir("list"), "config"), "- a\n- b\n");
    await rejectsWith(loadKubeconfigFile(file), { file, includes: ["got array"] });
  });

  it("rejects a cluster without a server", TIMEOUT, async () => {
    const file = configFile(oneContext({ cluster: { "tls-server-name": "x" } }));
    await rejectsWith(loadKubeconfigFile(file), {
      file,
      field: "clusters[0].cluster.server",
      includes: ['"test"'],
    });
  });

  it("rejects a server that is not an http(s) URL", TIMEOUT, async () => {
    const file = configFile(oneContext({ cluster: { server: "localhost:6443" } }));
    await rejectsWith(loadKubeconfigFile(file), {
      file,
      field: "clusters[0].cluster.server",
      includes: ["localhost:6443"],
    });
  });

  it("rejects a current-context that names no context", TIMEOUT, async () => {
    const file = configFile({ ...oneContext(), "current-context": "ghost" });
    await rejectsWith(loadKubeconfigFile(file), {
      file,
      field: "current-context",
      includes: ['"ghost"', '"test"'],
    });
  });

  it("names the file that set current-context when merging", TIMEOUT, async () => {
    const definitions = configFile(oneContext());
    const setter = configFile({ "current-context": "ghost" });
    await rejectsWith(loadKubeconfigFile([setter, definitions]), {
      file: setter,
      field: "current-context",
    });
  });

  it("rejects a context whose cluster or user is not defined", TIMEOUT, async () => {
    const missingCluster = configFile(oneContext({ context: { cluster: "nowhere" } }));
    await rejectsWith(loadKubeconfigFile(missingCluster), {
      file: missingCluster,
      field: "contexts[0].context.cluster",
      includes: ['"nowhere"'],
    });
    const missingUser = configFile(oneContext({ context: { user: "nobody" } }));
    await rejectsWith(loadKubeconfigFile(missingUser), {
      file: missingUser,
      field: "contexts[0].context.user",
      includes: ['"nobody"'],
    });
  });

  it("requires a current-context or a context option", TIMEOUT, async () => {
    const kubeconfig = oneContext();
    delete kubeconfig["current-context"];
    const file = configFile(kubeconfig);
    await rejectsWith(loadKubeconfigFile(file), {
      file,
      field: "current-context",
      includes: ["context option"],
    });
    assert.equal((await loadKubeconfigFile(file, { context: "test" })).contextName, "test");
  });

  it("names the field that referenced an unreadable file", TIMEOUT, async () => {
    const file = configFile(
      oneContext({ user: { "client-certificate": "missing.crt", "client-key": "missing.key" } }),
    );
    await rejectsWith(loadKubeconfigFile(file), {
      file,
      field: "users[0].user.client-certificate",
      includes: [path.join(path.dirname(file), "missing.crt"), "no such file"],
    });
    const caFile = configFile(
      oneContext({ cluster: { server: "https://x", "certificate-authority": "/nonexistent/ca" } }),
    );
    await rejectsWith(loadKubeconfigFile(caFile), {
      file: caFile,
      field: "clusters[0].cluster.certificate-authority",
      includes: ["/nonexistent/ca"],
    });
  });

  it("rejects invalid base64 in -data fields without echoing it", TIMEOUT, async () => {
    const caFile = configFile(
      oneContext({ cluster: { server: "https://x", "certificate-authority-data": "not base64!" } }),
    );
    await rejectsWith(loadKubeconfigFile(caFile), {
      file: caFile,
      field: "clusters[0].cluster.certificate-authority-data",
      includes: ["invalid base64"],
    });
    const keyFile = configFile(
      oneContext({
        user: { "client-certificate-data": base64(CERT_PEM), "client-key-data": "KEY-SECRET%%" },
      }),
    );
    await rejectsWith(loadKubeconfigFile(keyFile), {
      file: keyFile,
      field: "users[0].user.client-key-data",
      excludes: ["KEY-SECRET"],
    });
  });

  it("rejects -data that decodes to something other than PEM", TIMEOUT, async () => {
    const file = configFile(
      oneContext({
        cluster: { server: "https://x", "certificate-authority-data": base64("DER?") },
      }),
    );
    await rejectsWith(loadKubeconfigFile(file), {
      file,
      field: "clusters[0].cluster.certificate-authority-data",
      includes: ["PEM"],
    });
  });

  it("requires both a client certificate and a key, naming the user", TIMEOUT, async () => {
    const file = configFile(oneContext({ user: { "client-certificate-data": base64(CERT_PEM) } }));
    await rejectsWith(loadKubeconfigFile(file), {
      file,
      field: "users[0].user.client-key",
      includes: ['"test"'],
    });
    const keyOnly = configFile(oneContext({ user: { "client-key-data": base64(KEY_PEM) } }));
    await rejectsWith(loadKubeconfigFile(keyOnly), {
      file: keyOnly,
      field: "users[0].user.client-certificate",
      excludes: [KEY_PEM.split("\n")[1]],
    });
  });

  it("rejects legacy auth-provider users, naming the user", TIMEOUT, async () => {
    const file = configFile(
      oneContext({
        user: { "auth-provider": { name: "gcp", config: { "access-token": "AP-SECRET" } } },
      }),
    );
    await rejectsWith(loadKubeconfigFile(file), {
      file,
      field: "users[0].user.auth-provider",
      includes: [
        "auth-provider gcp is not supported; use an exec credential plugin",
        '"test"',
      ],
      excludes: ["AP-SECRET"],
    });
  });

  it("rejects a token combined with basic auth without showing either", TIMEOUT, async () => {
    const file = configFile(
      oneContext({ user: { token: "TOKEN-SECRET", username: "u", password: "PASSWORD-SECRET" } }),
    );
    await rejectsWith(loadKubeconfigFile(file), {
      file,
      field: "users[0].user.username",
      excludes: ["TOKEN-SECRET", "PASSWORD-SECRET"],
    });
  });

  it("rejects a missing explicit file, naming it", TIMEOUT, async () => {
    const file = path.join(root, "does", "not", "exist");
    await rejectsWith(loadKubeconfigFile(file), { file, includes: ["no such file"] });
  });

  it("rejects a kubeconfig tokenFile that does not exist", TIMEOUT, async () => {
    const file = configFile(oneContext({ user: { tokenFile: "absent-token" } }));
    await rejectsWith(loadKubeconfigFile(file), {
      file,
      field: "users[0].user.tokenFile",
      includes: [path.join(path.dirname(file), "absent-token")],
    });
  });
});

describe("loadConfig order", () => {
  let explicit = "";
  let fromEnv = "";
  let home = "";
  let emptyHome = "";
  let serviceAccountDir = "";
  const inCluster = { KUBERNETES_SERVICE_HOST: "10.0.0.1", KUBERNETES_SERVICE_PORT: "443" };

  before(() => {
    explicit = writeYaml(
      path.join(freshDir("order-explicit"), "config"),
      oneContext({ cluster: { server: "https://explicit.test" } }),
    );
    fromEnv = writeYaml(
      path.join(freshDir("order-env"), "config"),
      oneContext({ cluster: { server: "https://env.test" } }),
    );
    home = freshDir("order-home");
    writeYaml(
      path.join(home, ".kube", "config"),
      oneContext({ cluster: { server: "https://home.test" } }),
    );
    emptyHome = freshDir("order-empty-home");
    serviceAccountDir = freshDir("order-sa");
    write(path.join(serviceAccountDir, "token"), "sa");
    write(path.join(serviceAccountDir, "ca.crt"), CA_PEM);
  }, TIMEOUT);

  it("prefers the explicit kubeconfig", TIMEOUT, async () => {
    const config = await loadConfigFrom(
      { env: { KUBECONFIG: fromEnv, ...inCluster }, homeDir: home, serviceAccountDir },
      { kubeconfig: explicit },
    );
    assert.equal(config.server, "https://explicit.test");
  });

  it("uses $KUBECONFIG before in-cluster and home", TIMEOUT, async () => {
    const config = await loadConfigFrom({
      env: { KUBECONFIG: fromEnv, ...inCluster },
      homeDir: home,
      serviceAccountDir,
    });
    assert.equal(config.server, "https://env.test");
  });

  it("uses the service account before ~/.kube/config", TIMEOUT, async () => {
    const config = await loadConfigFrom({ env: inCluster, homeDir: home, serviceAccountDir });
    assert.equal(config.server, "https://10.0.0.1:443");
    assert.equal(config.source, "in-cluster");
  });

  it("falls back to ~/.kube/config, honouring the context option", TIMEOUT, async () => {
    const config = await loadConfigFrom({ env: {}, homeDir: home }, { context: "test" });
    assert.equal(config.server, "https://home.test");
    assert.equal(config.source, path.join(home, ".kube", "config"));
  });

  it("falls back to ~/.kube/config when the service account has no token", TIMEOUT, async () => {
    const config = await loadConfigFrom({
      env: inCluster,
      homeDir: home,
      serviceAccountDir: freshDir("order-no-token"),
    });
    assert.equal(config.server, "https://home.test");
  });

  it("lists every place tried when nothing is found", TIMEOUT, async () => {
    const noToken = freshDir("order-nothing");
    const homeFile = path.join(emptyHome, ".kube", "config");
    await rejectsWith(
      loadConfigFrom({ env: inCluster, homeDir: emptyHome, serviceAccountDir: noToken }),
      {
        file: homeFile,
        includes: ["kubeconfig option", "$KUBECONFIG", "in-cluster", path.join(noToken, "token")],
      },
    );
    await rejectsWith(loadConfigFrom({ env: {}, homeDir: emptyHome }), {
      file: homeFile,
      includes: ["KUBERNETES_SERVICE_HOST", homeFile],
    });
  });

  it("does not fall back when $KUBECONFIG lists only missing files", TIMEOUT, async () => {
    const missing = path.join(root, "order-missing-config");
    await rejectsWith(
      loadConfigFrom({ env: { KUBECONFIG: missing }, homeDir: home }),
      { file: missing },
    );
  });

  it("loads an explicit kubeconfig through the public loadConfig", TIMEOUT, async () => {
    const config = await loadConfig({ kubeconfig: explicit });
    assert.equal(config.server, "https://explicit.test");
  });
});
