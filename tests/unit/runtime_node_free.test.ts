// What replaces `node:` modules on Deno's start path (bench/README.md, "Deno's Node layer"):
// base64, paths, the X.509 checks and the TCP under the forwarder, each against Node's own
// answer where there is one, on every runtime; and a guard that the modules the scaffold's
// operator loads import no `node:` module (each would start Deno's Node layer).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import * as nodePath from "node:path";
import { createPrivateKey, generateKeyPairSync } from "node:crypto";
import { decodeBase64, decodeBase64Text, encodeBase64 } from "../../lib/util/encoding.ts";
import { dirnamePath, joinPath, resolvePath } from "../../lib/util/paths.ts";
import { checkCertificate, checkKeyPair } from "../../lib/util/x509_check.ts";
import { createCertificateAuthority } from "../../lib/util/certs.ts";
import { connectTcp, listenTcp } from "../../lib/server/tcp.ts";
import {
  envObject,
  getEnv,
  homedir,
  hostname,
  nodeProcess,
  tmpdir,
} from "../../lib/util/runtime.ts";
import { readTextFileSync } from "../../lib/util/files.ts";

describe("base64 without node:buffer", () => {
  it("encodes as Buffer does, text and bytes, long input included", () => {
    const long = new Uint8Array(200_000).map((_, i) => (i * 7) & 0xff);
    for (const value of ["", "a", "ab", "abc", "user:pässwörd", "🦕 deno"]) {
      assert.equal(encodeBase64(value), Buffer.from(value, "utf8").toString("base64"));
    }
    assert.equal(encodeBase64(long), Buffer.from(long).toString("base64"));
  });

  it("decodes as leniently as Buffer: line breaks, URL-safe letters, no padding", () => {
    for (
      const text of [
        "dXNlcjpw\nYXNz",
        "dXNlcjpwYXNz",
        "dXNlcg",
        "dXNlcg==",
        "-_-_",
        "YQ==YQ==",
        "Y",
      ]
    ) {
      assert.deepEqual(
        Array.from(decodeBase64(text)),
        Array.from(Buffer.from(text, "base64")),
        `decoding ${JSON.stringify(text)}`,
      );
    }
    assert.equal(decodeBase64Text("8J+mlSBkZW5v"), "🦕 deno");
  });
});

describe("paths without node:path", () => {
  it("joins, resolves and takes the directory as node:path does (POSIX)", () => {
    const joins = [
      ["/var/run", "secrets", "token"],
      ["a", "../b", "./c"],
      ["/a/", "/b/"],
      ["", ""],
      [
        "a",
        "..",
        "..",
      ],
      ["/", ".."],
    ];
    for (const parts of joins) {
      assert.equal(joinPath(...parts), nodePath.join(...parts), parts.join(","));
    }
    const resolves = [
      ["/etc", "kube", "../config"],
      ["/a", "/b", "c"],
      ["rel"],
      ["/x/y/", "."],
      [],
    ];
    for (const parts of resolves) {
      assert.equal(resolvePath(...parts), nodePath.resolve(...parts), parts.join(","));
    }
    for (const path of ["/home/me/.kube/config", "/a", "a", "a/b/", "/", ""]) {
      assert.equal(dirnamePath(path), nodePath.dirname(path), path);
    }
  });
});

describe("runtime facts without node:os or process", () => {
  it("gives the host name, home, temporary directory and environment Node gives", () => {
    const os = nodeProcess().getBuiltinModule("node:os") as typeof import("node:os");
    assert.equal(hostname(), os.hostname());
    assert.equal(homedir(), os.homedir());
    assert.equal(tmpdir(), os.tmpdir());
    assert.equal(getEnv("PATH"), nodeProcess().env.PATH);
    assert.equal(getEnv("RUDDER_SURELY_UNSET_VARIABLE"), undefined);
    assert.equal(envObject().PATH, nodeProcess().env.PATH);
    assert.equal("PATH" in envObject(), true);
  });
});

