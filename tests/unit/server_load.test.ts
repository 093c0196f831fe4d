// The load test of issue 25: certificates replaced 20 times while clients keep sending requests
// to a metrics-like HTTPServer and to the real WebhookServer, both reading one certificate
// directory. No request may fail, and every new certificate must be the one served after its
// swap. Loopback only; bounded in requests and time.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import tls from "node:tls";
import { createFetcher } from "../../lib/kube/transport.ts";
import { Counter } from "../../lib/metrics/metric.ts";
import { Registry } from "../../lib/metrics/registry.ts";
import { metricsApp } from "../../lib/metrics/server.ts";
import { CertWatcher, HTTPServer, type TLSPair } from "../../lib/server/mod.ts";
import { type CertificateAuthority, createCertificateAuthority } from "../../lib/util/certs.ts";
import { admissionHandler, allowed } from "../../lib/webhook/admission.ts";
import { WebhookServer } from "../../lib/webhook/server.ts";
import { CONFIGMAP_REVIEW } from "../support/admission.ts";

const SWAPS = 20;
/** Clients per server: half keep their connections, half open one per request. */
const CLIENTS = 4;
/** No client sends more than this, whatever the speed of the machine. */
const MAX_REQUESTS_PER_CLIENT = 10_000;
/** Milliseconds of requests around each swap, so that swaps happen under load. */
const PAUSE_MS = 100;

let dir: string;
let ca: CertificateAuthority;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "rudder-server-load-"));
  ca = await createCertificateAuthority("server-load-ca");
}, { timeout: 30_000 });

after(() => rmSync(dir, { recursive: true, force: true }));

/** Writes a new serving pair, each file replaced atomically, the key first. */
async function writeNewPair(): Promise<TLSPair> {
  const pair = await ca.issueServing({
    commonName: "localhost",
    dnsNames: ["localhost"],
    ips: ["127.0.0.1"],
  });
  writeFileSync(join(dir, "tls.key.tmp"), pair.key);
  writeFileSync(join(dir, "tls.crt.tmp"), pair.cert);
  renameSync(join(dir, "tls.key.tmp"), join(dir, "tls.key"));
  renameSync(join(dir, "tls.crt.tmp"), join(dir, "tls.crt"));
  return pair;
}

/** The SHA-256 fingerprint of the certificate a new connection to `port` is served. */
function servedFingerprint(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: "127.0.0.1", port, ca: ca.cert, servername: "localhost" });
    socket.once("secureConnect", () => {
      const fingerprint = socket.getPeerCertificate().fingerprint256;
      socket.end();
      resolve(fingerprint);
    });
    socket.once("error", reject);
  });
}

interface Tally {
  requests: number;
  failures: string[];
}

/** Sends requests until `running()` is false: on one kept connection pool, or a new one each time. */
async function client(
  send: (fetch: (url: string, init: RequestInit) => Promise<Response>) => Promise<void>,
  keepConnections: boolean,
  running: () => boolean,
  tally: Tally,
): Promise<void> {
  let fetcher = createFetcher({ caData: ca.cert });
  for (let i = 0; running() && i < MAX_REQUESTS_PER_CLIENT; i++) {
    if (!keepConnections) {
      fetcher.close();
      fetcher = createFetcher({ caData: ca.cert });
    }
    tally.requests++;
    try {
      await send((url, init) => fetcher.fetch(url, init));
    } catch (err) {
      tally.failures.push(err instanceof Error ? `${err.message} ${err.cause ?? ""}` : String(err));
    }
  }
  fetcher.close();
}

