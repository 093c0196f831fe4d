// Webhook certificates without a cluster: generation (v3, SANs, CA reuse), and the
// CertificateRotator against FakeClient — create, keep, renew before expiry (only on the
// leader, keeping the CA), files written atomically, CA injected where it differs.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { X509Certificate } from "node:crypto";
import { Secret, ValidatingWebhookConfiguration } from "../../lib/api/builtins.ts";
import { FakeClient } from "../../lib/testing/fake_client/mod.ts";
import { newInterceptedClient } from "../../lib/client/interceptor.ts";
import {
  certificateNotAfter,
  generateServingCertificates,
} from "../../lib/webhook/certificates.ts";
import {
  CertificateRotator,
  type CertificateRotatorOptions,
  webhookCertificatesFromEnv,
} from "../../lib/webhook/rotation.ts";

const T = { timeout: 30_000 };
const DAY = 24 * 3600_000;

describe("generateServingCertificates", () => {
  it("makes a v3 serving certificate for the names, signed by its CA", T, async () => {
    const made = await generateServingCertificates({
      dnsNames: ["svc.ns.svc"],
      ips: ["127.0.0.1"],
      validity: 10 * DAY,
    });
    const leaf = new X509Certificate(made.cert);
    const ca = new X509Certificate(made.caCert);
    assert.ok(leaf.verify(ca.publicKey));
    assert.equal(leaf.checkHost("svc.ns.svc"), "svc.ns.svc");
    assert.equal(leaf.checkIP("127.0.0.1"), "127.0.0.1");
    assert.equal(ca.ca, true);
    const days = (certificateNotAfter(made.cert).getTime() - Date.now()) / DAY;
    assert.ok(days > 9.9 && days < 10.01, `${days} days`);
    assert.match(made.key, /^-----BEGIN PRIVATE KEY-----/);
  });

  it("signs with a given CA and never outlives it", T, async () => {
    const first = await generateServingCertificates({
      dnsNames: ["a"],
      validity: DAY,
      caValidity: 2 * DAY,
    });
    const next = await generateServingCertificates({
      dnsNames: ["a"],
      validity: 30 * DAY,
      ca: { cert: first.caCert, key: first.caKey },
    });
    assert.equal(next.caCert, first.caCert);
    assert.ok(new X509Certificate(next.cert).verify(new X509Certificate(first.caCert).publicKey));
    assert.ok(certificateNotAfter(next.cert) <= certificateNotAfter(first.caCert));
  });
});

function setup(extra: Partial<CertificateRotatorOptions> = {}) {
  const client = new FakeClient({
    objects: [{
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingWebhookConfiguration",
      metadata: { name: "hooks" },
      webhooks: [{
        name: "v.example.com",
        admissionReviewVersions: ["v1"],
        sideEffects: "None",
        clientConfig: { service: { namespace: "ns", name: "svc", path: "/validate" } },
      }],
    }],
  });
  const certDir = mkdtempSync(join(tmpdir(), "rudder-rotator-"));
  const options: CertificateRotatorOptions = {
    client,
    namespace: "ns",
    secretName: "certs",
    dnsNames: ["svc.ns.svc"],
    certDir,
    validatingWebhookConfigurations: ["hooks", "missing"],
    ...extra,
  };
  const secret = async () => {
    const s = await client.get(Secret, { namespace: "ns", name: "certs" });
    return Object.fromEntries(
      Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64").toString()]),
    );
  };
  return { client, certDir, options, secret, done: () => rmSync(certDir, { recursive: true }) };
}

