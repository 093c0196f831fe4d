// The webhook server on its own, over real TLS on loopback (no API server): serving by path,
// 4xx for malformed and oversized bodies while it keeps serving, a certificate replaced on disk
// while requests flow, readiness, and the metric families fed by real requests.
import { after, before, describe, it } from "node:test";
import { Buffer } from "node:buffer";
import { spawn } from "node:child_process";
import tls from "node:tls";
import assert from "node:assert/strict";
import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { Registry } from "../../lib/metrics/registry.ts";
import { type CertificateAuthority, createCertificateAuthority } from "../../lib/testing/certs.ts";
import { admissionHandler, allowed } from "../../lib/webhook/admission.ts";
import { WebhookServer } from "../../lib/webhook/server.ts";
import { eventually } from "../support/eventually.ts";
import { tlsFetch } from "../support/tls_fetch.ts";
import { CONFIGMAP_REVIEW } from "../support/admission.ts";

const HOOK_TIMEOUT = { timeout: 60_000 };
const T = { timeout: 60_000 };

let dir: string;
let ca1: CertificateAuthority;
let ca2: CertificateAuthority;

/** Writes a serving certificate of `ca` into `dir`, each file replaced atomically. */
async function writeServing(ca: CertificateAuthority): Promise<void> {
  const pair = await ca.issueServing({
    commonName: "localhost",
    dnsNames: ["localhost"],
    ips: ["127.0.0.1"],
  });
  writeFileSync(join(dir, "tls.key.tmp"), pair.key, { mode: 0o600 });
  writeFileSync(join(dir, "tls.crt.tmp"), pair.cert);
  renameSync(join(dir, "tls.key.tmp"), join(dir, "tls.key"));
  renameSync(join(dir, "tls.crt.tmp"), join(dir, "tls.crt"));
}

function post(body: BodyInit, type = "application/json"): RequestInit {
  return { method: "POST", headers: { "content-type": type }, body };
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "rudder-webhook-server-"));
  ca1 = await createCertificateAuthority("webhook-test-ca-1");
  ca2 = await createCertificateAuthority("webhook-test-ca-2");
}, HOOK_TIMEOUT);

after(() => {
  rmSync(dir, { recursive: true, force: true });
}, HOOK_TIMEOUT);