describe("serving under certificate swaps", () => {
  it(
    `fails no request of the metrics and webhook servers across ${SWAPS} certificate swaps`,
    { timeout: 60_000 },
    async () => {
      const first = await writeNewPair();
      const registry = new Registry();
      registry.register(new Counter({ name: "load_test_total", help: "something to scrape" }))
        .inc();
      const watcher = new CertWatcher({ certDir: dir, pollInterval: 60_000 });
      let metricsSwaps = 0;
      watcher.onChange(() => void metricsSwaps++);
      const metrics = new HTTPServer({
        name: "metrics",
        address: "127.0.0.1:0",
        handler: metricsApp(registry).fetch,
        tls: watcher,
      });
      const webhooks = new WebhookServer({
        host: "127.0.0.1",
        port: 0,
        certDir: dir,
        certPollInterval: 60_000,
        metricsRegistry: new Registry(),
      });
      webhooks.register("/validate", admissionHandler(() => allowed()));
      const stop = new AbortController();
      const runs = [metrics.start(stop.signal), webhooks.start(stop.signal)];
      const tallies = {
        metrics: { requests: 0, failures: [] },
        webhooks: { requests: 0, failures: [] },
      };
      const swapsServed = { metrics: 0, webhooks: 0 };
      let running = true;
      const clients: Promise<void>[] = [];
      try {
        await Promise.all([metrics.ready(), webhooks.ready()]);
        const fingerprint = new X509Certificate(first.cert).fingerprint256;
        assert.equal(await servedFingerprint(metrics.port!), fingerprint);
        assert.equal(await servedFingerprint(webhooks.port!), fingerprint);

        const scrape = async (fetch: (url: string, init: RequestInit) => Promise<Response>) => {
          const response = await fetch(`${metrics.url}/metrics`, {});
          const text = await response.text();
          if (response.status !== 200 || !text.includes("load_test_total 1")) {
            throw new Error(`metrics answered ${response.status}`);
          }
        };
        const review = async (fetch: (url: string, init: RequestInit) => Promise<Response>) => {
          const response = await fetch(`${webhooks.url}/validate`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: CONFIGMAP_REVIEW,
          });
          const answer = await response.json();
          if (response.status !== 200 || answer.response?.allowed !== true) {
            throw new Error(`the webhook answered ${response.status}`);
          }
        };
        for (let i = 0; i < CLIENTS; i++) {
          const keep = i % 2 === 0;
          clients.push(client(scrape, keep, () => running, tallies.metrics));
          clients.push(client(review, keep, () => running, tallies.webhooks));
        }

        for (let swap = 0; swap < SWAPS; swap++) {
          await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
          const pair = await writeNewPair();
          // fs.watch may have taken the pair already; then there is nothing new to reload.
          await Promise.all([watcher.reload(), webhooks.reloadCertificate()]);
          const expected = new X509Certificate(pair.cert).fingerprint256;
          if (await servedFingerprint(metrics.port!) === expected) swapsServed.metrics++;
          if (await servedFingerprint(webhooks.port!) === expected) swapsServed.webhooks++;
        }
        const sent = tallies.metrics.requests + tallies.webhooks.requests;
        await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
        const last = tallies.metrics.requests + tallies.webhooks.requests;
        assert.ok(last > sent, "requests still flowed after the last swap");
      } finally {
        running = false;
        await Promise.all(clients);
        stop.abort();
        await Promise.all(runs);
      }
      console.log(
        `certificate swaps under load: metrics ${tallies.metrics.requests} requests, ` +
          `${swapsServed.metrics} swaps served, ${tallies.metrics.failures.length} failures; ` +
          `webhooks ${tallies.webhooks.requests} requests, ${swapsServed.webhooks} swaps served, ` +
          `${tallies.webhooks.failures.length} failures`,
      );
      assert.deepEqual(tallies.metrics.failures, []);
      assert.deepEqual(tallies.webhooks.failures, []);
      assert.equal(swapsServed.metrics, SWAPS);
      assert.equal(swapsServed.webhooks, SWAPS);
      assert.equal(metricsSwaps, SWAPS, "the metrics watcher took each new pair once");
      assert.ok(tallies.metrics.requests > SWAPS, `only ${tallies.metrics.requests} scrapes`);
      assert.ok(tallies.webhooks.requests > SWAPS, `only ${tallies.webhooks.requests} reviews`);
    },
  );
});
