// No credential in any message: a marker secret is planted in every credential field a
// kubeconfig can hold (token, tokenFile content, password, client key, exec plugin output,
// server and proxy URL user-info), then requests fail in every way we know (untrusted and
// garbage CA, refused connection, dead proxy, 401, 403, malformed header value, bad client
// key, plugin failure and timeout). No error (message, String(), inspect(), cause chain, the
// JSON a log record would carry) and no log record may contain the marker, on Deno and Bun.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import * as fs from "node:fs";
import https, { createServer, type Server } from "node:https";
import { createServer as createNetServer } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import process from "node:process";
import { inspect } from "node:util";
import { stringify } from "yaml";
import { loadKubeconfigFile } from "../../lib/kube/config/load.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import { ConnectionError } from "../../lib/kube/errors.ts";
import { RestClient } from "../../lib/kube/rest.ts";
import { createCertificateAuthority } from "../../lib/testing/certs.ts";
import { formatJsonLogRecord, serializeError } from "../../lib/util/logging.ts";
import { captureLogs } from "../support/logs.ts";

const TIMEOUT = { timeout: 60_000 };
const MARK = "rudderleak";
const V1 = "client.authentication.k8s.io/v1";

const SECRET = {
  token: `${MARK}-token-a1b2`,
  fileToken: `${MARK}-filetoken-c3d4`,
  password: `${MARK}-password-e5f6`,
  serverPassword: `${MARK}-serverpw-g7h8`,
  proxyPassword: `${MARK}-proxypw-i9j0`,
  execToken: `${MARK}-exectoken-k1l2`,
};
/** A PEM "key" whose body carries the marker; no runtime can use it. */
const BAD_KEY = `-----BEGIN PRIVATE KEY-----\n${MARK}keyAAAAbase64bodyAAAA${MARK}\n` +
  `-----END PRIVATE KEY-----\n`;

/** Strings that must appear nowhere: the marker, and the encodings a runtime might print. */
const FORBIDDEN = [
  MARK,
  Buffer.from(`user:${SECRET.password}`).toString("base64"),
  Buffer.from(`admin:${SECRET.serverPassword}`).toString("base64"),
  Buffer.from(SECRET.token).toString("base64"),
];

let root = "";
let server: Server;
let port = 0;
let closedPort = 0;
let trustedCa = "";
let otherCa = "";
let clientCert = "";
let logs: Awaited<ReturnType<typeof captureLogs>>;
const checked: string[] = [];
let lastAuthorization: string | undefined;

async function freePort(): Promise<number> {
  const probe = createNetServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const free = (probe.address() as { port: number }).port;
  await new Promise((resolve) => probe.close(resolve));
  return free;
}

before(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "rudder-secrets-test-"));
  logs = await captureLogs();
  const ca = await createCertificateAuthority("rudder-secrets-ca");
  trustedCa = ca.cert;
  otherCa = (await createCertificateAuthority("not-the-servers-ca")).cert;
  clientCert = (await ca.issueClient({ commonName: "someone" })).cert;
  const serving = await ca.issueServing({ commonName: "localhost", ips: ["127.0.0.1"] });
  server = createServer({ cert: serving.cert, key: serving.key }, (req, res) => {
    lastAuthorization = req.headers.authorization;
    const code = req.url?.startsWith("/forbidden")
      ? 403
      : req.url?.startsWith("/unauth")
      ? 401
      : 200;
    res.writeHead(code, { "Content-Type": "application/json" });
    res.end(JSON.stringify(
      code === 200 ? { kind: "Ok" } : {
        kind: "Status",
        apiVersion: "v1",
        status: "Failure",
        code,
        reason: code === 401 ? "Unauthorized" : "Forbidden",
        message: code === 401 ? "Unauthorized" : 'forbidden: User "someone" cannot get path',
      },
    ));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as { port: number }).port;
  closedPort = await freePort();
}, TIMEOUT);

after(async () => {
  await logs.stop();
  server.closeAllConnections?.();
  await new Promise((resolve) => server.close(resolve));
  fs.rmSync(root, { recursive: true, force: true });
}, TIMEOUT);

function base64(text: string): string {
  return Buffer.from(text, "utf8").toString("base64");
}

