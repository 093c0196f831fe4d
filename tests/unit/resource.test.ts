// Resource types, paths, options translation and the discovery-backed mapper.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  guessPlural,
  isResourceType,
  parseApiVersion,
  resourcePath,
  resourceType,
} from "../../lib/api/resource.ts";
import {
  builtinResourceType,
  builtinResourceTypes,
  ConfigMap,
  Deployment,
  EventsV1Event,
  Namespace,
} from "../../lib/api/builtins.ts";
import { isNoKindMatch, RESTMapper } from "../../lib/api/discovery.ts";
import {
  deleteBody,
  formatFieldSelector,
  formatLabelSelector,
  listQuery,
  writeQuery,
} from "../../lib/client/options.ts";
import { RestClient } from "../../lib/kube/rest.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";

describe("resource types", () => {
  it("pluralises kinds the way Kubernetes' tools do", () => {
    const cases: Record<string, string> = {
      Pod: "pods",
      Ingress: "ingresses",
      NetworkPolicy: "networkpolicies",
      Gateway: "gateways",
      Box: "boxes",
      Mesh: "meshes",
      Patch: "patches",
      Endpoints: "endpoints",
      Key: "keys",
    };
    for (const [kind, plural] of Object.entries(cases)) {
      assert.equal(guessPlural(kind), plural, kind);
    }
  });

  it("builds paths for namespaced, cluster-scoped, collection and subresource", () => {
    assert.equal(resourcePath(ConfigMap, { namespace: "a" }), "/api/v1/namespaces/a/configmaps");
    assert.equal(resourcePath(ConfigMap), "/api/v1/configmaps");
    assert.equal(
      resourcePath(Deployment, { namespace: "a", name: "web", subresource: "scale" }),
      "/apis/apps/v1/namespaces/a/deployments/web/scale",
    );
    assert.equal(
      resourcePath(Namespace, { namespace: "ignored", name: "x" }),
      "/api/v1/namespaces/x",
    );
    assert.equal(
      resourcePath(ConfigMap, { namespace: "a", name: "a b" }),
      "/api/v1/namespaces/a/configmaps/a%20b",
    );
  });

  it("declares custom types with defaults, frozen", () => {
    const widget = resourceType({
      group: "example.com",
      version: "v1",
      kind: "Widget",
      scope: "Namespaced",
    });
    assert.equal(widget.apiVersion, "example.com/v1");
    assert.equal(widget.plural, "widgets");
    assert.equal(widget.listKind, "WidgetList");
    assert.deepEqual(widget.subresources, []);
    assert.ok(Object.isFrozen(widget));
    assert.ok(isResourceType(widget));
    assert.equal(isResourceType({ apiVersion: "v1", kind: "Pod" }), false);
    assert.deepEqual(parseApiVersion("apps/v1"), { group: "apps", version: "v1" });
    assert.deepEqual(parseApiVersion("v1"), { group: "", version: "v1" });
  });

  it("registers every built-in kind once under its apiVersion and kind", () => {
    assert.equal(builtinResourceType({ apiVersion: "apps/v1", kind: "Deployment" }), Deployment);
    assert.equal(
      builtinResourceType({ apiVersion: "events.k8s.io/v1", kind: "Event" }),
      EventsV1Event,
    );
    assert.equal(builtinResourceType({ apiVersion: "example.com/v1", kind: "Widget" }), undefined);
    const keys = builtinResourceTypes().map((t) => `${t.apiVersion}/${t.kind}`);
    assert.equal(new Set(keys).size, keys.length);
    assert.ok(keys.length >= 27);
  });
});

describe("client options", () => {
  it("formats label selectors, structured or not", () => {
    assert.equal(formatLabelSelector("app=web"), "app=web");
    assert.equal(
      formatLabelSelector({
        matchLabels: { app: "web" },
        matchExpressions: [
          { key: "tier", operator: "In", values: ["b", "a"] },
          { key: "env", operator: "NotIn", values: ["dev"] },
          { key: "owner", operator: "Exists" },
          { key: "legacy", operator: "DoesNotExist" },
        ],
      }),
      "app=web,tier in (a,b),env notin (dev),owner,!legacy",
    );
    assert.throws(
      () => formatLabelSelector({ matchExpressions: [{ key: "k", operator: "In", values: [] }] }),
      /k In needs at least one value/,
    );
    assert.equal(
      formatFieldSelector({ "metadata.name": "x", "status.phase": "Running" }),
      "metadata.name=x,status.phase=Running",
    );
  });

  it("translates list, write and delete options to query and body", () => {
    assert.deepEqual(
      listQuery({ labelSelector: { matchLabels: { a: "1" } }, limit: 5, continue: "t" }),
      {
        labelSelector: "a=1",
        fieldSelector: undefined,
        limit: 5,
        continue: "t",
        resourceVersion: undefined,
        resourceVersionMatch: undefined,
      },
    );
    assert.deepEqual(
      writeQuery({ dryRun: true, fieldManager: "me", fieldValidation: "Strict", force: true }),
      {
        dryRun: "All",
        fieldManager: "me",
        fieldValidation: "Strict",
        force: true,
      },
    );
    assert.equal(deleteBody({}), undefined);
    assert.deepEqual(
      deleteBody({
        gracePeriodSeconds: 0,
        propagationPolicy: "Foreground",
        preconditions: { uid: "u" },
        dryRun: true,
      }),
      {
        apiVersion: "v1",
        kind: "DeleteOptions",
        dryRun: ["All"],
        gracePeriodSeconds: 0,
        propagationPolicy: "Foreground",
        preconditions: { uid: "u" },
      },
    );
  });
});

