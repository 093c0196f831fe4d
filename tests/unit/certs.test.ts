// The certificates of lib/util/certs.ts: a CA signs serving and client certificates (v3, the
// right usages and names), is loaded again from its PEM pair, and nothing it signs outlives it
// (expiries read with the webhook's certificateNotAfter).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { certificateNotAfter } from "../../lib/webhook/certificates.ts";
import {
  createCertificateAuthority,
  loadCertificateAuthority,
  selfSignedServingCertificate,
} from "../../lib/util/certs.ts";

await import("reflect-metadata"); // before @peculiar/x509, whose tsyringe needs it
const x509 = await import("@peculiar/x509");

const T = { timeout: 30_000 };
const DAY = 24 * 3600_000;

/** The extended key usages of a PEM certificate. */
function usages(pem: string): string[] {
  const cert = new x509.X509Certificate(pem);
  return [...(cert.getExtension(x509.ExtendedKeyUsageExtension)?.usages ?? [])].map(String);
}

function daysLeft(pem: string): number {
  return (certificateNotAfter(pem).getTime() - Date.now()) / DAY;
}

describe("certificate authorities", () => {
  it("sign serving and client certificates valid as long as the CA by default", T, async () => {
    const ca = await createCertificateAuthority("test-ca, with a comma", 30);
    const caCert = new X509Certificate(ca.cert);
    assert.equal(caCert.ca, true);
    const caName = new x509.X509Certificate(ca.cert).subjectName;
    assert.deepEqual(caName.getField("CN"), ["test-ca, with a comma"]); // escaped, not split
    assert.equal(ca.notAfter.getTime(), certificateNotAfter(ca.cert).getTime());

    const serving = await ca.issueServing({
      commonName: "svc",
      dnsNames: ["svc.ns.svc"],
      ips: ["127.0.0.1"],
    });
    const leaf = new X509Certificate(serving.cert);
    assert.ok(leaf.verify(caCert.publicKey));
    assert.equal(leaf.ca, false);
    assert.equal(leaf.checkHost("svc.ns.svc"), "svc.ns.svc");
    assert.equal(leaf.checkIP("127.0.0.1"), "127.0.0.1");
    assert.deepEqual(usages(serving.cert), [x509.ExtendedKeyUsage.serverAuth]);
    assert.ok(certificateNotAfter(serving.cert) <= ca.notAfter);
    assert.ok(daysLeft(serving.cert) > 29.9, `${daysLeft(serving.cert)} days`);

    const client = await ca.issueClient({ commonName: "alice", organizations: ["devs"] });
    const user = new X509Certificate(client.cert);
    assert.ok(user.verify(caCert.publicKey));
    assert.match(user.subject, /CN=alice/);
    assert.match(user.subject, /O=devs/);
    assert.deepEqual(usages(client.cert), [x509.ExtendedKeyUsage.clientAuth]);
  });

  it("sign for the days asked, never past the CA's own expiry", T, async () => {
    const ca = await createCertificateAuthority("short-ca", 2);
    const shorter = await ca.issueServing({ commonName: "a", dnsNames: ["a"], days: 1 });
    const days = daysLeft(shorter.cert);
    assert.ok(days > 0.9 && days < 1.01, `${days} days`);
    const longer = await ca.issueServing({ commonName: "a", dnsNames: ["a"], days: 30 });
    assert.equal(certificateNotAfter(longer.cert).getTime(), ca.notAfter.getTime());
  });

  it("load again from their PEM pair and sign with the same key", T, async () => {
    const first = await createCertificateAuthority("kept-ca", 10);
    const again = await loadCertificateAuthority({ cert: first.cert, key: first.key }, 5);
    assert.equal(again.cert, first.cert);
    assert.equal(again.key, first.key);
    assert.equal(again.notAfter.getTime(), first.notAfter.getTime());
    const serving = await again.issueServing({ commonName: "b", dnsNames: ["b"] });
    assert.ok(new X509Certificate(serving.cert).verify(new X509Certificate(first.cert).publicKey));
    const days = daysLeft(serving.cert);
    assert.ok(days > 4.9 && days < 5.01, `${days} days`); // the loaded CA's default
    await assert.rejects(loadCertificateAuthority({ cert: first.cert, key: "not a key" }));
  });

  it("make a self-signed serving chain for hosts and addresses", T, async () => {
    const { cert, key } = await selfSignedServingCertificate(["localhost", "127.0.0.1", "::1"]);
    const [leafPem, caPem] = cert.match(
      /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g,
    )!;
    const leaf = new X509Certificate(leafPem);
    assert.ok(leaf.verify(new X509Certificate(caPem).publicKey));
    assert.equal(leaf.checkHost("localhost"), "localhost");
    assert.equal(leaf.checkIP("127.0.0.1"), "127.0.0.1");
    assert.equal(leaf.checkIP("::1"), "::1");
    assert.match(key, /^-----BEGIN PRIVATE KEY-----/);
  });

  it("read a PEM bundle's first certificate's expiry, and refuse text without one", () => {
    assert.throws(() => certificateNotAfter("nothing here"), /no PEM certificate found/);
  });
});
