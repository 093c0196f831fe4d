// Malformed kubeconfigs, one broken thing each: every one must fail with a KubeconfigError
// whose message names the file and (when one field is at fault) the field, quickly, without
// quoting a secret planted nearby.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { stringify } from "yaml";
import { KubeconfigError } from "../../lib/kube/config/errors.ts";
import { loadKubeconfigFile } from "../../lib/kube/config/load.ts";
import { createCertificateAuthority } from "../../lib/testing/certs.ts";

const TIMEOUT = { timeout: 30_000 };
const SECRET = "rudderleak-malformed-9q8w";
const V1 = "client.authentication.k8s.io/v1";
let root = "";

before(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "rudder-malformed-"));
}, TIMEOUT);

after(() => {
  fs.rmSync(root, { recursive: true, force: true });
}, TIMEOUT);

type Doc = Record<string, unknown>;

/** A valid kubeconfig with a secret token; each case breaks one thing of a fresh copy. */
function valid(): Doc {
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "c", cluster: { server: "https://k.test:6443" } }],
    users: [{ name: "u", user: { token: SECRET } }],
    contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
    "current-context": "c",
  };
}

// deno-lint-ignore no-explicit-any
type Any = any;
const cluster = (doc: Any) => doc.clusters[0].cluster;
const user = (doc: Any) => doc.users[0].user;
const exec = (doc: Any) => {
  user(doc).exec = { apiVersion: V1, command: "plugin" };
  return user(doc).exec;
};

