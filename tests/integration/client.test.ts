// What only the real API server can show about the client: kinds found through discovery
// (also ones installed after the client was made), unstructured objects, server-side field
// validation and its warnings, subresources that create (token), and the request hook.
// The behaviour shared with the fake client is in tests/contract/client_contract.ts.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConfigMap, ServiceAccount } from "../../lib/api/builtins.ts";
import { isNoKindMatch } from "../../lib/api/discovery.ts";
import type { Unstructured } from "../../lib/api/resource.ts";
import { type Client, newClient } from "../../lib/client/client.ts";
import { mergeFrom } from "../../lib/client/patch.ts";
import { namespacedClient, withFieldOwner } from "../../lib/client/wrappers.ts";
import { isInvalid, isNotFound } from "../../lib/kube/errors.ts";
import type { RequestInfo } from "../../lib/kube/rest.ts";
import { Environment } from "../../lib/testing/envtest.ts";
import { captureLogs } from "../support/logs.ts";

const env = new Environment();
const requests: RequestInfo[] = [];
let logs: Awaited<ReturnType<typeof captureLogs>>;
let client: Client;
const namespace = "client-it";

function gadgetCRD(version: string) {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "gadgets.example.com" },
    spec: {
      group: "example.com",
      scope: "Namespaced",
      names: { plural: "gadgets", singular: "gadget", kind: "Gadget", listKind: "GadgetList" },
      versions: [{
        name: version,
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: "object",
            properties: {
              spec: { type: "object", properties: { size: { type: "integer" } } },
              status: { type: "object", properties: { phase: { type: "string" } } },
            },
          },
        },
      }],
    },
  };
}

before(async () => {
  logs = await captureLogs();
  const config = await env.start();
  client = newClient(config, { onRequest: (info) => requests.push(info) });
  await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
});

after(async () => {
  await env.stop();
  await logs.stop();
});

describe("client against the API server", () => {
  it("finds a CRD installed after the client first missed it, and works with unstructured objects", async () => {
    const gvk = { apiVersion: "example.com/v1", kind: "Gadget" };
    await assert.rejects(client.list(gvk, { namespace }), isNoKindMatch);
    await env.installCRDs([gadgetCRD("v1")]);

    const created = await client.create<Unstructured>({
      ...gvk,
      metadata: { name: "g1", namespace },
      spec: { size: 2 },
    });
    assert.equal(created.kind, "Gadget");
    const read = await client.get(gvk, { namespace, name: "g1" });
    assert.deepEqual(read.spec, { size: 2 });

    const withStatus = await client.status().update({ ...read, status: { phase: "Ready" } });
    assert.deepEqual(withStatus.status, { phase: "Ready" });
    const list = await client.list(gvk, { namespace });
    assert.deepEqual(list.items.map((g) => [g.apiVersion, g.kind, g.metadata?.name]), [
      ["example.com/v1", "Gadget", "g1"],
    ]);
    await client.delete(read);
    await assert.rejects(client.get(gvk, { namespace, name: "g1" }), isNotFound);
  });

  it("rejects unknown fields with fieldValidation Strict and logs the server's warning with Warn", async () => {
    const body = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "strict", namespace },
      data: { a: "1" },
      bogus: true,
    } as const;
    await assert.rejects(client.create(body, { fieldValidation: "Strict" }), (err) => {
      assert.ok(isInvalid(err) || /unknown field "bogus"/.test((err as Error).message));
      assert.match((err as Error).message, /bogus/);
      return true;
    });
    logs.records.length = 0;
    await client.create(body, { fieldValidation: "Warn" });
    const warning = logs.records.find((r) =>
      r.level === "warning" && /bogus/.test(String(r.properties.warning))
    );
    assert.ok(warning, "the API server's Warning header reached the logger");
  });

  it("creates through subresources: a ServiceAccount token", async () => {
    const robot = await client.create({
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name: "robot", namespace },
    });
    const token = await client.subResource("token").create<{ status: { token: string } }>(robot, {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: { expirationSeconds: 600 },
    });
    assert.match(token.status.token, /^ey/);
    assert.ok((await client.get(ServiceAccount, { namespace, name: "robot" })).metadata?.uid);
  });

  it("reports each request's method, host and status code to the hook", async () => {
    requests.length = 0;
    await client.get(ConfigMap, { namespace, name: "missing" }).catch(() => {});
    const [info] = requests;
    assert.equal(info.method, "GET");
    assert.equal(info.statusCode, 404);
    assert.equal(info.host, new URL(env.config.server).host);
    assert.ok(info.durationMs >= 0);
  });

  it("records the field owner of wrapped writes, and keeps a namespaced client in its namespace", async () => {
    const owned = namespacedClient(withFieldOwner(client, "rudder-it"), namespace);
    const created = await owned.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "owned" },
      data: { a: "1" },
    });
    assert.equal(created.metadata?.namespace, namespace);
    const changed = { ...created, data: { a: "2" } };
    const patched = await owned.patch(changed, mergeFrom(created));
    const managers = (patched.metadata?.managedFields ?? []).map((f) => f.manager);
    assert.ok(managers.includes("rudder-it"), `managers: ${managers.join(", ")}`);
    await assert.rejects(owned.get(ConfigMap, { namespace: "default", name: "owned" }), /confined/);
  });
});
