// The redaction layer on its own: what it blanks, what it keeps.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { inspect } from "node:util";
import {
  isValidHeaderValue,
  REDACTED,
  redactError,
  redactText,
  redactURL,
  secretsOf,
  secretsOfURL,
  urlUserInfo,
} from "../../lib/kube/redact.ts";
import { toConnectionError } from "../../lib/kube/transport.ts";
import { InvalidHeaderError } from "../../lib/kube/errors.ts";

const TIMEOUT = { timeout: 10_000 };

describe("redact", () => {
  it("removes user-info from URLs and keeps the rest", TIMEOUT, () => {
    assert.equal(redactURL("https://u:p4ss@api.test:6443/x?y=1"), "https://api.test:6443/x?y=1");
    assert.equal(redactURL("https://api.test:6443"), "https://api.test:6443");
    assert.equal(redactURL("http://only-user@proxy:3128"), "http://proxy:3128");
    assert.equal(redactURL("not a url ftp://u:p4ss@[bad"), `not a url ftp://${REDACTED}@[bad`);
    assert.deepEqual(urlUserInfo("https://a%40b:p%3Ass@h"), { username: "a@b", password: "p:ss" });
    assert.equal(urlUserInfo("https://h"), undefined);
    assert.deepEqual(secretsOfURL("http://u:pw-1234@h"), ["pw-1234", "pw-1234", "u:pw-1234"]);
    assert.deepEqual(secretsOfURL(undefined), []);
  });

  it(
    "blanks known secrets, URL user-info, Bearer and Basic values and JWTs in text",
    TIMEOUT,
    () => {
      const jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl";
      const text = `token s3cret-value at https://u:pw@h, Authorization: Bearer abc.def; ` +
        `Basic dTpw, id ${jwt} end`;
      assert.equal(
        redactText(text, ["s3cret-value", "ab"]),
        `token ${REDACTED} at https://${REDACTED}@h, Authorization: Bearer ${REDACTED}; ` +
          `Basic ${REDACTED}, id ${REDACTED} end`,
      );
      assert.equal(
        redactText("a short ab secret", ["ab"]),
        "a short ab secret",
        "too short to hunt",
      );
      assert.equal(redactText("xx-long-secret-xx", ["long-secret", "xx-long-secret-xx"]), REDACTED);
    },
  );

  it(
    "lists the secrets of credentials: header values, their tokens, the client key",
    TIMEOUT,
    () => {
      const key = "-----BEGIN PRIVATE KEY-----\nQUJDREVGR0g=\n-----END PRIVATE KEY-----\n";
      const secrets = secretsOf({
        headers: { Authorization: "Bearer tok-123" },
        clientCertificate: { cert: "CERT", key },
      });
      assert.ok(secrets.includes("Bearer tok-123"));
      assert.ok(secrets.includes("tok-123"));
      assert.ok(secrets.includes(key));
      assert.ok(secrets.includes("QUJDREVGR0g="));
      assert.deepEqual(secretsOf(undefined), []);
    },
  );

  it("copies an error chain with redacted messages, names and codes, and no stack", TIMEOUT, () => {
    const inner = Object.assign(new Error('Invalid header value: "Bearer tok-123\u0001"'), {
      code: "ERR_INVALID_HEADER",
      url: "https://u:pw@h",
    });
    const outer = new TypeError("fetch failed for tok-123", { cause: inner });
    const copy = redactError(outer, ["tok-123"]) as Error;
    assert.equal(copy.name, "TypeError");
    assert.equal(copy.message, `fetch failed for ${REDACTED}`);
    const cause = copy.cause as Error & { code?: string; url?: string };
    assert.equal(cause.message, `Invalid header value: "Bearer ${REDACTED}"`);
    assert.equal(cause.code, "ERR_INVALID_HEADER");
    assert.equal(cause.url, undefined, "other fields are dropped");
    assert.doesNotMatch(inspect(copy, { depth: 10 }), /tok-123|pw@/);
    assert.equal(redactError("plain tok-123", ["tok-123"]), `plain ${REDACTED}`);
    assert.equal(redactError(42), 42);
  });

  it("redacts the runtime's error chain a transport failure keeps as cause", TIMEOUT, () => {
    const runtimeError = new TypeError("fetch failed", {
      cause: new Error("connection refused while sending Bearer tok-123 to https://u:pw-9@h"),
    });
    const err = toConnectionError(runtimeError, { server: "https://h:6443" }, ["tok-123"]);
    assert.equal(err.reason, "refused");
    assert.doesNotMatch(inspect(err, { depth: 10 }), /tok-123|pw-9/);
    assert.match(String((err.cause as Error).cause), /connection refused/);
  });

  it("accepts header values runtimes accept and refuses control characters", TIMEOUT, () => {
    assert.equal(isValidHeaderValue("Bearer abc.DEF-123_~+/="), true);
    assert.equal(isValidHeaderValue("tab\tok é"), true);
    for (const bad of ["a\nb", "a\rb", "a\u0000b", "a\u0001b", "a\u007fb", "snow\u2603"]) {
      assert.equal(isValidHeaderValue(bad), false, JSON.stringify(bad));
    }
    const err = new InvalidHeaderError("Authorization", "the credentials of /k");
    assert.equal(err.name, "InvalidHeaderError");
    assert.equal(err.header, "Authorization");
    assert.match(err.message, /Authorization header from the credentials of \/k/);
  });
});