/** [what is broken, how, the field named (undefined: the whole file), words of the message] */
const CASES: [string, (doc: Any) => unknown, string | undefined, string][] = [
  ["clusters is a string", (d) => (d.clusters = "c"), "clusters", "expected a list, got string"],
  ["clusters is a mapping", (d) => (d.clusters = { c: 1 }), "clusters", "got object"],
  ["a cluster entry is a number", (d) => (d.clusters = [1]), "clusters[0]", "got number"],
  ["a cluster entry is null", (d) => (d.clusters = [null]), "clusters[0]", "got null"],
  ["a cluster has no name", (d) => delete d.clusters[0].name, "clusters[0].name", "needs a name"],
  ["a cluster name is a number", (d) => (d.clusters[0].name = 5), "clusters[0].name", "got number"],
  [
    "a cluster's body is text",
    (d) => (d.clusters[0].cluster = "x"),
    "clusters[0].cluster",
    "expected a mapping",
  ],
  [
    "server is a number",
    (d) => (cluster(d).server = 6443),
    "clusters[0].cluster.server",
    "expected a string, got number",
  ],
  [
    "insecure-skip-tls-verify is text",
    (d) => (cluster(d)["insecure-skip-tls-verify"] = "true"),
    "clusters[0].cluster.insecure-skip-tls-verify",
    "expected a boolean",
  ],
  [
    "certificate-authority-data is a list",
    (d) => (cluster(d)["certificate-authority-data"] = [SECRET]),
    "clusters[0].cluster.certificate-authority-data",
    "got array",
  ],
  [
    "certificate-authority is a number",
    (d) => (cluster(d)["certificate-authority"] = 1),
    "clusters[0].cluster.certificate-authority",
    "got number",
  ],
  [
    "tls-server-name is a mapping",
    (d) => (cluster(d)["tls-server-name"] = {}),
    "clusters[0].cluster.tls-server-name",
    "got object",
  ],
  [
    "proxy-url is a boolean",
    (d) => (cluster(d)["proxy-url"] = true),
    "clusters[0].cluster.proxy-url",
    "got boolean",
  ],
  ["users is a number", (d) => (d.users = 7), "users", "expected a list"],
  [
    "a user's body is a list",
    (d) => (d.users[0].user = []),
    "users[0].user",
    "expected a mapping, got array",
  ],
  [
    "token is a number",
    (d) => (user(d).token = 42),
    "users[0].user.token",
    "expected a string, got number",
  ],
  [
    "token is a list holding the secret",
    (d) => (user(d).token = [SECRET]),
    "users[0].user.token",
    "got array",
  ],
  [
    "tokenFile is a boolean",
    (d) => (user(d).tokenFile = false),
    "users[0].user.tokenFile",
    "got boolean",
  ],
  ["username is a number", (d) => (user(d).username = 1), "users[0].user.username", "got number"],
  [
    "password is a mapping holding the secret",
    (d) => (user(d).password = { p: SECRET }),
    "users[0].user.password",
    "got object",
  ],
  [
    "client-certificate-data is a number",
    (d) => (user(d)["client-certificate-data"] = 1),
    "users[0].user.client-certificate-data",
    "got number",
  ],
  [
    "client-key-data is a list holding the secret",
    (d) => (user(d)["client-key-data"] = [SECRET]),
    "users[0].user.client-key-data",
    "got array",
  ],
  ["exec is text", (d) => (user(d).exec = "plugin"), "users[0].user.exec", "expected a mapping"],
  [
    "exec command is a list",
    (d) => (exec(d).command = ["a"]),
    "users[0].user.exec.command",
    "got array",
  ],
  [
    "exec args is text",
    (d) => (exec(d).args = "a b"),
    "users[0].user.exec.args",
    "expected a list of strings",
  ],
  [
    "an exec arg is a mapping",
    (d) => (exec(d).args = ["a", {}]),
    "users[0].user.exec.args[1]",
    "expected a string, got object",
  ],
  [
    "exec env is a mapping",
    (d) => (exec(d).env = { A: "1" }),
    "users[0].user.exec.env",
    "expected a list",
  ],
  [
    "an exec env entry is text",
    (d) => (exec(d).env = ["A=1"]),
    "users[0].user.exec.env[0]",
    "expected a mapping",
  ],
  [
    "an exec env entry has no name",
    (d) => (exec(d).env = [{ value: SECRET }]),
    "users[0].user.exec.env[0].name",
    "needs a name",
  ],
  [
    "an exec env entry has no value",
    (d) => (exec(d).env = [{ name: "A" }]),
    "users[0].user.exec.env[0].value",
    "missing for env variable A",
  ],
  [
    "an exec env value is a number",
    (d) => (exec(d).env = [{ name: "A", value: 1 }]),
    "users[0].user.exec.env[0].value",
    "got number",
  ],
  [
    "provideClusterInfo is text",
    (d) => (exec(d).provideClusterInfo = "yes"),
    "users[0].user.exec.provideClusterInfo",
    "expected a boolean",
  ],
  [
    "exec apiVersion is a number",
    (d) => (exec(d).apiVersion = 1),
    "users[0].user.exec.apiVersion",
    "got number",
  ],
  [
    "exec apiVersion is missing",
    (d) => delete exec(d).apiVersion,
    "users[0].user.exec.apiVersion",
    "no apiVersion",
  ],
  [
    "exec command is missing",
    (d) => delete exec(d).command,
    "users[0].user.exec.command",
    "no command",
  ],
  [
    "exec apiVersion is unsupported",
    (d) => (exec(d).apiVersion = "v0"),
    "users[0].user.exec.apiVersion",
    "unsupported",
  ],
  [
    "exec interactiveMode is unknown",
    (d) => (exec(d).interactiveMode = "Sometimes"),
    "users[0].user.exec.interactiveMode",
    "expected Never",
  ],
  [
    "auth-provider is text",
    (d) => (user(d)["auth-provider"] = "gcp"),
    "users[0].user.auth-provider",
    "expected a mapping",
  ],
  ["contexts is text", (d) => (d.contexts = "c"), "contexts", "expected a list"],
  [
    "a context's body is a number",
    (d) => (d.contexts[0].context = 5),
    "contexts[0].context",
    "got number",
  ],
  [
    "a context namespace is a number",
    (d) => (d.contexts[0].context.namespace = 3),
    "contexts[0].context.namespace",
    "got number",
  ],
  [
    "a context user is a list",
    (d) => (d.contexts[0].context.user = []),
    "contexts[0].context.user",
    "got array",
  ],
  [
    "current-context is a number",
    (d) => (d["current-context"] = 1),
    "current-context",
    "got number",
  ],
  [
    "current-context names nothing",
    (d) => (d["current-context"] = "ghost"),
    "current-context",
    '"ghost"',
  ],
  ["current-context is missing", (d) => delete d["current-context"], "current-context", "not set"],
  [
    "the context names no cluster",
    (d) => delete d.contexts[0].context.cluster,
    "contexts[0].context.cluster",
    "has no cluster",
  ],
  [
    "the context's cluster is not defined",
    (d) => (d.contexts[0].context.cluster = "x"),
    "contexts[0].context.cluster",
    '"x" is not defined',
  ],
  [
    "the context's user is not defined",
    (d) => (d.contexts[0].context.user = "x"),
    "contexts[0].context.user",
    '"x" is not defined',
  ],
  [
    "the cluster has no server",
    (d) => delete cluster(d).server,
    "clusters[0].cluster.server",
    "has no server",
  ],
  [
    "the server is not a URL",
    (d) => (cluster(d).server = "k.test:6443"),
    "clusters[0].cluster.server",
    "expected an http or https URL",
  ],
  [
    "the server has another scheme",
    (d) => (cluster(d).server = "ftp://k.test"),
    "clusters[0].cluster.server",
    "expected an http or https URL",
  ],
  [
    "the proxy-url is not a URL",
    (d) => (cluster(d)["proxy-url"] = `${SECRET} proxy`),
    "clusters[0].cluster.proxy-url",
    "not a URL",
  ],
  [
    "CA data is not base64",
    (d) => (cluster(d)["certificate-authority-data"] = `${SECRET}!!`),
    "clusters[0].cluster.certificate-authority-data",
    "invalid base64",
  ],
  [
    "CA data is not PEM",
    (d) => (cluster(d)["certificate-authority-data"] = btoa("DER")),
    "clusters[0].cluster.certificate-authority-data",
    "no PEM block",
  ],
  [
    "CA and insecure at once",
    (d) =>
      Object.assign(cluster(d), {
        "certificate-authority-data": btoa("-----BEGIN CERTIFICATE-----\n"),
        "insecure-skip-tls-verify": true,
      }),
    "clusters[0].cluster.insecure-skip-tls-verify",
    "remove one",
  ],
  [
    "a CA file that does not exist",
    (d) => (cluster(d)["certificate-authority"] = "/nonexistent/ca.crt"),
    "clusters[0].cluster.certificate-authority",
    "no such file",
  ],
  [
    "a token and a username",
    (d) => (user(d).username = "me"),
    "users[0].user.username",
    "only one may be used",
  ],
  [
    "a password without a username",
    (d) => (user(d).password = SECRET),
    "users[0].user.username",
    "no username",
  ],
  [
    "a client certificate without a key",
    (d) => (user(d)["client-certificate-data"] = btoa("-----BEGIN CERTIFICATE-----\n")),
    "users[0].user.client-key",
    "no client-key",
  ],
  [
    "a key without a certificate",
    (d) => (user(d)["client-key-data"] = btoa(`-----BEGIN PRIVATE KEY-----\n${SECRET}\n`)),
    "users[0].user.client-certificate",
    "no client-certificate",
  ],
  [
    "a token file that does not exist",
    (d) => {
      delete user(d).token;
      user(d).tokenFile = "/nonexistent/token";
    },
    "users[0].user.tokenFile",
    "no such file",
  ],
  [
    "a token with a line break",
    (d) => (user(d).token = `${SECRET}\nx`),
    "users[0].user.token",
    "not allowed in an HTTP header",
  ],
  [
    "an auth-provider user",
    (d) => (user(d)["auth-provider"] = { name: "oidc", config: { "id-token": SECRET } }),
    "users[0].user.auth-provider",
    "not supported",
  ],
];

