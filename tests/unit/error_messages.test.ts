// Errors that say what is wrong, the same on Deno and Bun: a client certificate or key that
// cannot be used is named as such, whether the configuration was loaded from a kubeconfig,
// built by hand or printed by an exec plugin; never as Bun's "FailedToOpenSocket: Was there a
// typo in the url or port?". No key material reaches a message.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import { createServer, type Server } from "node:https";
import * as os from "node:os";
import * as path from "node:path";
import { clientCertificateAuth } from "../../lib/kube/config/auth.ts";
import { KubeconfigError } from "../../lib/kube/config/errors.ts";
import { ExecCredentialProvider } from "../../lib/kube/config/exec.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import { ConnectionError } from "../../lib/kube/errors.ts";
import { RestClient } from "../../lib/kube/rest.ts";
import { toConnectionError } from "../../lib/kube/transport.ts";
import { createCertificateAuthority } from "../../lib/testing/certs.ts";

const T = { timeout: 30_000 };
const V1 = "client.authentication.k8s.io/v1";
let root = "";
let server: Server;
let url = "";
let ca = "";
let pair: { cert: string; key: string };
let otherKey = "";

before(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "rudder-error-messages-"));
  const authority = await createCertificateAuthority("rudder-error-messages");
  ca = authority.cert;
  pair = await authority.issueClient({ commonName: "someone" });
  otherKey = (await authority.issueClient({ commonName: "someone-else" })).key;
  const serving = await authority.issueServing({ commonName: "localhost", ips: ["127.0.0.1"] });
  server = createServer({ cert: serving.cert, key: serving.key }, (_req, res) => {
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
}, T);

after(async () => {
  server.closeAllConnections?.();
  await new Promise((resolve) => server.close(resolve));
  fs.rmSync(root, { recursive: true, force: true });
}, T);

const keyLines = (pem: string) => pem.split("\n").filter((l) => l && !l.startsWith("-----"));

/** A configuration built by hand, as a caller may: nothing checked it at load. */
function handMade(cert: string, key: string): KubeConfig {
  return {
    server: url,
    namespace: "default",
    caData: ca,
    auth: clientCertificateAuth(cert, key),
    source: "a hand-made config",
  };
}

async function requestError(config: KubeConfig): Promise<Error> {
  const rest = new RestClient(config, { maxRetries: 0, timeout: 10_000 });
  try {
    return await rest.request({ path: "/version" }).then(
      () => assert.fail("the request must fail"),
      (e: unknown) => e as Error,
    );
  } finally {
    rest.close();
  }
}

describe("a client certificate that cannot be used", () => {
  it("works when the pair is right (the server is reachable)", T, async () => {
    const rest = new RestClient(handMade(pair.cert, pair.key), { maxRetries: 0 });
    try {
      assert.deepEqual(await rest.request({ path: "/version" }), {});
    } finally {
      rest.close();
    }
  });

  const garbage = "-----BEGIN CERTIFICATE-----\nZ2FyYmFnZQ==\n-----END CERTIFICATE-----\n";
  const cases: [string, () => [string, string], RegExp][] = [
    [
      "a private key as the certificate",
      () => [pair.key, pair.key],
      /the client certificate of a hand-made config holds a private key, not a certificate/,
    ],
    [
      "a PEM-shaped garbage certificate",
      () => [garbage, pair.key],
      /the client certificate of a hand-made config is not a valid certificate/,
    ],
    [
      "a certificate as the key",
      () => [pair.cert, pair.cert],
      /the client key of a hand-made config holds a certificate, not a private key/,
    ],
    [
      "the key of another certificate",
      () => [pair.cert, otherKey],
      /the client key of a hand-made config is not the private key of the client certificate/,
    ],
  ];
  for (const [what, values, expected] of cases) {
    it(`is named as such for ${what}, on every runtime`, T, async () => {
      const [cert, key] = values();
      const err = await requestError(handMade(cert, key));
      assert.ok(err instanceof ConnectionError, String(err));
      assert.equal(err.reason, "tls");
      assert.match(err.message, expected);
      assert.match(err.message, /cannot connect to 127\.0\.0\.1:\d+/);
      assert.doesNotMatch(err.message, /FailedToOpenSocket|typo in the url/);
      for (const line of [...keyLines(pair.key), ...keyLines(otherKey)]) {
        assert.ok(!String(err).includes(line), "no line of a key in the message");
      }
    });
  }

  it("maps Bun's FailedToOpenSocket to the client certificate when there is one", () => {
    const bunError = Object.assign(
      new TypeError("FailedToOpenSocket: Was there a typo in the url or port?"),
      { code: "FailedToOpenSocket" },
    );
    const withCert = toConnectionError(bunError, { server: url, clientCertificate: true });
    assert.equal(withCert.reason, "tls");
    assert.match(withCert.message, /the client certificate or key could not be used for TLS/);
    const without = toConnectionError(bunError, { server: url });
    assert.equal(without.reason, "unknown", "without a client certificate it stays unexplained");
  });

  it("printed by an exec plugin is named as the plugin's field", T, async () => {
    const command = path.join(fs.mkdtempSync(path.join(root, "plugin-")), "plugin.sh");
    const credential = JSON.stringify({
      apiVersion: V1,
      kind: "ExecCredential",
      status: { clientCertificateData: pair.key, clientKeyData: pair.key },
    });
    fs.writeFileSync(path.join(path.dirname(command), "out.json"), credential);
    fs.writeFileSync(command, `#!/bin/sh\ncat "$(dirname "$0")/out.json"\n`);
    fs.chmodSync(command, 0o755);
    const auth = new ExecCredentialProvider({
      command,
      apiVersion: V1,
      user: "plugin-user",
      origin: { file: "/kubeconfig", field: "users[0].user.exec" },
    });
    const err = await auth.credentials().catch((e) => e);
    assert.ok(err instanceof KubeconfigError, String(err));
    assert.match(
      err.message,
      /printed a status\.clientCertificateData that holds a private key, not a certificate/,
    );
    for (const line of keyLines(pair.key)) assert.ok(!String(err).includes(line));
  });
});