/** Writes a one-context kubeconfig into a fresh directory and returns its path. */
function kubeconfig(cluster: Record<string, unknown>, user: Record<string, unknown>): string {
  const dir = fs.mkdtempSync(path.join(root, "case-"));
  const file = path.join(dir, "config");
  fs.writeFileSync(
    file,
    stringify({
      clusters: [{
        name: "c",
        cluster: {
          server: `https://127.0.0.1:${port}`,
          "certificate-authority-data": base64(trustedCa),
          ...cluster,
        },
      }],
      users: [{ name: "u", user }],
      contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
      "current-context": "c",
    }),
  );
  return file;
}

/** An exec plugin in a fresh directory that runs `body`: the kubeconfig's `exec` block. */
function plugin(body: string): Record<string, unknown> {
  const command = path.join(fs.mkdtempSync(path.join(root, "plugin-")), "plugin.sh");
  fs.writeFileSync(command, `#!/bin/sh\n${body}\n`);
  fs.chmodSync(command, 0o755);
  return { apiVersion: V1, command };
}

function execCredential(token: string): string {
  return JSON.stringify({ apiVersion: V1, kind: "ExecCredential", status: { token } });
}

/** Every text an error can turn into, down its cause chain. */
function renderings(err: unknown): string[] {
  const out = [String(err), inspect(err, { depth: 12 })];
  if (err instanceof Error) out.push(JSON.stringify(serializeError(err)), err.stack ?? "");
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 12; depth++) {
    out.push(e.message, String(e), JSON.stringify(Object.entries(e)));
    e = e.cause;
  }
  return out;
}

function assertClean(label: string, texts: string[]): void {
  for (const text of texts) {
    for (const secret of FORBIDDEN) {
      assert.ok(!text.includes(secret), `${label} leaks ${secret}:\n${text}`);
    }
  }
  checked.push(label);
}

/** Runs `attempt`, which must fail, and checks every rendering of its error. */
async function failsCleanly(
  label: string,
  attempt: () => Promise<unknown>,
  expected?: RegExp,
): Promise<unknown> {
  let caught: unknown;
  try {
    await attempt();
  } catch (err) {
    caught = err;
  }
  assert.ok(caught !== undefined, `${label}: expected a failure`);
  if (expected) assert.match(String((caught as Error).message), expected, `${label}: ${caught}`);
  assertClean(label, renderings(caught));
  return caught;
}

/** Loads `file` and sends one GET to `requestPath` with retries, so retry logs happen too. */
async function request(file: string, requestPath = "/ok", execTimeoutMs?: number): Promise<void> {
  const config: KubeConfig = await loadKubeconfigFile(file, { execTimeoutMs });
  // proxyURL keeps its credentials (the transport needs them); server and source must not.
  assertClean("config.server", [config.server, config.source]);
  const rest = new RestClient(config, { maxRetries: 1, timeout: 20_000 });
  try {
    await rest.request({ path: requestPath });
  } finally {
    rest.close();
  }
}