describe("CertificateRotator", () => {
  it("creates the Secret, writes the files and injects the CA", T, async () => {
    const { client, certDir, options, secret, done } = setup();
    try {
      await new CertificateRotator(options).ensure();
      const data = await secret();
      assert.equal(readFileSync(join(certDir, "tls.crt"), "utf8"), data["tls.crt"]);
      assert.equal(readFileSync(join(certDir, "tls.key"), "utf8"), data["tls.key"]);
      const hooks = await client.get(ValidatingWebhookConfiguration, { name: "hooks" });
      assert.equal(
        Buffer.from(hooks.webhooks![0].clientConfig.caBundle!, "base64").toString(),
        data["ca.crt"],
      );
    } finally {
      done();
    }
  });

  it("keeps a certificate that is not due, and a second replica uses the same", T, async () => {
    const { options, secret, certDir, done } = setup();
    const otherDir = mkdtempSync(join(tmpdir(), "rudder-rotator-"));
    try {
      await new CertificateRotator(options).ensure();
      const first = await secret();
      await new CertificateRotator({ ...options, certDir: otherDir }).ensure();
      assert.deepEqual(await secret(), first);
      assert.equal(
        readFileSync(join(otherDir, "tls.crt"), "utf8"),
        readFileSync(join(certDir, "tls.crt"), "utf8"),
      );
    } finally {
      done();
      rmSync(otherDir, { recursive: true });
    }
  });

  it("renews a certificate due for renewal on the leader only, keeping the CA", T, async () => {
    const { options, secret, certDir, done } = setup({ validity: 10 * DAY });
    try {
      await new CertificateRotator(options).ensure();
      const first = await secret();
      await new CertificateRotator({ ...options, renewBefore: 20 * DAY, isLeader: () => false })
        .ensure();
      assert.deepEqual(await secret(), first, "a follower does not renew");
      await new CertificateRotator({ ...options, renewBefore: 20 * DAY }).ensure();
      const renewed = await secret();
      assert.notEqual(renewed["tls.crt"], first["tls.crt"]);
      assert.equal(renewed["ca.crt"], first["ca.crt"]);
      assert.equal(readFileSync(join(certDir, "tls.crt"), "utf8"), renewed["tls.crt"]);
    } finally {
      done();
    }
  });

  it("replaces a CA near its end and injects the new one with the old", T, async () => {
    const { client, options, secret, done } = setup({ validity: 10 * DAY });
    try {
      await new CertificateRotator(options).ensure();
      const first = await secret();
      // The CA (made for 100 days) outlives a renewal only if it has validity + renewBefore left.
      await new CertificateRotator({ ...options, validity: 200 * DAY, renewBefore: 20 * DAY })
        .ensure();
      const renewed = await secret();
      assert.notEqual(renewed["ca.key"], first["ca.key"]);
      assert.ok(renewed["ca.crt"].endsWith(first["ca.crt"]), "the old CA stays in the bundle");
      const hooks = await client.get(ValidatingWebhookConfiguration, { name: "hooks" });
      assert.equal(
        Buffer.from(hooks.webhooks![0].clientConfig.caBundle!, "base64").toString(),
        renewed["ca.crt"],
      );
    } finally {
      done();
    }
  });

  it("does not inject on a follower", T, async () => {
    const { client, options, done } = setup();
    try {
      await new CertificateRotator({ ...options, isLeader: () => false }).ensure();
      const hooks = await client.get(ValidatingWebhookConfiguration, { name: "hooks" });
      assert.equal(hooks.webhooks![0].clientConfig.caBundle, undefined);
    } finally {
      done();
    }
  });

  it(
    "as a runnable: is ready once the files are written, and its start fails when the first check does",
    T,
    async () => {
      const { certDir, options, done } = setup();
      try {
        const rotator = new CertificateRotator(options);
        const stop = new AbortController();
        const running = rotator.start(stop.signal);
        await rotator.ready(stop.signal);
        assert.match(readFileSync(join(certDir, "tls.crt"), "utf8"), /BEGIN CERTIFICATE/);
        stop.abort();
        await running;

        const forbidden = newInterceptedClient(new FakeClient(), {
          get: () => Promise.reject(new Error("secrets is forbidden")),
        });
        const failing = new CertificateRotator({ ...options, client: forbidden });
        const waiting = new AbortController();
        const ready = failing.ready(waiting.signal);
        await assert.rejects(failing.start(new AbortController().signal), /forbidden/);
        waiting.abort();
        await assert.rejects(ready, "never ready after a failed start");
      } finally {
        done();
      }
    },
  );
});

describe("webhookCertificatesFromEnv", () => {
  it("reads what rudder manifests --cert-mode rudder puts in the Deployment", T, () => {
    assert.equal(webhookCertificatesFromEnv({}), undefined);
    assert.deepEqual(
      webhookCertificatesFromEnv({
        WEBHOOK_CERT_SECRET: "op-webhook-server-cert",
        WEBHOOK_CERT_NAMESPACE: "op-system",
        WEBHOOK_SERVICE: "op-webhook-service",
        WEBHOOK_MUTATING_CONFIGURATIONS: "",
        WEBHOOK_VALIDATING_CONFIGURATIONS: "op-validating-webhook-configuration",
        WEBHOOK_CONVERSION_CRDS: "a.example.com, b.example.com",
      }),
      {
        namespace: "op-system",
        secretName: "op-webhook-server-cert",
        dnsNames: [
          "op-webhook-service.op-system.svc",
          "op-webhook-service.op-system.svc.cluster.local",
        ],
        mutatingWebhookConfigurations: [],
        validatingWebhookConfigurations: ["op-validating-webhook-configuration"],
        crds: ["a.example.com", "b.example.com"],
      },
    );
    assert.throws(
      () => webhookCertificatesFromEnv({ WEBHOOK_CERT_SECRET: "x" }),
      /WEBHOOK_SERVICE/,
    );
  });
});