describe("WebhookServer", () => {
  let server: WebhookServer;
  let registry: Registry;
  let stop: AbortController;
  let running: Promise<void>;

  before(async () => {
    await writeServing(ca1);
    registry = new Registry();
    server = new WebhookServer({
      host: "127.0.0.1",
      port: 0,
      certDir: dir,
      certPollInterval: 50,
      metricsRegistry: registry,
    });
    server.register("/validate-configmaps", admissionHandler(() => allowed(["looked at"])));
    assert.throws(() => server.startedChecker()(), /not serving/);
    stop = new AbortController();
    running = server.start(stop.signal);
    await server.started();
  }, HOOK_TIMEOUT);

  after(async () => {
    stop.abort();
    await running;
  }, HOOK_TIMEOUT);

  it("serves a registered path over HTTPS and reports ready", T, async () => {
    server.startedChecker()();
    const response = await tlsFetch(
      `${server.url}/validate-configmaps`,
      [ca1.cert],
      post(CONFIGMAP_REVIEW),
    );
    assert.equal(response.status, 200);
    const review = await response.json();
    assert.deepEqual(review.response, { uid: "u-1", allowed: true, warnings: ["looked at"] });
  });

  it("answers 4xx to malformed and oversized bodies and keeps serving", T, async () => {
    const url = `${server.url}/validate-configmaps`;
    const cases: [RequestInit, number][] = [
      [post("{{{"), 400],
      [post(JSON.stringify({ kind: "ConversionReview" })), 400],
      [post(JSON.stringify({ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview" })), 400],
      [post(CONFIGMAP_REVIEW, "text/plain"), 415],
      [post("x".repeat(8 * 1024 * 1024)), 413],
      [{ method: "GET" }, 405],
    ];
    for (const [init, status] of cases) {
      const response = await tlsFetch(url, [ca1.cert], init);
      assert.equal(response.status, status, `${init.method} ${String(init.body).slice(0, 20)}`);
    }
    assert.equal(
      (await tlsFetch(`${server.url}/nothing`, [ca1.cert], post(CONFIGMAP_REVIEW))).status,
      404,
    );
    assert.equal((await tlsFetch(url, [ca1.cert], post(CONFIGMAP_REVIEW))).status, 200);
  });

  it("counts requests by path and code in controller-runtime's families", T, async () => {
    const text = await registry.metrics();
    const total = (code: number) =>
      Number(
        text.match(
          new RegExp(
            `controller_runtime_webhook_requests_total\\{code="${code}",webhook="/validate-configmaps"\\} (\\d+)`,
          ),
        )?.[1] ?? 0,
      );
    assert.ok(total(200) >= 2, text);
    assert.ok(total(400) >= 3, text);
    assert.equal(total(413), 1);
    assert.match(
      text,
      /controller_runtime_webhook_requests_in_flight\{webhook="\/validate-configmaps"\} 0/,
    );
    assert.match(
      text,
      /controller_runtime_webhook_latency_seconds_bucket\{webhook="\/validate-configmaps",le="0.005"\}/,
    );
  });

  it("swaps in a certificate replaced on disk while requests flow, failing none", T, async () => {
    const url = `${server.url}/validate-configmaps`;
    const both = [ca1.cert, ca2.cert];
    let running = true;
    const failures: string[] = [];
    let sent = 0;
    const load = Array.from({ length: 3 }, async () => {
      while (running) {
        sent++;
        try {
          const response = await tlsFetch(url, both, post(CONFIGMAP_REVIEW));
          if (response.status !== 200) failures.push(`status ${response.status}`);
        } catch (err) {
          failures.push(String(err));
        }
      }
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await writeServing(ca2);
    await eventually(
      "new connections see the new certificate",
      async () => {
        try {
          return (await tlsFetch(url, [ca2.cert], post(CONFIGMAP_REVIEW))).status === 200;
        } catch {
          return false;
        }
      },
      20_000,
      50,
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    running = false;
    await Promise.all(load);
    assert.deepEqual(failures, []);
    assert.ok(sent > 5, `only ${sent} requests were sent`);
    await assert.rejects(tlsFetch(url, [ca1.cert], post(CONFIGMAP_REVIEW)));
  });

  it("keeps the current certificate while the files on disk do not load", T, async () => {
    const url = `${server.url}/validate-configmaps`;
    writeFileSync(
      join(dir, "tls.key.tmp"),
      "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    );
    renameSync(join(dir, "tls.key.tmp"), join(dir, "tls.key"));
    writeFileSync(
      join(dir, "tls.crt.tmp"),
      (await ca1.issueServing({ commonName: "x", ips: ["127.0.0.1"] })).cert,
    );
    renameSync(join(dir, "tls.crt.tmp"), join(dir, "tls.crt"));
    assert.equal(await server.reloadCertificate(), false);
    assert.equal((await tlsFetch(url, [ca2.cert], post(CONFIGMAP_REVIEW))).status, 200);
    await writeServing(ca2);
  });
});

describe("WebhookServer without certificates", () => {
  it("fails to start, naming the missing file", T, async () => {
    const empty = mkdtempSync(join(tmpdir(), "rudder-webhook-empty-"));
    try {
      const server = new WebhookServer({
        port: 0,
        certDir: empty,
        metricsRegistry: new Registry(),
      });
      await assert.rejects(server.start(new AbortController().signal), /tls\.crt/);
      await assert.rejects(server.started());
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

describe("WebhookServer stopping", () => {
  it(
    "answers the request in progress, then stops despite idle keep-alive connections",
    T,
    async () => {
      const stopDir = mkdtempSync(join(tmpdir(), "rudder-webhook-stop-"));
      try {
        const ca = await createCertificateAuthority("webhook-stop-ca");
        const pair = await ca.issueServing({ commonName: "localhost", ips: ["127.0.0.1"] });
        writeFileSync(join(stopDir, "tls.crt"), pair.cert);
        writeFileSync(join(stopDir, "tls.key"), pair.key);
        const server = new WebhookServer({
          host: "127.0.0.1",
          port: 0,
          certDir: stopDir,
          metricsRegistry: new Registry(),
        });
        let release!: () => void;
        const released = new Promise<void>((resolve) => (release = resolve));
        const entered = Promise.withResolvers<void>();
        server.register(
          "/slow",
          admissionHandler(async () => {
            entered.resolve();
            await released;
            return allowed();
          }),
        );
        server.register("/fast", admissionHandler(() => allowed()));
        const stop = new AbortController();
        const running = server.start(stop.signal);
        await server.started();
        // A keep-alive connection that stays open and idle after its request.
        const idle = tls.connect({
          host: "127.0.0.1",
          port: server.port!,
          ca: ca.cert,
          servername: "localhost",
          ALPNProtocols: ["http/1.1"],
        });
        const firstAnswer = new Promise<string>((resolve, reject) => {
          idle.once("data", (chunk) => resolve(String(chunk)));
          idle.once("error", reject);
        });
        await new Promise<void>((resolve) => idle.once("secureConnect", () => resolve()));
        idle.write(
          `POST /fast HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n` +
            `Content-Length: ${
              Buffer.byteLength(CONFIGMAP_REVIEW)
            }\r\nConnection: keep-alive\r\n\r\n${CONFIGMAP_REVIEW}`,
        );
        assert.match(await firstAnswer, /^HTTP\/1\.1 200/);
        const slow = tlsFetch(`${server.url}/slow`, [ca.cert], post(CONFIGMAP_REVIEW));
        await entered.promise; // the slow request is in progress
        const began = Date.now();
        stop.abort();
        setTimeout(release, 300);
        assert.equal((await slow).status, 200);
        await running;
        assert.ok(Date.now() - began < 5_000, `stopping took ${Date.now() - began} ms`);
        assert.throws(() => server.startedChecker()(), /not serving/);
        idle.destroy();
      } finally {
        rmSync(stopDir, { recursive: true, force: true });
      }
    },
  );
});

describe("WebhookServer in a process of its own", () => {
  it(
    "lets the process exit at once after a stop, with a replaced certificate still draining",
    T,
    async () => {
      const script = fileURLToPath(new URL("../fixtures/webhook_server_exit.ts", import.meta.url));
      const args = "Deno" in globalThis ? ["run", "-A", script] : [script];
      const began = Date.now();
      const { code, output } = await new Promise<{ code: number | null; output: string }>(
        (resolve, reject) => {
          const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
          let output = "";
          child.stdout!.on("data", (chunk) => (output += chunk));
          child.stderr!.on("data", (chunk) => (output += chunk));
          child.on("error", reject);
          child.on("close", (code) => resolve({ code, output }));
        },
      );
      assert.equal(code, 0, output);
      assert.match(output, /stopped/);
      assert.ok(Date.now() - began < 30_000, `the process took ${Date.now() - began} ms to exit`);
    },
  );
});
