// Every built-in resource type agrees with the API server's discovery: plural, scope and
// subresources, so a typo in lib/api/builtins.ts cannot reach a user.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { builtinResourceTypes } from "../../lib/api/builtins.ts";
import { useControlPlane } from "../support/control_plane.ts";

interface APIResourceList {
  resources: { name: string; kind: string; namespaced: boolean }[];
}

describe("built-in resource types", () => {
  const plane = useControlPlane();

  it("match discovery's plural, scope and subresources", async () => {
    for (const type of builtinResourceTypes()) {
      const path = type.group ? `/apis/${type.group}/${type.version}` : `/api/${type.version}`;
      const list = await plane.rest.request<APIResourceList>({ path });
      const resource = list.resources.find((r) => r.name === type.plural);
      assert.ok(resource, `${path} serves ${type.plural}`);
      assert.equal(resource.kind, type.kind, `${type.plural} is ${type.kind}`);
      assert.equal(resource.namespaced, type.scope === "Namespaced", `${type.kind} scope`);
      const served = list.resources
        .filter((r) => r.name.startsWith(`${type.plural}/`))
        .map((r) => r.name.slice(type.plural.length + 1))
        .sort();
      assert.deepEqual([...type.subresources].sort(), served, `${type.kind} subresources`);
    }
  });
});