describe("no credential in any message", () => {
  it("bad CA: the server's certificate is not signed by the configured CA", TIMEOUT, async () => {
    const file = kubeconfig({ "certificate-authority-data": base64(otherCa) }, {
      token: SECRET.token,
    });
    await failsCleanly("untrusted CA", () => request(file), /not signed by a trusted CA/);
  });

  it("bad CA: CA data that is not a certificate", TIMEOUT, async () => {
    const garbage = "-----BEGIN CERTIFICATE-----\nZ2FyYmFnZQ==\n-----END CERTIFICATE-----\n";
    const file = kubeconfig({ "certificate-authority-data": base64(garbage) }, {
      token: SECRET.token,
    });
    await failsCleanly("garbage CA", () => request(file), /not a valid PEM certificate/);
  });

  it("refused connection to a server URL with user-info", TIMEOUT, async () => {
    const file = kubeconfig({
      server: `https://admin:${SECRET.serverPassword}@127.0.0.1:${closedPort}`,
    }, {});
    await failsCleanly("refused", () => request(file), /connection refused/);
  });

  it(
    "a server URL with user-info sends it as basic auth and keeps it out of server",
    TIMEOUT,
    async () => {
      const file = kubeconfig({
        server: `https://admin:${SECRET.serverPassword}@127.0.0.1:${port}`,
      }, {});
      await request(file);
      assert.equal(lastAuthorization, `Basic ${base64(`admin:${SECRET.serverPassword}`)}`);
    },
  );

  it("refused connection with a token", TIMEOUT, async () => {
    const file = kubeconfig({ server: `https://127.0.0.1:${closedPort}` }, { token: SECRET.token });
    await failsCleanly("refused with token", () => request(file), /connection refused/);
  });

  it("a dead proxy whose URL carries a password", TIMEOUT, async () => {
    const file = kubeconfig({
      "proxy-url": `http://proxyuser:${SECRET.proxyPassword}@127.0.0.1:${closedPort}`,
    }, { token: SECRET.token });
    await failsCleanly("dead proxy", () => request(file), /proxy 127\.0\.0\.1/);
  });

  it("401 with basic auth", TIMEOUT, async () => {
    const file = kubeconfig({}, { username: "user", password: SECRET.password });
    await failsCleanly("401 basic", () => request(file, "/unauthorized"), /401/);
  });

  it("401 with an exec plugin's token (the plugin runs again)", TIMEOUT, async () => {
    const exec = plugin(`echo '${execCredential(SECRET.execToken)}'`);
    const file = kubeconfig({}, { exec });
    await failsCleanly("401 exec", () => request(file, "/unauthorized"), /401/);
  });

  it("403 with a token file", TIMEOUT, async () => {
    const file = kubeconfig({}, { tokenFile: "token" });
    fs.writeFileSync(path.join(path.dirname(file), "token"), `${SECRET.fileToken}\n`);
    await failsCleanly("403 tokenFile", () => request(file, "/forbidden"), /403/);
  });

  it("403 from a watch", TIMEOUT, async () => {
    const file = kubeconfig({}, { token: SECRET.token });
    const rest = new RestClient(await loadKubeconfigFile(file));
    try {
      await failsCleanly("403 watch", async () => {
        for await (const _ of rest.watch({ path: "/forbidden" })) break;
      }, /403/);
    } finally {
      rest.close();
    }
  });

  it("a token with a control character fails loading, naming the field", TIMEOUT, async () => {
    const file = kubeconfig({}, { token: `${SECRET.token}\u0001x` });
    await failsCleanly("malformed token", () => request(file), /users\[0\]\.user\.token/);
  });

  it(
    "a rotated token file with a line break fails the request, naming the header",
    TIMEOUT,
    async () => {
      const file = kubeconfig({}, { tokenFile: "token" });
      const tokenFile = path.join(path.dirname(file), "token");
      fs.writeFileSync(tokenFile, SECRET.fileToken);
      const config = await loadKubeconfigFile(file);
      fs.writeFileSync(tokenFile, `${SECRET.fileToken}\nsecond-line`);
      await config.auth.invalidate?.();
      const rest = new RestClient(config, { maxRetries: 0 });
      try {
        await failsCleanly(
          "malformed tokenFile",
          () => rest.request({ path: "/ok" }),
          /Authorization header/,
        );
      } finally {
        rest.close();
      }
    },
  );

  it("an exec plugin printing a token with a control character", TIMEOUT, async () => {
    const dir = fs.mkdtempSync(path.join(root, "plugin-"));
    const script = path.join(dir, "plugin.sh");
    // JSON.stringify writes the bell character as the escape \u0007, which the plugin prints.
    fs.writeFileSync(
      script,
      `#!/bin/sh\nprintf '%s' '${execCredential(`${SECRET.execToken}\u0007`)}'\n`,
    );
    fs.chmodSync(script, 0o755);
    const file = kubeconfig({}, { exec: { apiVersion: V1, command: script } });
    await failsCleanly("malformed exec token", () => request(file), /Authorization header/);
  });

  it("a client key that no runtime can use", TIMEOUT, async () => {
    const file = kubeconfig({}, {
      "client-certificate-data": base64(clientCert),
      "client-key-data": base64(BAD_KEY),
    });
    await failsCleanly("bad client key", () => request(file));
  });

  it(
    "an exec plugin that fails after printing the token to stdout and stderr",
    TIMEOUT,
    async () => {
      const dir = fs.mkdtempSync(path.join(root, "plugin-"));
      const script = path.join(dir, "plugin.sh");
      fs.writeFileSync(
        script,
        `#!/bin/sh\necho '${execCredential(SECRET.execToken)}'\n` +
          `echo "refreshing ${SECRET.execToken} failed: Bearer ${SECRET.execToken}" >&2\nexit 1\n`,
      );
      fs.chmodSync(script, 0o755);
      const file = kubeconfig({}, { exec: { apiVersion: V1, command: script } });
      const err = await failsCleanly("plugin failure", () => request(file), /exit code 1/);
      assert.match(String(err), /refreshing \[redacted\] failed/, "stderr is shown, redacted");
    },
  );

  it("an exec plugin that times out after printing the token", TIMEOUT, async () => {
    const dir = fs.mkdtempSync(path.join(root, "plugin-"));
    const script = path.join(dir, "plugin.sh");
    fs.writeFileSync(
      script,
      `#!/bin/sh\necho '${execCredential(SECRET.execToken)}'\n` +
        `echo "still working on ${SECRET.execToken}" >&2\nsleep 30\n`,
    );
    fs.chmodSync(script, 0o755);
    const file = kubeconfig({}, { exec: { apiVersion: V1, command: script } });
    await failsCleanly("plugin timeout", () => request(file, "/ok", 500), /did not answer within/);
  });

  it("a server or proxy URL that does not parse", TIMEOUT, async () => {
    const badServer = kubeconfig({ server: `ftp://admin:${SECRET.serverPassword}@host` }, {});
    await failsCleanly(
      "bad server URL",
      () => request(badServer),
      /clusters\[0\]\.cluster\.server/,
    );
    const badProxy = kubeconfig({ "proxy-url": `http://u:${SECRET.proxyPassword}@[::1` }, {});
    await failsCleanly("bad proxy URL", () => request(badProxy), /proxy-url/);
  });

  it("YAML that does not parse", TIMEOUT, async () => {
    const file = path.join(fs.mkdtempSync(path.join(root, "yaml-")), "config");
    fs.writeFileSync(file, `users:\n- name: u\n  user:\n    token: ${SECRET.token}\n   bad: [\n`);
    await failsCleanly("bad YAML", () => loadKubeconfigFile(file), /invalid YAML/);
  });

  it("a token file that disappears is logged without the token", TIMEOUT, async () => {
    const file = kubeconfig({}, { tokenFile: "token" });
    const tokenFile = path.join(path.dirname(file), "token");
    fs.writeFileSync(tokenFile, SECRET.fileToken);
    const config = await loadKubeconfigFile(file);
    fs.rmSync(tokenFile);
    await config.auth.invalidate?.();
    const rest = new RestClient(config);
    try {
      await rest.request({ path: "/ok" });
    } finally {
      rest.close();
    }
    assert.ok(logs.records.some((r) => String(r.rawMessage).includes("Cannot re-read token file")));
  });

  describe("every class of connection failure, with a KubeConfig built by hand", () => {
    const auth = `admin:${SECRET.serverPassword}`;
    const proxyAuth = `proxyuser:${SECRET.proxyPassword}`;
    let clientPair = { cert: "", key: "" };
    before(async () => {
      const ca = await createCertificateAuthority("hand-made");
      clientPair = await ca.issueClient({ commonName: "someone" });
    }, TIMEOUT);
    /**
     * A runtime's fetch failure at its most indiscreet: its message and each cause quote the URL
     * with user-info, the proxy's URL (when there is a proxy), the Authorization header, the
     * bare token and passwords, and a line of the client key.
     */
    function indiscreet(words: string, keyLine: string, proxy: boolean, code?: string): Error {
      const viaProxy = proxy
        ? ` via http://${proxyAuth}@127.0.0.1:3128 (${SECRET.proxyPassword})`
        : "";
      const everything = `https://${auth}@127.0.0.1:6443/ok${viaProxy} (Authorization: Bearer ` +
        `${SECRET.token}; token ${SECRET.token}; password ${SECRET.serverPassword}; key ${keyLine})`;
      const inner = Object.assign(new Error(`${words}: ${everything}`), code ? { code } : {});
      return new TypeError(`fetch failed for ${everything}`, {
        cause: new Error(`error sending request: ${everything}`, { cause: inner }),
      });
    }
    const classes: [string, string, string | undefined, string][] = [
      ["refused", "tcp connect error: Connection refused (os error 111)", undefined, "refused"],
      ["dns", "getaddrinfo ENOTFOUND api.test", "ENOTFOUND", "dns"],
      ["tls", "invalid peer certificate: NotValidForName", undefined, "tls"],
      ["untrusted-certificate", "invalid peer certificate: UnknownIssuer", undefined, "untrusted"],
      ["timeout", "connect ETIMEDOUT", "ETIMEDOUT", "timeout"],
      ["reset", "socket hang up", "ECONNRESET", "reset"],
      ["unknown", "something no one has seen before", undefined, "unknown"],
      ["proxy", "tcp connect error: Connection refused (os error 111)", undefined, "proxy"],
    ];
    for (const [reason, words, code, label] of classes) {
      it(`${label}: no credential in the error, its causes or the log`, TIMEOUT, async () => {
        const keyLine = clientPair.key.split("\n")[1];
        const config: KubeConfig = {
          server: `https://${auth}@127.0.0.1:6443`,
          namespace: "default",
          proxyURL: reason === "proxy" ? `http://${proxyAuth}@127.0.0.1:3128` : undefined,
          auth: {
            credentials: () =>
              Promise.resolve({
                headers: { Authorization: `Bearer ${SECRET.token}` },
                clientCertificate: clientPair,
              }),
          },
          source: "a KubeConfig built by hand",
        };
        // Deno's and Bun's transports then go through the global fetch, Node's through
        // https.request (RUDDER_NODE_HTTPS=1); both fail as told.
        const realFetch = globalThis.fetch;
        const realRequest = https.request;
        const denoFetch = process.env.RUDDER_DENO_FETCH;
        const nodeHttps = process.env.RUDDER_NODE_HTTPS;
        const urls: string[] = [];
        process.env.RUDDER_DENO_FETCH = "1";
        process.env.RUDDER_NODE_HTTPS = "1";
        globalThis.fetch = ((input: string | URL | Request) => {
          urls.push(String(input instanceof Request ? input.url : input));
          return Promise.reject(indiscreet(words, keyLine, reason === "proxy", code));
        }) as typeof fetch;
        https.request = ((input: string | URL) => {
          urls.push(String(input));
          throw indiscreet(words, keyLine, reason === "proxy", code);
        }) as typeof https.request;
        const rest = new RestClient(config, { maxRetries: 1 });
        const logged = logs.records.length;
        try {
          const err = await failsCleanly(`${label} by hand`, () => rest.request({ path: "/ok" }));
          assert.ok(err instanceof ConnectionError, String(err));
          assert.equal(err.reason, reason);
          assertClean(
            `${label} key`,
            renderings(err).map((text) => text.split(keyLine).join(MARK)),
          );
        } finally {
          globalThis.fetch = realFetch;
          https.request = realRequest;
          if (denoFetch === undefined) delete process.env.RUDDER_DENO_FETCH;
          else process.env.RUDDER_DENO_FETCH = denoFetch;
          if (nodeHttps === undefined) delete process.env.RUDDER_NODE_HTTPS;
          else process.env.RUDDER_NODE_HTTPS = nodeHttps;
          rest.close();
        }
        assertClean(`${label} URL`, urls);
        assert.equal(urls.length, 2, "sent, then retried once");
        const retryRecords = logs.records.slice(logged)
          .filter((record) => String(record.rawMessage).includes("after a network failure"));
        assert.equal(retryRecords.length, 1, "the retry is logged");
        assertClean(
          `${label} log record`,
          retryRecords.map((record) =>
            (formatJsonLogRecord(record) + inspect(record, { depth: 12 })).split(keyLine).join(MARK)
          ),
        );
      });
    }
  });

  it("left no secret in any log record", TIMEOUT, () => {
    assert.ok(logs.records.length > 0, "something was logged");
    assertClean(
      "log records",
      logs.records.map((record) => formatJsonLogRecord(record) + inspect(record, { depth: 12 })),
    );
    assert.ok(checked.length >= 18, `checked ${checked.length} paths`);
  });
});
