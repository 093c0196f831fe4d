// The tutorial (docs/tutorial.md) runs as written: its operator's own tests (FakeClient, and the
// operator against a real control plane) run here on Deno and on Bun, and `rudder manifests`
// derives its CRD and RBAC.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { main } from "../../cli/main.ts";
import "../../examples/tutorial/controllers/website_controller_test.ts";
import "../../examples/tutorial/webhooks/website_webhook_test.ts";

const TUTORIAL = fileURLToPath(new URL("../../examples/tutorial/", import.meta.url));
let out: string;

before(() => {
  out = mkdtempSync(join(tmpdir(), "rudder-tutorial-"));
}, { timeout: 10_000 });
after(() => rmSync(out, { recursive: true, force: true }), { timeout: 10_000 });

describe("the tutorial's manifests step", () => {
  it(
    "writes the Website CRD and a ClusterRole with the extra ConfigMap rule",
    { timeout: 120_000 },
    async () => {
      let err = "";
      const code = await main(["manifests", "--dir", TUTORIAL, "--out", out], {
        out: () => {},
        err: (line) => (err += `${line}\n`),
        cwd: TUTORIAL,
        env: process.env,
      });
      assert.equal(code, 0, err);
      const crd = parse(readFileSync(join(out, "crd/tutorial.rudder.dev_websites.yaml"), "utf8"));
      assert.equal(crd.spec.names.kind, "Website");
      const role = parse(readFileSync(join(out, "rbac/role.yaml"), "utf8"));
      const configMaps = role.rules.filter((rule: { resources?: string[] }) =>
        rule.resources?.includes("configmaps")
      ).flatMap((rule: { verbs: string[] }) => rule.verbs);
      for (const verb of ["get", "list", "watch", "create", "update", "patch"]) {
        assert.ok(configMaps.includes(verb), `configmaps: ${verb}`);
      }
    },
  );
});