/** Files that are not a kubeconfig mapping at all: [what, content, words of the message]. */
const RAW: [string, string, string][] = [
  ["a YAML list", "- a\n- b\n", "expected a mapping at the top level, got array"],
  ["a YAML string", "just some text\n", "got string"],
  ["a YAML number", "42\n", "got number"],
  [
    "YAML that does not parse",
    `users:\n- user:\n    token: ${SECRET}\n   bad: [\n`,
    "invalid YAML at line",
  ],
  ["duplicate keys", `clusters: []\nclusters: []\ntoken: ${SECRET}\n`, "invalid YAML"],
  ["tab indentation", `users:\n\t- name: ${SECRET}\n`, "invalid YAML"],
  ["an unterminated quote", `current-context: "${SECRET}\n`, "invalid YAML"],
];

async function expectFailure(file: string, field: string | undefined, words: string) {
  const started = Date.now();
  let caught: unknown;
  try {
    await loadKubeconfigFile(file);
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof KubeconfigError, `expected a KubeconfigError, got ${caught}`);
  const prefix = field === undefined ? `kubeconfig ${file}: ` : `kubeconfig ${file}: ${field}: `;
  assert.ok(caught.message.startsWith(prefix), `"${caught.message}" starts with "${prefix}"`);
  assert.equal(caught.file, file);
  assert.equal(caught.field, field);
  assert.ok(caught.message.includes(words), `"${caught.message}" includes "${words}"`);
  assert.ok(!String(caught).includes(SECRET), `leaks the secret: ${caught}`);
  assert.ok(Date.now() - started < 5_000, "fails quickly");
}

