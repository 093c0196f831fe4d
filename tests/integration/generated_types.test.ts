// The generated API types: regenerating them from a real kube-apiserver's OpenAPI gives exactly
// the committed files (so they cannot drift silently), and they type objects as the client
// needs (checked at compile time by `deno test`'s type check).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Deployment, DeploymentList } from "../../lib/api/generated/apps_v1.ts";
import type { ConfigMap, Container, Pod } from "../../lib/api/generated/core_v1.ts";
import type { ObjectMeta } from "../../lib/api/generated/meta_v1.ts";
import type { IntOrString, Quantity } from "../../lib/api/generated/primitives.ts";
import type { ClusterRole } from "../../lib/api/generated/rbac_v1.ts";
import { generateApiTypes, GENERATED_DIRECTORY } from "../../tools/gen_api_types.ts";
import { useControlPlane } from "../support/control_plane.ts";

/** `true` when `A` and `B` are the same type, `false` otherwise. */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true
  : false;

const plane = useControlPlane();

describe("generated API types", () => {
  it("are what the API server's OpenAPI generates, file by file", async () => {
    const files = await generateApiTypes(plane.rest);
    const committed = readdirSync(GENERATED_DIRECTORY).filter((name) => name.endsWith(".ts"))
      .sort();
    assert.deepEqual([...files.keys()].sort(), committed, "the set of generated files");
    for (const [name, content] of files) {
      assert.ok(
        content === readFileSync(join(GENERATED_DIRECTORY, name), "utf8"),
        `lib/api/generated/${name} is stale: run deno run -A tools/gen_api_types.ts`,
      );
    }
    assert.ok(files.get("apps_v1.ts")!.includes('apiVersion: "apps/v1";\n'));
    assert.ok(files.get("apps_v1.ts")!.includes("Kubernetes v1.36.3"));
  });

  it("require the apiVersion and kind literals of top-level kinds", () => {
    const deployment: Deployment = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "x" },
      spec: { selector: {}, template: {} },
    };
    const replicaCount = deployment.spec?.replicas;
    const replicas: Equal<typeof replicaCount, number | undefined> = true;
    const apiVersion: Equal<Deployment["apiVersion"], "apps/v1"> = true;
    const kind: Equal<DeploymentList["kind"], "DeploymentList"> = true;
    const items: Equal<DeploymentList["items"], Deployment[]> = true;
    const podVersion: Equal<Pod["apiVersion"], "v1"> = true;
    const rbacVersion: Equal<ClusterRole["apiVersion"], "rbac.authorization.k8s.io/v1"> = true;
    assert.ok(replicas && apiVersion && kind && items && podVersion && rbacVersion);
    assert.equal(replicaCount, undefined);

    // @ts-expect-error: apiVersion and kind are required.
    const missing: ConfigMap = { metadata: { name: "x" } };
    // @ts-expect-error: the apiVersion of a Deployment is "apps/v1".
    const wrongVersion: Deployment = { apiVersion: "v1", kind: "Deployment" };
    // @ts-expect-error: a Deployment is not a StatefulSet.
    const wrongKind: Deployment = { apiVersion: "apps/v1", kind: "StatefulSet" };
    assert.ok(missing && wrongVersion && wrongKind);
  });

  it("type properties as the API defines them", () => {
    const name: Equal<Container["name"], string> = true;
    const image: Equal<Container["image"], string | undefined> = true;
    const labels: Equal<ObjectMeta["labels"], Record<string, string> | undefined> = true;
    const finalizers: Equal<ObjectMeta["finalizers"], string[] | undefined> = true;
    const quantity: Equal<Quantity, string | number> = true;
    const intOrString: Equal<IntOrString, string | number> = true;
    const limits: Equal<
      NonNullable<Container["resources"]>["limits"],
      Record<string, Quantity> | undefined
    > = true;
    const binaryData: Equal<ConfigMap["binaryData"], Record<string, string> | undefined> = true;
    assert.ok(name && image && labels && finalizers && quantity && intOrString && limits);
    assert.ok(binaryData);
  });

  it("describe what the API server stores", async () => {
    const configMap: ConfigMap = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "typed", labels: { app: "typed" } },
      data: { key: "value" },
    };
    const created = await plane.rest.request<ConfigMap>({
      method: "POST",
      path: "/api/v1/namespaces/default/configmaps",
      body: configMap,
    });
    assert.equal(created.kind, "ConfigMap");
    assert.equal(created.apiVersion, "v1");
    assert.deepEqual(created.data, { key: "value" });
    assert.equal(typeof created.metadata?.creationTimestamp, "string");
    assert.equal(typeof created.metadata?.uid, "string");
  });
});
