// The Website webhooks, tested as plain functions: the defaulter and the validator need no
// server. (The manager serves them, and `rudder manifests` writes the configurations that send
// the API server's admission requests there.)
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { Website } from "../api/website.ts";
import { DIRECTORY } from "../controllers/directory.ts";
import { CONTENT_LABEL, defaultWebsite, validateWebsite } from "./website_webhook.ts";

function site(contentFrom: string, replicas = 2): Website {
  return {
    apiVersion: "tutorial.rudder.dev/v1",
    kind: "Website",
    metadata: { name: "blog", namespace: "default", labels: { team: "web" } },
    spec: { image: "nginx:1.27", replicas, contentFrom },
  };
}

describe("the Website webhooks", () => {
  it("label a Website with its content ConfigMap and keep its other labels", () => {
    const blog = site("blog-html");
    defaultWebsite(blog);
    assert.deepEqual(blog.metadata?.labels, { team: "web", [CONTENT_LABEL]: "blog-html" });
  });

  it("refuse the site directory as content, naming the field", () => {
    assert.throws(() => validateWebsite(site(DIRECTORY)), (err: Error & { code?: number }) => {
      assert.match(err.message, /spec\.contentFrom must not be website-directory/);
      return true;
    });
  });

  it("accept other content, and warn about a single replica", () => {
    assert.deepEqual(validateWebsite(site("blog-html")), []);
    assert.deepEqual(validateWebsite(site("blog-html", 1)), [
      "one replica: the site is down while it restarts",
    ]);
  });
});
