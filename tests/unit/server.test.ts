// The serving layer (lib/server): bind addresses, CertWatcher and HTTPServer.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { connect as tlsConnect } from "node:tls";
import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CertWatcher, HTTPServer, parseAddress, type TLSPair } from "../../lib/server/mod.ts";
import { FakeClock } from "../../lib/testing/fake_clock.ts";
import { type CertificateAuthority, createCertificateAuthority } from "../../lib/util/certs.ts";
import { eventually } from "../support/eventually.ts";
import { captureLogs } from "../support/logs.ts";
import { fetchTrusting } from "../support/tls.ts";

const T = { timeout: 30_000 };
const HOSTS = { commonName: "localhost", dnsNames: ["localhost"], ips: ["127.0.0.1"] };

let ca: CertificateAuthority;
let other: CertificateAuthority;

before(async () => {
  ca = await createCertificateAuthority("server-test-ca");
  other = await createCertificateAuthority("server-test-other-ca");
}, T);

/** A fresh directory, removed after the test. */
function tempDir(): { dir: string; [Symbol.dispose](): void } {
  const dir = mkdtempSync(join(tmpdir(), "rudder-server-"));
  return { dir, [Symbol.dispose]: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Writes `pair` into `dir`, each file replaced atomically, key first. */
function write(dir: string, pair: Partial<TLSPair>): void {
  for (const [name, text] of [["tls.key", pair.key], ["tls.crt", pair.cert]] as const) {
    if (text === undefined) continue;
    writeFileSync(join(dir, `${name}.tmp`), text);
    renameSync(join(dir, `${name}.tmp`), join(dir, name));
  }
}

/** Starts `server`; returns the function that stops it and waits. */
async function run(server: HTTPServer): Promise<() => Promise<void>> {
  const stop = new AbortController();
  const running = server.start(stop.signal);
  running.catch(() => {});
  await server.ready();
  return async () => {
    stop.abort();
    await running;
  };
}

describe("parseAddress", () => {
  it("splits host:port, :port, port and [v6]:port", () => {
    assert.deepEqual(parseAddress(":8080"), { hostname: "0.0.0.0", port: 8080 });
    assert.deepEqual(parseAddress("127.0.0.1:0"), { hostname: "127.0.0.1", port: 0 });
    assert.deepEqual(parseAddress("[::1]:9443"), { hostname: "::1", port: 9443 });
    assert.deepEqual(parseAddress("8081"), { hostname: "0.0.0.0", port: 8081 });
    assert.throws(() => parseAddress("localhost"), /invalid bind address "localhost"/);
    assert.throws(() => parseAddress(":99999"), /port too large/);
  });
});

describe("CertWatcher", () => {
  it("refuses to load a pair, naming the file and the problem and never the key", T, async () => {
    using tmp = tempDir();
    const watcher = new CertWatcher({ certDir: tmp.dir });
    const good = await ca.issueServing(HOSTS);
    const crt = join(tmp.dir, "tls.crt").replace(/[.]/g, "\\.");
    const key = join(tmp.dir, "tls.key").replace(/[.]/g, "\\.");
    await assert.rejects(
      watcher.load(),
      new RegExp(`cannot read the TLS certificate ${crt} \\(ENOENT\\)`),
    );
    write(tmp.dir, { cert: good.cert });
    await assert.rejects(watcher.load(), new RegExp(`cannot read the TLS key ${key} \\(ENOENT\\)`));
    write(tmp.dir, { cert: "not a certificate", key: good.key });
    await assert.rejects(watcher.load(), new RegExp(`the TLS certificate ${crt} holds no PEM`));
    write(tmp.dir, { cert: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n" });
    await assert.rejects(watcher.load(), new RegExp(`the TLS certificate ${crt} cannot be parsed`));
    const brokenKey = "-----BEGIN PRIVATE KEY-----\nc2VjcmV0IGtleQ==\n-----END PRIVATE KEY-----\n";
    write(tmp.dir, { cert: good.cert, key: brokenKey });
    await assert.rejects(watcher.load(), (err: Error) => {
      assert.match(err.message, new RegExp(`the TLS key ${key} cannot be parsed`));
      assert.ok(!err.message.includes("c2VjcmV0IGtleQ"), err.message);
      return true;
    });
    write(tmp.dir, { key: (await other.issueServing(HOSTS)).key });
    await assert.rejects(
      watcher.load(),
      new RegExp(`the TLS key ${key} is not the key of the certificate ${crt}`),
    );
    assert.equal(watcher.current(), undefined);
    write(tmp.dir, good);
    assert.deepEqual(await watcher.load(), good);
    assert.deepEqual(watcher.current(), good);
  });

  it(
    "keeps the last good pair through bad ones, logging why, and takes a good new one once",
    T,
    async () => {
      using tmp = tempDir();
      const first = await ca.issueServing(HOSTS);
      write(tmp.dir, first);
      const watcher = new CertWatcher({ certDir: tmp.dir });
      await watcher.load();
      const taken: TLSPair[] = [];
      watcher.onChange((pair) => void taken.push(pair));
      const logs = await captureLogs();
      try {
        assert.equal(await watcher.reload(), false, "unchanged files are no new pair");
        const second = await ca.issueServing(HOSTS);
        write(tmp.dir, { cert: second.cert }); // the key not yet written
        assert.equal(await watcher.reload(), false);
        assert.deepEqual(watcher.current(), first);
        assert.ok(
          logs.records.some((r) =>
            r.level === "warning" &&
            /is not the key of the certificate/.test(String(r.properties.reason))
          ),
        );
        write(tmp.dir, { key: second.key });
        assert.equal(await watcher.reload(), true);
        assert.equal(await watcher.reload(), false);
        assert.deepEqual(taken, [second]);
        assert.deepEqual(watcher.current(), second);
        const logged = JSON.stringify(logs.records.map((r) => [r.message, r.properties]));
        assert.ok(!logged.includes(second.key.slice(40, 80)), "a key's text is never logged");
      } finally {
        await logs.stop();
      }
    },
  );

  it("shares one check among concurrent reloads", T, async () => {
    using tmp = tempDir();
    write(tmp.dir, await ca.issueServing(HOSTS));
    const watcher = new CertWatcher({ certDir: tmp.dir });
    await watcher.load();
    let calls = 0;
    const unsubscribe = watcher.onChange(() => void calls++);
    write(tmp.dir, await ca.issueServing(HOSTS));
    assert.deepEqual(await Promise.all([watcher.reload(), watcher.reload(), watcher.reload()]), [
      true,
      true,
      true,
    ]);
    assert.equal(calls, 1);
    unsubscribe();
    write(tmp.dir, await ca.issueServing(HOSTS));
    assert.equal(await watcher.reload(), true);
    assert.equal(calls, 1, "an unsubscribed listener is not called");
  });

  it("keeps the last good pair when a listener cannot take the new one", T, async () => {
    using tmp = tempDir();
    const first = await ca.issueServing(HOSTS);
    write(tmp.dir, first);
    const watcher = new CertWatcher({ certDir: tmp.dir });
    await watcher.load();
    watcher.onChange(() => Promise.reject(new Error("cannot serve it")));
    write(tmp.dir, await ca.issueServing(HOSTS));
    assert.equal(await watcher.reload(), false);
    assert.deepEqual(watcher.current(), first);
  });

  it("once started, takes a new pair written to the directory, until stopped", T, async () => {
    using tmp = tempDir();
    write(tmp.dir, await ca.issueServing(HOSTS));
    const clock = new FakeClock();
    const watcher = new CertWatcher({ certDir: tmp.dir, pollInterval: 10_000, clock });
    const taken: TLSPair[] = [];
    watcher.onChange((pair) => void taken.push(pair));
    const stop = new AbortController();
    const running = watcher.start(stop.signal);
    await eventually("the first pair is loaded", () => watcher.current() !== undefined);
    for (let round = 1; round <= 2; round++) {
      const next = await ca.issueServing(HOSTS);
      write(tmp.dir, next);
      // The directory's watch may take it at once; the poll does at the latest.
      clock.advance(10_000);
      await eventually(`new pair ${round} is taken`, () => taken.length === round, 10_000);
      assert.deepEqual(watcher.current(), next);
    }
    stop.abort();
    await running;
    write(tmp.dir, await ca.issueServing(HOSTS));
    clock.advance(30_000);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(taken.length, 2, "nothing is taken after the stop");
  });

  it("once loaded, starts and keeps watching though the files are bad for a while", T, async () => {
    using tmp = tempDir();
    const first = await ca.issueServing(HOSTS);
    write(tmp.dir, first);
    const clock = new FakeClock();
    const watcher = new CertWatcher({ certDir: tmp.dir, pollInterval: 10_000, clock });
    await watcher.load();
    write(tmp.dir, { key: (await other.issueServing(HOSTS)).key });
    const stop = new AbortController();
    const running = watcher.start(stop.signal);
    const next = await ca.issueServing(HOSTS);
    write(tmp.dir, next);
    clock.advance(10_000);
    await eventually("the good pair is taken", () => watcher.current()?.cert === next.cert);
    stop.abort();
    await running;
  });

  it("does not start without a good pair", T, async () => {
    using tmp = tempDir();
    const watcher = new CertWatcher({ certDir: tmp.dir, certName: "c.pem" });
    await assert.rejects(watcher.start(new AbortController().signal), /c\.pem \(ENOENT\)/);
  });
});

describe("HTTPServer", () => {
  it("serves plain HTTP on a free loopback port until stopped", T, async () => {
    const server = new HTTPServer({
      name: "hello",
      address: "127.0.0.1:0",
      handler: (request) => new Response(new URL(request.url).pathname),
    });
    assert.equal(server.url, undefined);
    const stop = await run(server);
    const url = server.url!;
    assert.ok(server.port! > 0);
    assert.equal(server.hostname, "127.0.0.1");
    assert.equal(url, `http://127.0.0.1:${server.port}`);
    assert.equal(await (await fetch(`${url}/hello`)).text(), "/hello");
    await stop();
    await assert.rejects(fetch(`${url}/hello`));
  });

  it("serves HTTPS with a fixed pair", T, async () => {
    const server = new HTTPServer({
      name: "hello",
      address: "127.0.0.1:0",
      handler: () => new Response("hello"),
      tls: await ca.issueServing(HOSTS),
    });
    const stop = await run(server);
    try {
      assert.match(server.url!, /^https:\/\/127\.0\.0\.1:\d+$/);
      assert.deepEqual(await fetchTrusting(ca.cert, server.url!), { status: 200, text: "hello" });
      await assert.rejects(fetchTrusting(other.cert, server.url!));
    } finally {
      await stop();
    }
  });

  it("speaks TLS 1.2 and 1.3 and refuses 1.1, with a fixed pair and a watched one", T, async () => {
    using tmp = tempDir();
    const pair = await ca.issueServing(HOSTS);
    write(tmp.dir, pair);
    for (const tls of [pair, new CertWatcher({ certDir: tmp.dir })]) {
      const server = new HTTPServer({
        name: "hello",
        address: "127.0.0.1:0",
        handler: () => new Response("hello"),
        tls,
        // Deno's client cannot offer TLS 1.1; the connection it leaves open would hold the stop.
        shutdownTimeout: 1_000,
      });
      const stop = await run(server);
      try {
        const handshake = (version: "TLSv1.1" | "TLSv1.2" | "TLSv1.3") =>
          new Promise<string>((resolve, reject) => {
            const socket = tlsConnect({
              host: "127.0.0.1",
              port: server.port!,
              ca: ca.cert,
              servername: "localhost",
              minVersion: version,
              maxVersion: version,
            });
            socket.once("secureConnect", () => {
              resolve(socket.getProtocol() ?? "");
              socket.end();
            });
            socket.once("error", reject);
          });
        assert.equal(await handshake("TLSv1.2"), "TLSv1.2");
        assert.equal(await handshake("TLSv1.3"), "TLSv1.3");
        await assert.rejects(handshake("TLSv1.1"));
      } finally {
        await stop();
      }
    }
  });

  it("answers 500 when the handler throws, and goes on serving", T, async () => {
    const server = new HTTPServer({
      name: "hello",
      address: "127.0.0.1:0",
      handler: (request) => {
        if (request.url.endsWith("/fail")) throw new Error("boom");
        return new Response("ok");
      },
    });
    const stop = await run(server);
    try {
      assert.equal(
        (await fetch(`${server.url}/fail`).then((r) => r.text().then(() => r))).status,
        500,
      );
      assert.equal(await (await fetch(`${server.url}/`)).text(), "ok");
    } finally {
      await stop();
    }
  });

  it(
    "rejects start and ready naming itself and the address when the port is taken",
    T,
    async () => {
      for (const tls of [undefined, "watcher"] as const) {
        using tmp = tempDir();
        write(tmp.dir, await ca.issueServing(HOSTS));
        const taken = net.createServer();
        await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
        const port = (taken.address() as net.AddressInfo).port;
        try {
          const server = new HTTPServer({
            name: "metrics",
            address: `127.0.0.1:${port}`,
            handler: () => new Response("ok"),
            tls: tls ? new CertWatcher({ certDir: tmp.dir }) : undefined,
          });
          const expected = new RegExp(`cannot serve metrics on 127\\.0\\.0\\.1:${port}: `);
          await assert.rejects(server.start(new AbortController().signal), expected);
          await assert.rejects(server.ready(), expected);
          assert.equal(server.url, undefined);
        } finally {
          await new Promise((resolve) => taken.close(resolve));
        }
      }
    },
  );

  it("rejects ready when the certificate does not load, naming the file", T, async () => {
    using tmp = tempDir();
    const server = new HTTPServer({
      name: "webhooks",
      address: "127.0.0.1:0",
      handler: () => new Response("ok"),
      tls: new CertWatcher({ certDir: tmp.dir }),
    });
    const running = server.start(new AbortController().signal);
    await assert.rejects(
      server.ready(),
      /cannot serve webhooks on 127\.0\.0\.1:0: cannot read the TLS certificate \S+tls\.crt/,
    );
    await assert.rejects(running, /tls\.crt/);
  });

  it("rejects ready with the abort reason when its signal aborts first", T, async () => {
    const server = new HTTPServer({
      name: "x",
      address: "127.0.0.1:0",
      handler: () => new Response(),
    });
    const waiting = new AbortController();
    const ready = server.ready(waiting.signal);
    waiting.abort(new Error("gave up"));
    await assert.rejects(ready, /gave up/);
  });

  for (const kind of ["plain", "watched"] as const) {
    it(
      `stops gracefully (${kind}): refuses new connections, answers the request in flight`,
      T,
      async () => {
        using tmp = tempDir();
        write(tmp.dir, await ca.issueServing(HOSTS));
        let release!: () => void;
        const released = new Promise<void>((resolve) => (release = resolve));
        const entered = Promise.withResolvers<void>();
        const server = new HTTPServer({
          name: "slow",
          address: "127.0.0.1:0",
          handler: async (request) => {
            if (request.url.endsWith("/slow")) {
              entered.resolve();
              await released;
            }
            return new Response("done");
          },
          tls: kind === "watched" ? new CertWatcher({ certDir: tmp.dir }) : undefined,
        });
        const get = (path: string) =>
          kind === "watched"
            ? fetchTrusting(ca.cert, `${server.url}${path}`)
            : fetch(`${server.url}${path}`).then(async (r) => ({
              status: r.status,
              text: await r.text(),
            }));
        const stop = new AbortController();
        const running = server.start(stop.signal);
        await server.ready();
        const slow = get("/slow");
        await entered.promise;
        let stopped = false;
        running.then(() => (stopped = true));
        const began = Date.now();
        stop.abort();
        await new Promise((resolve) => setTimeout(resolve, 200));
        assert.equal(stopped, false, "the stop waits for the request in flight");
        await assert.rejects(get("/"), "a new connection is refused while stopping");
        release();
        assert.deepEqual(await slow, { status: 200, text: "done" });
        await running;
        assert.ok(Date.now() - began < 5_000, `stopping took ${Date.now() - began} ms`);
      },
    );
  }

  it("closes a request that outlives shutdownTimeout", T, async () => {
    const never = Promise.withResolvers<void>();
    const entered = Promise.withResolvers<void>();
    const server = new HTTPServer({
      name: "stuck",
      address: "127.0.0.1:0",
      handler: async () => {
        entered.resolve();
        await never.promise;
        return new Response("late");
      },
      shutdownTimeout: 200,
    });
    const stop = new AbortController();
    const running = server.start(stop.signal);
    await server.ready();
    const stuck = fetch(server.url!).then((r) => r.text());
    stuck.catch(() => {});
    await entered.promise;
    const began = Date.now();
    stop.abort();
    await running;
    // Deno cannot cut a graceful shutdown short: its server finishes in the background.
    assert.ok(Date.now() - began < 3_000, `stopping took ${Date.now() - began} ms`);
    never.resolve();
    await stuck.catch(() => {});
  });
});

describe("HTTPServer with a CertWatcher", () => {
  let dirHandle: ReturnType<typeof tempDir>;
  after(() => dirHandle?.[Symbol.dispose]());

  it(
    "serves the certificate of a directory and the new one after the files change",
    T,
    async () => {
      dirHandle = tempDir();
      const dir = dirHandle.dir;
      const write2 = (pair: Partial<TLSPair>) => {
        if (pair.cert) writeFileSync(join(dir, "cert.pem"), pair.cert);
        if (pair.key) writeFileSync(join(dir, "key.pem"), pair.key);
      };
      const third = await createCertificateAuthority("third-ca");
      write2(await ca.issueServing(HOSTS));
      const logs = await captureLogs();
      const server = new HTTPServer({
        name: "metrics",
        address: "127.0.0.1:0",
        handler: () => new Response("hello"),
        tls: new CertWatcher({
          certDir: dir,
          certName: "cert.pem",
          keyName: "key.pem",
          pollInterval: 50,
        }),
      });
      const stop = await run(server);
      const url = server.url!;
      try {
        assert.equal((await fetchTrusting(ca.cert, url)).text, "hello");
        await assert.rejects(fetchTrusting(other.cert, url));
        const secondPair = await other.issueServing(HOSTS);
        write2(secondPair);
        await eventually(
          "the new certificate is served",
          () => fetchTrusting(other.cert, url).then((r) => r.text === "hello", () => false),
        );
        // A key that cannot be parsed, then a certificate without its key (as while a Secret's
        // files are written one by one), keep the last good pair, and every request is answered.
        const steps: [Partial<TLSPair>, RegExp | undefined][] = [
          [{ key: "-----BEGIN PRIVATE KEY-----\nbroken\n" }, /key \S+key\.pem cannot be parsed/],
          [{ key: secondPair.key }, undefined],
          [
            { cert: (await third.issueServing(HOSTS)).cert },
            /key \S+key\.pem is not the key of the certificate \S+cert\.pem/,
          ],
        ];
        for (const [files, warning] of steps) {
          write2(files);
          for (let i = 0; i < 10; i++) {
            assert.equal((await fetchTrusting(other.cert, url)).text, "hello");
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
          if (warning) {
            await eventually(
              `the warning ${warning}`,
              () => logs.records.some((r) => warning.test(String(r.properties.reason))),
            );
          }
        }
        const logged = JSON.stringify(logs.records.map((r) => [r.message, r.properties]));
        assert.ok(!logged.includes("broken") && !logged.includes(secondPair.key.slice(40, 80)));
      } finally {
        await stop();
        await logs.stop();
      }
    },
  );
});
