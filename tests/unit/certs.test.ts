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
  parseCertificatePem,
  selfSignedServingCertificate,
} from "../../lib/util/certs.ts";

const SERVER_AUTH = "1.3.6.1.5.5.7.3.1";
const CLIENT_AUTH = "1.3.6.1.5.5.7.3.2";

const T = { timeout: 30_000 };
const DAY = 24 * 3600_000;

function daysLeft(pem: string): number {
  return (certificateNotAfter(pem).getTime() - Date.now()) / DAY;
}

describe("certificate authorities", () => {
  it("sign serving and client certificates valid as long as the CA by default", T, async () => {
    const ca = await createCertificateAuthority("test-ca, with a comma", 30);
    const caCert = new X509Certificate(ca.cert);
    assert.equal(caCert.ca, true);
    assert.deepEqual(parseCertificatePem(ca.cert).subjectAttributes, [
      { type: "2.5.4.3", value: "test-ca, with a comma" }, // one CN, not split at the comma
    ]);
    assert.equal(parseCertificatePem(ca.cert).isCA, true);
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
    const parsed = parseCertificatePem(serving.cert);
    assert.deepEqual(parsed.extendedKeyUsages, [SERVER_AUTH]);
    assert.deepEqual(parsed.dnsNames, ["svc.ns.svc"]);
    assert.deepEqual(parsed.ips, ["127.0.0.1"]);
    assert.equal(parsed.isCA, false);
    assert.ok(certificateNotAfter(serving.cert) <= ca.notAfter);
    assert.ok(daysLeft(serving.cert) > 29.9, `${daysLeft(serving.cert)} days`);

    const client = await ca.issueClient({ commonName: "alice", organizations: ["devs"] });
    const user = new X509Certificate(client.cert);
    assert.ok(user.verify(caCert.publicKey));
    assert.match(user.subject, /CN=alice/);
    assert.match(user.subject, /O=devs/);
    assert.deepEqual(parseCertificatePem(client.cert).extendedKeyUsages, [CLIENT_AUTH]);
    assert.deepEqual(parseCertificatePem(client.cert).subjectAttributes, [
      { type: "2.5.4.10", value: "devs" },
      { type: "2.5.4.3", value: "alice" },
    ]);
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

  it("name IPv4 and IPv6 addresses, and refuse what is neither", T, async () => {
    const ca = await createCertificateAuthority("ip-ca", 1);
    const ips = ["10.0.0.1", "::1", "fe80::1:2", "2001:db8::", "1:2:3:4:5:6:7:8"];
    const serving = await ca.issueServing({ commonName: "ips", ips });
    assert.deepEqual(parseCertificatePem(serving.cert).ips, [
      "10.0.0.1",
      "0:0:0:0:0:0:0:1",
      "fe80:0:0:0:0:0:1:2",
      "2001:db8:0:0:0:0:0:0",
      "1:2:3:4:5:6:7:8",
    ]);
    const leaf = new X509Certificate(serving.cert);
    for (const ip of ips) assert.equal(leaf.checkIP(ip), ip);
    await assert.rejects(ca.issueServing({ commonName: "x", ips: ["not-an-ip"] }), /IP address/);
    await assert.rejects(ca.issueServing({ commonName: "x", ips: ["1:2:3:4:5:6:7:8:9"] }));
    await assert.rejects(
      ca.issueServing({ commonName: "x", ips: ["::ffff:1.2.3.4"] }),
      /IP address/,
    );
  });

  it("read a PEM bundle's first certificate's expiry, and refuse text without one", () => {
    assert.throws(() => certificateNotAfter("nothing here"), /no PEM certificate found/);
  });
});