describe("RESTMapper", () => {
  const config: KubeConfig = {
    server: "https://api.test",
    namespace: "default",
    auth: { credentials: () => Promise.resolve({}) },
    source: "unit test",
  };

  function mapperServing(groups: Record<string, unknown[] | undefined>) {
    const asked: string[] = [];
    const rest = new RestClient(config, {
      maxRetries: 0,
      transport: {
        config,
        fetch(path) {
          asked.push(path);
          const resources = groups[path];
          return Promise.resolve(
            resources
              ? Response.json({ kind: "APIResourceList", resources })
              : new Response(JSON.stringify({ kind: "Status", code: 404, reason: "NotFound" }), {
                status: 404,
              }),
          );
        },
        close() {},
      },
    });
    return { mapper: new RESTMapper(rest), asked };
  }

  it("answers built-in and registered kinds without asking the server", async () => {
    const { mapper, asked } = mapperServing({});
    assert.equal(await mapper.resourceTypeFor({ apiVersion: "v1", kind: "ConfigMap" }), ConfigMap);
    const widget = resourceType({
      group: "example.com",
      version: "v1",
      kind: "Widget",
      scope: "Cluster",
    });
    mapper.register(widget);
    assert.equal(
      await mapper.resourceTypeFor({ apiVersion: "example.com/v1", kind: "Widget" }),
      widget,
    );
    assert.deepEqual(asked, []);
  });

  it("discovers other kinds with their scope and subresources, caching the group-version", async () => {
    const { mapper, asked } = mapperServing({
      "/apis/example.com/v1": [
        { name: "gadgets", namespaced: true, kind: "Gadget" },
        { name: "gadgets/status", namespaced: true, kind: "Gadget" },
        { name: "gadgets/scale", namespaced: true, kind: "Scale" },
        { name: "gizmos", namespaced: false, kind: "Gizmo" },
      ],
    });
    const gadget = await mapper.resourceTypeFor({ apiVersion: "example.com/v1", kind: "Gadget" });
    assert.equal(gadget.plural, "gadgets");
    assert.equal(gadget.scope, "Namespaced");
    assert.deepEqual(gadget.subresources, ["status", "scale"]);
    const gizmo = await mapper.resourceTypeFor({ apiVersion: "example.com/v1", kind: "Gizmo" });
    assert.equal(gizmo.scope, "Cluster");
    assert.deepEqual(asked, ["/apis/example.com/v1"]);
  });

  it("looks again on a miss, then fails with a no-kind-match error", async () => {
    const served: Record<string, unknown[] | undefined> = {
      "/apis/example.com/v1": [{ name: "gadgets", namespaced: true, kind: "Gadget" }],
    };
    const { mapper, asked } = mapperServing(served);
    await mapper.resourceTypeFor({ apiVersion: "example.com/v1", kind: "Gadget" });
    served["/apis/example.com/v1"]!.push({
      name: "doohickeys",
      namespaced: true,
      kind: "Doohickey",
    });
    const late = await mapper.resourceTypeFor({ apiVersion: "example.com/v1", kind: "Doohickey" });
    assert.equal(late.plural, "doohickeys");
    assert.equal(asked.length, 2, "a miss re-reads discovery once");
    await assert.rejects(
      mapper.resourceTypeFor({ apiVersion: "example.com/v1", kind: "Nothing" }),
      (err) =>
        isNoKindMatch(err) &&
        /no matches for kind "Nothing" in version "example.com\/v1"/.test(err.message),
    );
    await assert.rejects(
      mapper.resourceTypeFor({ apiVersion: "nowhere.io/v9", kind: "Thing" }),
      /the API server does not serve nowhere.io\/v9/,
    );
    await assert.rejects(
      mapper.resourceTypeFor({ apiVersion: "", kind: "Thing" }),
      /needs apiVersion and kind/,
    );
  });
});