describe("malformed kubeconfigs", () => {
  it("has the cases issue 12 asks for", TIMEOUT, () => {
    assert.ok(CASES.length + RAW.length >= 40, `${CASES.length + RAW.length} cases`);
  });

  for (const [what, breakIt, field, words] of CASES) {
    it(`names the file and field when ${what}`, TIMEOUT, async () => {
      const doc = valid();
      breakIt(doc);
      const file = path.join(fs.mkdtempSync(path.join(root, "case-")), "config");
      fs.writeFileSync(file, stringify(doc));
      await expectFailure(file, field, words);
    });
  }

  for (const [what, content, words] of RAW) {
    it(`names the file for ${what}`, TIMEOUT, async () => {
      const file = path.join(fs.mkdtempSync(path.join(root, "raw-")), "config");
      fs.writeFileSync(file, content);
      await expectFailure(file, undefined, words);
    });
  }
});

/** A client certificate and key that belong together, another pair, and what to break. */
let pair: { cert: string; key: string };
let otherPair: { cert: string; key: string };

before(async () => {
  const ca = await createCertificateAuthority("rudder-malformed-ca");
  pair = await ca.issueClient({ commonName: "malformed-user" });
  otherPair = await ca.issueClient({ commonName: "someone-else" });
}, TIMEOUT);

/** The lines of a PEM body: none may appear in a message. */
const bodyLines = (pem: string) =>
  pem.split("\n").filter((line) => line && !line.startsWith("-----"));

describe("client certificates and keys that cannot be used", () => {
  const b64 = (text: string) => btoa(text);
  const garbage = (label: string) =>
    `-----BEGIN ${label}-----\n${btoa(`${SECRET} garbage`)}\n-----END ${label}-----\n`;
  /** [what, cert, key, the field named, words of the message] */
  const cases: [string, () => string, () => string, string, string][] = [
    [
      "a private key in client-certificate-data",
      () => pair.key,
      () => pair.key,
      "users[0].user.client-certificate-data",
      "holds a private key, not a certificate",
    ],
    [
      "a certificate in client-key-data",
      () => pair.cert,
      () => pair.cert,
      "users[0].user.client-key-data",
      "holds a certificate, not a private key",
    ],
    [
      "a certificate and key swapped",
      () => pair.key,
      () => pair.cert,
      "users[0].user.client-certificate-data",
      "may be swapped",
    ],
    [
      "a PEM-shaped certificate that is garbage",
      () => garbage("CERTIFICATE"),
      () => pair.key,
      "users[0].user.client-certificate-data",
      "is not a valid certificate",
    ],
    [
      "a PEM-shaped key that is garbage",
      () => pair.cert,
      () => garbage("PRIVATE KEY"),
      "users[0].user.client-key-data",
      "is not a valid private key",
    ],
    [
      "the key of another certificate",
      () => pair.cert,
      () => otherPair.key,
      "users[0].user.client-key-data",
      "is not the private key of the client certificate",
    ],
  ];

  for (const [what, cert, key, field, words] of cases) {
    it(`names the field when ${what}`, TIMEOUT, async () => {
      const doc = valid();
      delete user(doc).token;
      user(doc)["client-certificate-data"] = b64(cert());
      user(doc)["client-key-data"] = b64(key());
      const file = path.join(fs.mkdtempSync(path.join(root, "pair-")), "config");
      fs.writeFileSync(file, stringify(doc));
      await expectFailure(file, field, words);
      const err = await loadKubeconfigFile(file).catch((e) => e);
      assert.ok(err.message.includes('user "u"'), err.message);
      for (const line of [...bodyLines(pair.key), ...bodyLines(otherPair.key)]) {
        assert.ok(!String(err).includes(line), "no line of a key in the message");
      }
    });
  }

  it("names the file field when the file holds the key", TIMEOUT, async () => {
    const dir = fs.mkdtempSync(path.join(root, "pair-files-"));
    fs.writeFileSync(path.join(dir, "client.crt"), pair.key);
    fs.writeFileSync(path.join(dir, "client.key"), pair.key);
    const doc = valid();
    delete user(doc).token;
    user(doc)["client-certificate"] = "client.crt";
    user(doc)["client-key"] = "client.key";
    const file = path.join(dir, "config");
    fs.writeFileSync(file, stringify(doc));
    await expectFailure(file, "users[0].user.client-certificate", "holds a private key");
  });

  it("accepts one file holding both, as Go does", TIMEOUT, async () => {
    const dir = fs.mkdtempSync(path.join(root, "pair-bundle-"));
    fs.writeFileSync(path.join(dir, "client.pem"), pair.cert + pair.key);
    const doc = valid();
    delete user(doc).token;
    user(doc)["client-certificate"] = "client.pem";
    user(doc)["client-key"] = "client.pem";
    const file = path.join(dir, "config");
    fs.writeFileSync(file, stringify(doc));
    const config = await loadKubeconfigFile(file);
    assert.ok((await config.auth.credentials()).clientCertificate);
  });
});
