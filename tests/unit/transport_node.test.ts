// The Node adapter of the transport (lib/kube/transport_node.ts) against loopback servers:
// proxies from the environment and from proxy-url, watch bodies that stream line by line,
// bodies decoded from gzip, and the TLS settings (server name, client certificate, skipping
// verification), through Rudder's HTTP/1.1 client and through node:https (RUDDER_NODE_HTTPS=1).
// It is what the transport uses on Node only, so it runs there.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { TLSSocket } from "node:tls";
import process from "node:process";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { Buffer } from "node:buffer";
import { gzipSync } from "node:zlib";
import type { Fetcher } from "../../lib/kube/fetcher.ts";
import { createNodeFetcher as newNodeFetcher } from "../../lib/kube/transport_node.ts";
import { createCertificateAuthority } from "../../lib/testing/certs.ts";

const onNode = !("Deno" in globalThis) && !("Bun" in globalThis);
const T = { timeout: 30_000, skip: onNode ? false : "the Node adapter is what runs on Node" };

/** Starts `server` on loopback; resolves its port. */
async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as { port: number }).port;
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

for (const mode of ["the HTTP/1.1 client", "node:https"] as const) {
  describe(`the Node transport adapter, through ${mode}`, () => {
    /** A fetcher that sends through this mode (RUDDER_NODE_HTTPS is read as it is made). */
    function createNodeFetcher(settings: Parameters<typeof newNodeFetcher>[0]): Fetcher {
      const saved = process.env.RUDDER_NODE_HTTPS;
      if (mode === "node:https") process.env.RUDDER_NODE_HTTPS = "1";
      else delete process.env.RUDDER_NODE_HTTPS;
      try {
        return newNodeFetcher(settings);
      } finally {
        if (saved === undefined) delete process.env.RUDDER_NODE_HTTPS;
        else process.env.RUDDER_NODE_HTTPS = saved;
      }
    }

    let proxy: Server;
    let proxyPort = 0;
    let origin: Server;
    let originPort = 0;
    /** The request targets the proxy was asked for. */
    const proxied: string[] = [];
    /** Lets the watch answer go on to its next line. */
    let nextLine: () => void = () => {};

    before(async () => {
      proxy = createServer((req, res) => {
        proxied.push(req.url ?? "");
        res.end(JSON.stringify({ via: "proxy" }));
      });
      proxyPort = await listen(proxy);
      origin = createServer((req, res) => {
        if (req.url?.startsWith("/watch?watch=true")) {
          res.writeHead(200, { "content-type": "application/json" });
          let line = 0;
          const send = () => {
            res.write(`{"line":${++line}}\n`);
            if (line === 3) res.end();
          };
          nextLine = send;
          send();
          return;
        }
        if (req.url === "/headers") {
          res.end(JSON.stringify({ names: req.rawHeaders.filter((_, i) => i % 2 === 0) }));
          return;
        }
        if (req.url === "/gzip") {
          res.writeHead(200, { "content-encoding": "gzip" });
          res.end(gzipSync(JSON.stringify({ compressed: true })));
          return;
        }
        res.end(JSON.stringify({ via: "direct" }));
      });
      originPort = await listen(origin);
    }, T);

    after(async () => {
      await close(proxy);
      await close(origin);
    }, T);

    /** Runs `body` with the proxy variables set to this test's proxy, then restores them. */
    async function withProxyEnv(body: () => Promise<void>): Promise<void> {
      const names = ["HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy"];
      const saved = names.map((name) => [name, process.env[name]] as const);
      for (const name of names) delete process.env[name];
      process.env.HTTP_PROXY = `http://127.0.0.1:${proxyPort}`;
      try {
        await body();
      } finally {
        for (const [name, value] of saved) {
          if (value === undefined) delete process.env[name];
          else process.env[name] = value;
        }
      }
    }

    it("sends through HTTP_PROXY from the environment, but not to a loopback host", T, async () => {
      await withProxyEnv(async () => {
        const fetcher = createNodeFetcher({});
        try {
          const remote = await fetcher.fetch("http://192.0.2.1:6443/version", {});
          assert.deepEqual(await remote.json(), { via: "proxy" });
          assert.deepEqual(proxied.splice(0), ["http://192.0.2.1:6443/version"]);
          const local = await fetcher.fetch(`http://127.0.0.1:${originPort}/version`, {});
          assert.deepEqual(await local.json(), { via: "direct" });
          assert.deepEqual(proxied, []);
        } finally {
          fetcher.close();
        }
      });
    });

    it("sends a request to a server without a proxy through the chosen client", T, async () => {
      const fetcher = createNodeFetcher({});
      try {
        const response = await fetcher.fetch(`http://127.0.0.1:${originPort}/headers`, {});
        // node:http spells the names it adds as Host and Connection; Rudder's client lower-cases.
        const names = (await response.json() as { names: string[] }).names;
        assert.deepEqual(
          names.filter((name) => name.toLowerCase() === "host"),
          [mode === "node:https" ? "Host" : "host"],
        );
      } finally {
        fetcher.close();
      }
    });

    it("sends everything through proxy-url, a loopback host too", T, async () => {
      const fetcher = createNodeFetcher({ proxyURL: `http://127.0.0.1:${proxyPort}` });
      try {
        const local = await fetcher.fetch(`http://127.0.0.1:${originPort}/version`, {});
        assert.deepEqual(await local.json(), { via: "proxy" });
        assert.deepEqual(proxied.splice(0), [`http://127.0.0.1:${originPort}/version`]);
      } finally {
        fetcher.close();
      }
    });

    it("hands a watch's lines over as they come, before the answer ends", T, async () => {
      const fetcher = createNodeFetcher({});
      try {
        const response = await fetcher.fetch(
          `http://127.0.0.1:${originPort}/watch?watch=true`,
          {},
        );
        const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
        const lines: string[] = [];
        let buffered = "";
        while (lines.length < 3) {
          const { done, value } = await reader.read();
          if (done) break;
          buffered += value;
          const complete = buffered.split("\n");
          buffered = complete.pop()!;
          lines.push(...complete);
          // The server writes the next line only once this one has arrived.
          if (complete.length > 0) nextLine();
        }
        assert.deepEqual(lines, ['{"line":1}', '{"line":2}', '{"line":3}']);
      } finally {
        fetcher.close();
      }
    });

    it(
      "lets go of a whole body's chunks once read, while a TLS connection is kept",
      T,
      async () => {
        // A collection the test can force: node:test passes no --expose-gc.
        setFlagsFromString("--expose-gc");
        const collect = runInNewContext("gc") as () => void;
        const arrayBuffers = async () => {
          for (let i = 0; i < 3; i++) {
            collect();
            await new Promise((resolve) => setImmediate(resolve));
          }
          return process.memoryUsage().arrayBuffers;
        };
        const ca = await createCertificateAuthority("node-adapter-ca");
        const serving = await ca.issueServing({ commonName: "api.test", dnsNames: ["api.test"] });
        // 8 MiB in 128 pieces, as a list page arrives: the client gets many chunks.
        const server = createTlsServer({ cert: serving.cert, key: serving.key }, (_req, res) => {
          res.writeHead(200, { "content-type": "application/json" });
          const piece = Buffer.alloc(64 * 1024, 0x61);
          for (let i = 0; i < 128; i++) res.write(piece);
          res.end();
        });
        const port = await new Promise<number>((resolve) =>
          server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port))
        );
        const fetcher = createNodeFetcher({ caData: ca.cert, serverName: "api.test" });
        try {
          const before = await arrayBuffers();
          const read = async () => {
            const response = await fetcher.fetch(`https://127.0.0.1:${port}/large`, {});
            return (await response.arrayBuffer()).byteLength;
          };
          assert.equal(await read(), 8 * 2 ** 20);
          // The connection idles in the agent's pool for the next request.
          const held = (await arrayBuffers()) - before;
          assert.ok(held < 2 * 2 ** 20, `${held} bytes of array buffers still held`);
        } finally {
          fetcher.close();
          server.closeAllConnections();
          await new Promise<void>((resolve) => server.close(() => resolve()));
        }
      },
    );

    it("decodes a gzip body when the caller asked for one", T, async () => {
      const fetcher = createNodeFetcher({});
      try {
        const response = await fetcher.fetch(`http://127.0.0.1:${originPort}/gzip`, {
          headers: { "accept-encoding": "gzip" },
        });
        assert.deepEqual(await response.json(), { compressed: true });
      } finally {
        fetcher.close();
      }
    });

    it("rejects with the signal's reason when aborted before the answer", T, async () => {
      const fetcher = createNodeFetcher({});
      const controller = new AbortController();
      const reason = new Error("stop");
      try {
        const pending = fetcher.fetch(`http://127.0.0.1:${originPort}/watch?watch=true`, {
          signal: controller.signal,
        });
        controller.abort(reason);
        await assert.rejects(pending, (err) => err === reason);
      } finally {
        fetcher.close();
      }
    });

    it(
      "verifies the server against tls-server-name, sends the client certificate, and skips " +
        "verification only when told",
      T,
      async () => {
        const ca = await createCertificateAuthority("node-adapter-ca");
        const serving = await ca.issueServing({ commonName: "api.test", dnsNames: ["api.test"] });
        const client = await ca.issueClient({ commonName: "operator" });
        const server = createTlsServer({
          cert: serving.cert,
          key: serving.key,
          ca: ca.cert,
          requestCert: true,
          rejectUnauthorized: false,
        }, (req, res) => {
          const peer = (req.socket as TLSSocket).getPeerCertificate();
          res.end(JSON.stringify({ client: peer?.subject?.CN ?? null }));
        });
        const port = await new Promise<number>((resolve) =>
          server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port))
        );
        const url = `https://127.0.0.1:${port}/version`;
        const attempt = async (settings: Parameters<typeof createNodeFetcher>[0]) => {
          const fetcher = createNodeFetcher(settings);
          try {
            return await (await fetcher.fetch(url, {})).json();
          } finally {
            fetcher.close();
          }
        };
        try {
          // The certificate names api.test, not 127.0.0.1.
          await assert.rejects(attempt({ caData: ca.cert }), /altnames|ALTNAME|does not match/i);
          assert.deepEqual(
            await attempt({ caData: ca.cert, serverName: "api.test", ...client }),
            { client: "operator" },
          );
          assert.deepEqual(
            await attempt({ serverName: "api.test" }).catch(() => "refused"),
            "refused",
          );
          assert.deepEqual(await attempt({ insecureSkipTLSVerify: true }), { client: null });
        } finally {
          server.closeAllConnections();
          await new Promise<void>((resolve) => server.close(() => resolve()));
        }
      },
    );
  });
}