describe("X.509 checks without node:crypto on Deno", () => {
  it("takes a certificate and its own key, in PKCS #8 and SEC 1", async () => {
    const ca = await createCertificateAuthority("test-ca");
    checkCertificate(ca.cert);
    assert.equal(checkKeyPair(ca.cert, "PRIVATE KEY", ca.key), undefined);
    const sec1 = createPrivateKey(ca.key).export({ type: "sec1", format: "pem" }) as string;
    assert.equal(checkKeyPair(ca.cert, "EC PRIVATE KEY", sec1), undefined);
    // A chain: the first certificate is the one the key must belong to.
    const other = await createCertificateAuthority("other");
    assert.equal(checkKeyPair(ca.cert + other.cert, "PRIVATE KEY", ca.key), undefined);
  });

  it("says which one is wrong: a damaged certificate, a damaged key, another key", async () => {
    const ca = await createCertificateAuthority("test-ca");
    const other = await createCertificateAuthority("other");
    const damaged = ca.cert.replace(/^(-----BEGIN CERTIFICATE-----\n)(.{8})/, "$1AAAAAAAA");
    assert.throws(() => checkCertificate(damaged));
    assert.throws(() =>
      checkCertificate("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----")
    );
    assert.equal(checkKeyPair(damaged, "PRIVATE KEY", ca.key), "certificate");
    const brokenKey = "-----BEGIN PRIVATE KEY-----\nMAMCAQA=\n-----END PRIVATE KEY-----";
    assert.equal(checkKeyPair(ca.cert, "PRIVATE KEY", brokenKey), "key");
    assert.equal(checkKeyPair(ca.cert, "PRIVATE KEY", other.key), "mismatch");
    const sec1 = createPrivateKey(other.key).export({ type: "sec1", format: "pem" }) as string;
    assert.equal(checkKeyPair(ca.cert, "EC PRIVATE KEY", sec1), "mismatch");
  });

  it("reads RSA keys in PKCS #1 and PKCS #8 (of another certificate: a mismatch)", async () => {
    const ca = await createCertificateAuthority("test-ca");
    const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const pkcs1 = privateKey.export({ type: "pkcs1", format: "pem" }) as string;
    const pkcs8 = privateKey.export({ type: "pkcs8", format: "pem" }) as string;
    assert.equal(checkKeyPair(ca.cert, "RSA PRIVATE KEY", pkcs1), "mismatch");
    assert.equal(checkKeyPair(ca.cert, "PRIVATE KEY", pkcs8), "mismatch");
  });
});

describe("TCP under the forwarder", () => {
  it("pipes both ways with backpressure, and closes both sides once one ends", async () => {
    // An echo server and a relay in front of it: the forwarder's shape.
    const echo = await listenTcp(0, "127.0.0.1", (socket) => {
      socket.on("error", () => {});
      socket.pipe(socket);
    });
    const echoPort = (echo.address() as { port: number }).port;
    const closed: Promise<void>[] = [];
    const relay = await listenTcp(0, "127.0.0.1", (client) => {
      const upstream = connectTcp(echoPort, "127.0.0.1");
      upstream.once("connect", () => client.pipe(upstream));
      upstream.pipe(client);
      client.on("error", () => upstream.destroy());
      upstream.on("error", () => client.destroy());
      for (const socket of [client, upstream]) {
        closed.push(new Promise((resolve) => socket.on("close", () => resolve())));
      }
    });
    const relayPort = (relay.address() as { port: number }).port;
    const client = connectTcp(relayPort, "127.0.0.1");
    client.on("error", () => {});
    await new Promise<void>((resolve) => client.once("connect", () => resolve()));
    const big = new Uint8Array(300_000).map((_, i) => i & 0xff);
    let received = 0;
    let mismatch = -1;
    const all = new Promise<void>((resolve) => {
      client.on("data", (chunk) => {
        for (let i = 0; i < chunk.length; i++) {
          if (mismatch < 0 && chunk[i] !== ((received + i) & 0xff)) mismatch = received + i;
        }
        received += chunk.length;
        if (received >= big.length) resolve();
      });
    });
    client.resume();
    client.write(big);
    await all;
    assert.equal(received, big.length);
    assert.equal(mismatch, -1);
    client.end();
    await Promise.all(closed);
    await new Promise<void>((resolve) => relay.close(() => resolve()));
    await new Promise<void>((resolve) => echo.close(() => resolve()));
  });
});

/** The static imports of a TypeScript module: relative paths and `node:` specifiers. */
function staticImports(source: string): { relative: string[]; node: string[] } {
  const relative: string[] = [];
  const node: string[] = [];
  const pattern = /^(?:import|export)\s+(type\s+)?(?:[^"';]*?\sfrom\s+)?"([^"]+)";/gms;
  for (const match of source.matchAll(pattern)) {
    if (match[1]) continue; // `import type` is erased
    const specifier = match[2];
    if (specifier.startsWith("node:")) node.push(specifier);
    else if (specifier.startsWith(".")) relative.push(specifier);
  }
  return { relative, node };
}

describe("the scaffold's operator on Deno", () => {
  it("loads no node: module at start (each would start Deno's Node layer)", () => {
    const root = new URL("../../", import.meta.url);
    const roots = [
      "mod.ts",
      "lib/leaderelection/mod.ts",
      "lib/manager/mod.ts",
      "lib/webhook/mod.ts",
    ];
    // Loaded on Node only (serve.ts and transport.ts import them dynamically there).
    const nodeOnly = new Set(["lib/kube/transport_node.ts", "lib/server/serve_node.ts"]);
    const seen = new Set<string>();
    const found: string[] = [];
    const queue = [...roots];
    while (queue.length > 0) {
      const file = queue.pop()!;
      if (seen.has(file) || nodeOnly.has(file)) continue;
      seen.add(file);
      const source = readTextFileSync(new URL(file, root).pathname);
      const { relative, node } = staticImports(source);
      for (const specifier of node) found.push(`${file}: ${specifier}`);
      for (const specifier of relative) {
        queue.push(new URL(specifier, new URL(file, root)).pathname.slice(root.pathname.length));
      }
    }
    assert.ok(seen.size > 50, `walked ${seen.size} modules`);
    assert.deepEqual(found, []);
  });
});
