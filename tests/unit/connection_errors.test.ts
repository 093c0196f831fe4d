// Transport failures against real loopback sockets: a closed port, a TLS server whose
// certificate the configured CA did not sign, CA data that is not a certificate, a proxy that
// is not there, a host name that does not resolve. Each becomes a ConnectionError that names
// the host and the reason, on Deno and on Bun.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer as createHttpServer } from "node:http";
import { createServer, type Server } from "node:https";
import { createServer as createNetServer } from "node:net";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import { ConnectionError, type ConnectionFailure } from "../../lib/kube/errors.ts";
import { RestClient } from "../../lib/kube/rest.ts";
import { newTransport, toConnectionError } from "../../lib/kube/transport.ts";
import { createCertificateAuthority } from "../../lib/testing/certs.ts";

const TIMEOUT = { timeout: 30_000 };
let tlsServer: Server;
let tlsPort = 0;
let closedPort = 0;
let trustedCa = "";
let otherCa = "";

/** A port nothing listens on: bound once, then released. */
async function freePort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

before(async () => {
  const ca = await createCertificateAuthority("rudder-test-ca");
  const other = await createCertificateAuthority("someone-else");
  trustedCa = ca.cert;
  otherCa = other.cert;
  const serving = await ca.issueServing({
    commonName: "localhost",
    dnsNames: ["localhost"],
    ips: ["127.0.0.1"],
  });
  tlsServer = createServer({ cert: serving.cert, key: serving.key }, (_req, res) => {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end('{"gitVersion":"v1.0.0"}');
  });
  await new Promise<void>((resolve) => tlsServer.listen(0, "127.0.0.1", resolve));
  tlsPort = (tlsServer.address() as { port: number }).port;
  closedPort = await freePort();
}, TIMEOUT);

after(async () => {
  tlsServer.closeAllConnections?.();
  await new Promise((resolve) => tlsServer.close(resolve));
}, TIMEOUT);

function config(overrides: Partial<KubeConfig>): KubeConfig {
  return {
    server: `https://127.0.0.1:${tlsPort}`,
    namespace: "default",
    auth: { credentials: () => Promise.resolve({}) },
    source: "unit test",
    ...overrides,
  };
}

async function failure(kubeconfig: KubeConfig): Promise<ConnectionError> {
  const transport = newTransport(kubeconfig);
  try {
    const response = await transport.fetch("/version");
    await response.body?.cancel();
    assert.fail(`expected a ConnectionError, got HTTP ${response.status}`);
  } catch (err) {
    assert.ok(err instanceof ConnectionError, `expected a ConnectionError, got ${err}`);
    assert.ok(err.cause !== undefined, "keeps the runtime's error as cause");
    return err;
  } finally {
    transport.close();
  }
}

function expectReason(err: ConnectionError, reason: ConnectionFailure, host: string): void {
  assert.equal(err.reason, reason, err.message);
  assert.equal(err.host, host);
  assert.ok(err.message.includes(host), `names the host: ${err.message}`);
}

describe("connection failures", () => {
  it("reaches a TLS server whose certificate the configured CA signed", TIMEOUT, async () => {
    const transport = newTransport(config({ caData: trustedCa }));
    try {
      const response = await transport.fetch("/version");
      assert.deepEqual(await response.json(), { gitVersion: "v1.0.0" });
    } finally {
      transport.close();
    }
  });

  it("names the host of a closed port and says the connection was refused", TIMEOUT, async () => {
    const err = await failure(
      config({ server: `https://127.0.0.1:${closedPort}`, caData: trustedCa }),
    );
    expectReason(err, "refused", `127.0.0.1:${closedPort}`);
    assert.match(err.message, /connection refused/);
  });

  it("says the server's certificate is not trusted by the configured CA", TIMEOUT, async () => {
    const err = await failure(config({ caData: otherCa }));
    expectReason(err, "untrusted-certificate", `127.0.0.1:${tlsPort}`);
    assert.match(err.message, /not signed by a trusted CA/);
  });

  it("says CA data that is not a certificate is invalid, before connecting", TIMEOUT, async () => {
    const garbage = "-----BEGIN CERTIFICATE-----\nZ2FyYmFnZQ==\n-----END CERTIFICATE-----\n";
    const err = await failure(config({ caData: garbage }));
    expectReason(err, "invalid-ca", `127.0.0.1:${tlsPort}`);
    assert.match(err.message, /not a valid PEM certificate/);
    assert.doesNotMatch(err.message, /typo/);
  });

  it("names an unreachable proxy rather than the server", TIMEOUT, async () => {
    const err = await failure(
      config({ caData: trustedCa, proxyURL: `http://127.0.0.1:${closedPort}` }),
    );
    expectReason(err, "proxy", `127.0.0.1:${closedPort}`);
    assert.match(err.message, new RegExp(`proxy 127\\.0\\.0\\.1:${closedPort}`));
    assert.match(err.message, new RegExp(`for 127\\.0\\.0\\.1:${tlsPort}`));
  });

  it("sends a proxy URL's user-info as Proxy-Authorization", TIMEOUT, async () => {
    let seen: string | undefined;
    const proxy = createHttpServer((req, res) => {
      seen = req.headers["proxy-authorization"];
      res.writeHead(502);
      res.end();
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const proxyPort = (proxy.address() as { port: number }).port;
    const transport = newTransport(config({
      server: "http://192.0.2.1:6443",
      proxyURL: `http://proxy-user:proxy%20pw@127.0.0.1:${proxyPort}`,
    }));
    try {
      const response = await transport.fetch("/version");
      await response.body?.cancel();
      assert.equal(response.status, 502);
      assert.equal(seen, `Basic ${btoa("proxy-user:proxy pw")}`);
    } finally {
      transport.close();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it("says a host name does not resolve", TIMEOUT, async () => {
    const err = await failure(config({ server: "https://rudder-no-such-host.invalid:6443" }));
    expectReason(err, "dns", "rudder-no-such-host.invalid:6443");
  });

  it("says the TLS handshake failed for a certificate of another name", TIMEOUT, async () => {
    const ca = await createCertificateAuthority("names-ca");
    const serving = await ca.issueServing({ commonName: "other.test", dnsNames: ["other.test"] });
    const server = createServer({ cert: serving.cert, key: serving.key }, (_req, res) => {
      res.end("{}");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    try {
      const err = await failure(config({ server: `https://127.0.0.1:${port}`, caData: ca.cert }));
      expectReason(err, "tls", `127.0.0.1:${port}`);
      assert.match(err.message, /the TLS handshake failed: /);
    } finally {
      server.closeAllConnections?.();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it(
    "says the connection was closed when the server drops it before answering",
    TIMEOUT,
    async () => {
      const server = createNetServer((socket) => socket.once("data", () => socket.destroy()));
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const port = (server.address() as { port: number }).port;
      try {
        const err = await failure(config({ server: `http://127.0.0.1:${port}` }));
        expectReason(err, "reset", `127.0.0.1:${port}`);
        assert.match(err.message, /the connection was closed before an answer came/);
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    },
  );

  it("lets an aborted request reject with the signal's reason, unwrapped", TIMEOUT, async () => {
    const transport = newTransport(
      config({ server: `https://127.0.0.1:${closedPort}`, caData: trustedCa }),
    );
    try {
      const controller = new AbortController();
      const reason = new Error("stop now");
      controller.abort(reason);
      await assert.rejects(transport.fetch("/version", { signal: controller.signal }), (err) => {
        assert.ok(!(err instanceof ConnectionError));
        return true;
      });
    } finally {
      transport.close();
    }
  });

  it("reaches the REST client's caller with the method and path added", TIMEOUT, async () => {
    const rest = new RestClient(
      config({ server: `https://127.0.0.1:${closedPort}`, caData: trustedCa }),
      { maxRetries: 0 },
    );
    try {
      const err = await rest.request({ path: "/version" }).then(
        () => assert.fail("expected a failure"),
        (e: unknown) => e,
      );
      assert.ok(err instanceof ConnectionError, String(err));
      assert.equal(err.reason, "refused");
      assert.equal(err.method, "GET");
      assert.equal(err.path, "/version");
      assert.equal(
        err.message,
        `GET /version: cannot connect to 127.0.0.1:${closedPort}: connection refused`,
      );
    } finally {
      rest.close();
    }
  });
});

describe("toConnectionError", () => {
  const target = { server: "https://api.test:6443" };
  const cases: [string, unknown, ConnectionFailure][] = [
    [
      "Deno's refused connection two causes down",
      new TypeError("fetch failed", {
        cause: new Error(
          "error sending request for url (https://api.test:6443/): client error (Connect): " +
            "tcp connect error: Connection refused (os error 111)",
        ),
      }),
      "refused",
    ],
    [
      "Bun's refused connection",
      Object.assign(new TypeError("Unable to connect."), { code: "ECONNREFUSED" }),
      "refused",
    ],
    [
      "Deno's unknown issuer",
      new TypeError("fetch failed", {
        cause: new Error("client error (Connect): invalid peer certificate: UnknownIssuer"),
      }),
      "untrusted-certificate",
    ],
    [
      "Bun's unverifiable leaf",
      Object.assign(new TypeError("unable to verify the first certificate"), {
        code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
      }),
      "untrusted-certificate",
    ],
    [
      "a certificate for another name",
      new TypeError("fetch failed", {
        cause: new Error("invalid peer certificate: NotValidForName"),
      }),
      "tls",
    ],
    [
      "Bun's DNS failure",
      Object.assign(new TypeError("getaddrinfo"), { code: "ENOTFOUND" }),
      "dns",
    ],
    ["a reset", Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }), "reset"],
    ["a connect timeout", Object.assign(new Error("x"), { code: "ETIMEDOUT" }), "timeout"],
    ["anything else", new Error("something odd"), "unknown"],
  ];
  for (const [name, error, reason] of cases) {
    it(`classifies ${name} as ${reason}`, TIMEOUT, () => {
      const err = toConnectionError(error, target);
      assert.equal(err.reason, reason);
      assert.equal(err.host, "api.test:6443");
    });
  }

  it("keeps the runtime's words for an unknown failure", TIMEOUT, () => {
    const err = toConnectionError(new Error("something odd"), target);
    assert.equal(err.message, "cannot connect to api.test:6443: something odd");
  });
});
