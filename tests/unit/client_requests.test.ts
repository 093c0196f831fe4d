// The requests the API client sends for each verb (method, path, query, content type, body),
// what it makes of the answers, and the mistakes it refuses before sending anything: a missing
// name or namespace, a missing field manager, a bad subresource name. The transport records
// every request and answers as the test says, so no server is involved.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConfigMap, Deployment, Namespace, Pod } from "../../lib/api/builtins.ts";
import { type KubeObject, resourceType } from "../../lib/api/resource.ts";
import { deepFreeze } from "../../lib/api/readonly.ts";
import { RESTMapper } from "../../lib/api/discovery.ts";
import { type Client, newClient } from "../../lib/client/client.ts";
import { jsonPatch, mergeFrom, rawPatch } from "../../lib/client/patch.ts";
import { ApiError, isNotFound } from "../../lib/kube/errors.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import { RestClient } from "../../lib/kube/rest.ts";
import type { Transport } from "../../lib/kube/transport.ts";

const T = { timeout: 30_000 };
const NS = "team";

const config: KubeConfig = {
  server: "https://api.test:6443",
  namespace: "default",
  auth: { credentials: () => Promise.resolve({}) },
  source: "unit test",
};

interface Sent {
  method: string;
  path: string;
  query: Record<string, string[]>;
  contentType?: string;
  body?: unknown;
}

type Answer = { status?: number; body?: unknown } | undefined;

/**
 * A transport that records each request; `answer` gives the reply (default: the request's body
 * as sent, or `{}`), with status 200 unless it says otherwise.
 */
function recorder(answer: (sent: Sent) => Answer = () => undefined) {
  const sent: Sent[] = [];
  const transport: Transport = {
    config,
    fetch(target, init = {}) {
      const url = new URL(target, "https://api.test");
      const query: Record<string, string[]> = {};
      for (const [key, value] of url.searchParams) (query[key] ??= []).push(value);
      const headers = new Headers(init.headers);
      const raw = typeof init.body === "string" ? init.body : undefined;
      let body: unknown = raw;
      if (raw !== undefined && headers.get("Content-Type") !== "application/apply-patch+yaml") {
        body = JSON.parse(raw);
      }
      const request: Sent = {
        method: init.method ?? "GET",
        path: url.pathname,
        query,
        contentType: headers.get("Content-Type") ?? undefined,
        body,
      };
      sent.push(request);
      const reply = answer(request);
      const replyBody = reply?.body ?? (raw !== undefined ? JSON.parse(raw) : {});
      return Promise.resolve(
        new Response(JSON.stringify(replyBody), {
          status: reply?.status ?? 200,
          headers: { "content-type": "application/json" },
        }),
      );
    },
    close() {},
  };
  return { transport, sent };
}

function clientWith(answer?: (sent: Sent) => Answer) {
  const { transport, sent } = recorder(answer);
  const client = newClient(config, { transport, maxRetries: 0 });
  return { client, sent };
}

const cm = (name: string, extra: Partial<ConfigMap> = {}): ConfigMap => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { namespace: NS, name },
  ...extra,
});

const CM_PATH = `/api/v1/namespaces/${NS}/configmaps`;

/** The error `promise` rejects with. */
async function failure(promise: Promise<unknown>): Promise<Error> {
  const err = await promise.then(() => undefined, (e: unknown) => e);
  assert.ok(err instanceof Error, `expected a rejection, got ${err}`);
  return err;
}

describe("get", T, () => {
  it("reads the object's path, with resourceVersion only when given", async () => {
    const { client, sent } = clientWith(() => ({ body: cm("a", { data: { x: "1" } }) }));
    const got = await client.get(ConfigMap, { namespace: NS, name: "a" });
    assert.equal(got.data?.x, "1");
    await client.get(ConfigMap, { namespace: NS, name: "a" }, { resourceVersion: "0" });
    assert.deepEqual(sent.map((s) => [s.method, s.path, s.query]), [
      ["GET", `${CM_PATH}/a`, {}],
      ["GET", `${CM_PATH}/a`, { resourceVersion: ["0"] }],
    ]);
  });

  it("fills in apiVersion and kind the answer leaves out, and keeps those it has", async () => {
    const { client } = clientWith((s) =>
      s.path.endsWith("/bare")
        ? { body: { metadata: { name: "bare" } } }
        : { body: { apiVersion: "v9", kind: "Other", metadata: { name: "kept" } } }
    );
    const bare = await client.get(ConfigMap, { namespace: NS, name: "bare" });
    assert.equal(bare.apiVersion, "v1");
    assert.equal(bare.kind, "ConfigMap");
    const kept = await client.get(ConfigMap, { namespace: NS, name: "kept" });
    assert.equal(kept.apiVersion, "v9");
    assert.equal(kept.kind, "Other");
  });

  it("refuses a missing name, and a namespaced kind without a namespace, sending nothing", async () => {
    const { client, sent } = clientWith();
    const noName = await failure(client.get(ConfigMap, { namespace: NS, name: "" }));
    assert.equal(noName.message, "get ConfigMap: a name is required");
    const noNs = await failure(client.get(ConfigMap, { name: "a" }));
    assert.equal(
      noNs.message,
      "get ConfigMap a: a namespace is required, ConfigMap is namespaced",
    );
    assert.deepEqual(sent, []);
  });

  it("ignores the namespace of a cluster-scoped kind", async () => {
    const { client, sent } = clientWith();
    await client.get(Namespace, { name: "team" });
    await client.get(Namespace, { namespace: "ignored", name: "team" });
    assert.deepEqual(sent.map((s) => s.path), [
      "/api/v1/namespaces/team",
      "/api/v1/namespaces/team",
    ]);
  });

  it("resolves a bare group-version-kind through the mapper", async () => {
    const { client, sent } = clientWith(() => ({ body: { metadata: { name: "web" } } }));
    const got = await client.get(
      { apiVersion: "apps/v1", kind: "Deployment" },
      { namespace: NS, name: "web" },
    );
    assert.equal(got.kind, "Deployment");
    assert.equal(got.apiVersion, "apps/v1");
    assert.deepEqual(sent.map((s) => s.path), [`/apis/apps/v1/namespaces/${NS}/deployments/web`]);
  });

  it("turns an error status into an ApiError with the server's reason", async () => {
    const { client } = clientWith(() => ({
      status: 404,
      body: {
        apiVersion: "v1",
        kind: "Status",
        status: "Failure",
        reason: "NotFound",
        message: 'configmaps "a" not found',
        code: 404,
      },
    }));
    const err = await failure(client.get(ConfigMap, { namespace: NS, name: "a" }));
    assert.ok(err instanceof ApiError);
    assert.ok(isNotFound(err));
    assert.match(err.message, /configmaps "a" not found/);
  });
});

describe("list and listAll", T, () => {
  it("lists in a namespace or in all, with the selectors and paging as query", async () => {
    const { client, sent } = clientWith(() => ({
      body: { apiVersion: "v1", kind: "ConfigMapList", metadata: {}, items: [] },
    }));
    await client.list(ConfigMap, {
      namespace: NS,
      labelSelector: { matchLabels: { app: "web" } },
      fieldSelector: { "metadata.name": "a,b" },
      limit: 10,
      continue: "tok",
      resourceVersion: "5",
      resourceVersionMatch: "NotOlderThan",
    });
    await client.list(ConfigMap);
    assert.deepEqual(sent[0].path, CM_PATH);
    assert.deepEqual(sent[0].query, {
      labelSelector: ["app=web"],
      fieldSelector: ["metadata.name=a\\,b"],
      limit: ["10"],
      continue: ["tok"],
      resourceVersion: ["5"],
      resourceVersionMatch: ["NotOlderThan"],
    });
    assert.deepEqual([sent[1].path, sent[1].query], ["/api/v1/configmaps", {}]);
  });

  it("types each item and fills in what an answer leaves out", async () => {
    const { client } = clientWith((s) =>
      s.path === CM_PATH
        ? { body: { kind: "ConfigMapList", items: [{ metadata: { name: "a" } }] } }
        : { body: { kind: "ConfigMapList", metadata: { resourceVersion: "3" } } }
    );
    const some = await client.list(ConfigMap, { namespace: NS });
    assert.deepEqual(some.items, [{
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "a" },
    }]);
    assert.deepEqual(some.metadata, {}, "a list without metadata gets an empty one");
    const none = await client.list(ConfigMap);
    assert.deepEqual(none.items, [], "a list without items is empty");
    assert.equal(none.metadata.resourceVersion, "3");
  });

  it("listAll follows continue tokens with a page size of 500 unless told", async () => {
    const pages: Record<string, { items: unknown[]; continue?: string }> = {
      "": { items: [{ metadata: { name: "a" } }, { metadata: { name: "b" } }], continue: "p2" },
      p2: { items: [{ metadata: { name: "c" } }], continue: "p3" },
      p3: { items: [{ metadata: { name: "d" } }], continue: "" },
    };
    const { client, sent } = clientWith((s) => {
      const page = pages[s.query.continue?.[0] ?? ""];
      return { body: { items: page.items, metadata: { continue: page.continue } } };
    });
    const names: string[] = [];
    for await (const c of client.listAll(ConfigMap, { namespace: NS, labelSelector: "x=y" })) {
      assert.equal(c.kind, "ConfigMap");
      names.push(c.metadata?.name ?? "");
    }
    assert.deepEqual(names, ["a", "b", "c", "d"]);
    assert.deepEqual(sent.map((s) => s.query), [
      { labelSelector: ["x=y"], limit: ["500"] },
      { labelSelector: ["x=y"], limit: ["500"], continue: ["p2"] },
      { labelSelector: ["x=y"], limit: ["500"], continue: ["p3"] },
    ]);
    sent.length = 0;
    const first = [];
    for await (const c of client.listAll(ConfigMap, { pageSize: 2 })) {
      first.push(c);
      break;
    }
    assert.deepEqual(sent.map((s) => s.query), [{ limit: ["2"] }], "a page only when consumed");
  });
});

describe("create, update, patch and apply", T, () => {
  it("create posts to the collection, with the write options as query", async () => {
    const { client, sent } = clientWith((s) => ({
      body: { ...(s.body as object), metadata: { name: "a", uid: "u1" } },
    }));
    const created = await client.create(cm("a", { data: { x: "1" } }), {
      dryRun: true,
      fieldManager: "me",
      fieldValidation: "Strict",
    });
    assert.equal(created.metadata?.uid, "u1");
    assert.deepEqual(sent[0], {
      method: "POST",
      path: CM_PATH,
      query: { dryRun: ["All"], fieldManager: ["me"], fieldValidation: ["Strict"] },
      contentType: "application/json",
      body: cm("a", { data: { x: "1" } }),
    });
    await client.create(cm("b"), { dryRun: false });
    assert.deepEqual(sent[1].query, {}, "dryRun false sends nothing");
  });

  it("create of a namespaced kind needs a namespace; the message names the object", async () => {
    const { client, sent } = clientWith();
    const named = await failure(
      client.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a" } }),
    );
    assert.equal(
      named.message,
      "create ConfigMap a: a namespace is required, ConfigMap is namespaced",
    );
    const generated = await failure(
      client.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { generateName: "gen-" } }),
    );
    assert.match(generated.message, /^create ConfigMap gen-: /);
    const nameless = await failure(client.create({ apiVersion: "v1", kind: "ConfigMap" }));
    assert.match(nameless.message, /^create ConfigMap \(no name\): /);
    assert.equal(sent.length, 0);
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "n" } });
    assert.equal(sent[0].path, "/api/v1/namespaces", "cluster-scoped: no namespace needed");
  });

  it("update puts the object to its own path", async () => {
    const { client, sent } = clientWith();
    const updated = await client.update(cm("a", { data: { x: "2" } }), { fieldManager: "me" });
    assert.equal(updated.data?.x, "2");
    assert.deepEqual(
      [sent[0].method, sent[0].path, sent[0].query, sent[0].contentType],
      ["PUT", `${CM_PATH}/a`, { fieldManager: ["me"] }, "application/json"],
    );
  });

  it("update refuses an object without a name or namespace, naming it", async () => {
    const { client, sent } = clientWith();
    const noName = await failure(
      client.update({ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: NS } }),
    );
    assert.equal(noName.message, `ConfigMap ${NS}/(no name): metadata.name is required`);
    const noNs = await failure(
      client.update({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a" } }),
    );
    assert.equal(noNs.message, "ConfigMap a: a namespace is required, ConfigMap is namespaced");
    const noKind = await failure(client.update({ metadata: { name: "a" } } as KubeObject));
    assert.match(noKind.message, /needs apiVersion and kind/);
    assert.deepEqual(sent, []);
  });

  it("patch sends what the patch computes, under its content type", async () => {
    const { client, sent } = clientWith(() => ({ body: cm("a", { data: { x: "2" } }) }));
    const original = deepFreeze(cm("a", { data: { x: "1" } }));
    const patched = await client.patch(
      { ...original, data: { x: "2" } },
      mergeFrom(original),
      { fieldManager: "me", force: false },
    );
    assert.equal(patched.data?.x, "2");
    await client.patch(original, jsonPatch([{ op: "remove", path: "/data/x" }]));
    assert.deepEqual(sent.map((s) => [s.method, s.path, s.contentType, s.body, s.query]), [
      [
        "PATCH",
        `${CM_PATH}/a`,
        "application/merge-patch+json",
        { data: { x: "2" } },
        { fieldManager: ["me"], force: ["false"] },
      ],
      [
        "PATCH",
        `${CM_PATH}/a`,
        "application/json-patch+json",
        [{ op: "remove", path: "/data/x" }],
        {},
      ],
    ]);
  });

  it("apply sends the whole object as an apply patch, and needs a field manager", async () => {
    const { client, sent } = clientWith(() => ({ body: cm("a") }));
    const intent = cm("a", { data: { x: "1" } });
    await client.apply(intent, { fieldManager: "me", force: true });
    assert.deepEqual(sent[0], {
      method: "PATCH",
      path: `${CM_PATH}/a`,
      query: { fieldManager: ["me"], force: ["true"] },
      contentType: "application/apply-patch+yaml",
      body: JSON.stringify(intent),
    });
    const err = await failure(client.apply(intent, { fieldManager: "" }));
    assert.equal(
      err.message,
      `apply ConfigMap ${NS}/a: a fieldManager is required for server-side apply`,
    );
    assert.equal(sent.length, 1);
  });
});

describe("delete and deleteAllOf", T, () => {
  it("delete sends DeleteOptions only when one is set", async () => {
    const { client, sent } = clientWith(() => ({ body: { kind: "Status", status: "Success" } }));
    await client.delete(deepFreeze(cm("a")));
    await client.delete(cm("a"), {
      dryRun: true,
      gracePeriodSeconds: 0,
      propagationPolicy: "Foreground",
      preconditions: { uid: "u1" },
    });
    assert.deepEqual(sent.map((s) => [s.method, s.path, s.body]), [
      ["DELETE", `${CM_PATH}/a`, undefined],
      ["DELETE", `${CM_PATH}/a`, {
        apiVersion: "v1",
        kind: "DeleteOptions",
        dryRun: ["All"],
        gracePeriodSeconds: 0,
        propagationPolicy: "Foreground",
        preconditions: { uid: "u1" },
      }],
    ]);
  });

  it("deleteAllOf deletes the collection with selectors as query and options as body", async () => {
    const { client, sent } = clientWith(() => ({ body: { kind: "Status" } }));
    await client.deleteAllOf(ConfigMap, {
      namespace: NS,
      labelSelector: "app=web",
      propagationPolicy: "Background",
    });
    assert.deepEqual(sent[0], {
      method: "DELETE",
      path: CM_PATH,
      query: { labelSelector: ["app=web"] },
      contentType: "application/json",
      body: { apiVersion: "v1", kind: "DeleteOptions", propagationPolicy: "Background" },
    });
    const err = await failure(client.deleteAllOf(ConfigMap));
    assert.equal(
      err.message,
      "deleteAllOf ConfigMap: a namespace is required, ConfigMap is namespaced",
    );
    await client.deleteAllOf({ apiVersion: "v1", kind: "Namespace" }, {
      labelSelector: "tmp",
    });
    assert.deepEqual([sent[1].path, sent[1].query, sent[1].body], [
      "/api/v1/namespaces",
      { labelSelector: ["tmp"] },
      undefined,
    ]);
    assert.equal(sent.length, 2);
  });
});

describe("subresources", T, () => {
  const deployment: Deployment = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { namespace: NS, name: "web" },
  };
  const DEPLOY = `/apis/apps/v1/namespaces/${NS}/deployments/web`;

  it("refuses an empty name or one with a slash", () => {
    const { client } = clientWith();
    assert.throws(() => client.subResource(""), /invalid subresource name ""/);
    assert.throws(() => client.subResource("status/x"), /invalid subresource name "status\/x"/);
  });

  it("get and create address the subresource and return the answer as it is", async () => {
    const { client, sent } = clientWith((s) =>
      s.method === "GET"
        ? { body: { kind: "Scale", spec: { replicas: 3 } } }
        : { body: { kind: "Status", status: "Success" } }
    );
    const scale = await client.subResource("scale").get<{ kind: string }>(deployment, {
      resourceVersion: "0",
    });
    assert.equal(scale.kind, "Scale");
    const pod = { apiVersion: "v1", kind: "Pod", metadata: { namespace: NS, name: "p" } };
    const eviction = { apiVersion: "policy/v1", kind: "Eviction", metadata: { name: "p" } };
    const answer = await client.subResource("eviction").create<{ kind: string }>(pod, eviction, {
      dryRun: true,
    });
    assert.equal(answer.kind, "Status", "not typed as the object: no apiVersion filled in");
    assert.deepEqual(sent.map((s) => [s.method, s.path, s.query, s.body]), [
      ["GET", `${DEPLOY}/scale`, { resourceVersion: ["0"] }, undefined],
      ["POST", `/api/v1/namespaces/${NS}/pods/p/eviction`, { dryRun: ["All"] }, eviction],
    ]);
    await failure(client.subResource("scale").get({ ...deployment, metadata: { name: "web" } }));
    assert.equal(sent.length, 2, "no namespace: nothing sent");
  });

  it("update sends the object, or the body given instead", async () => {
    const { client, sent } = clientWith();
    await client.status().update({ ...deployment, status: { replicas: 1 } }, {
      fieldManager: "me",
    });
    const scale = {
      apiVersion: "autoscaling/v1",
      kind: "Scale",
      metadata: { namespace: NS, name: "web" },
      spec: { replicas: 4 },
    };
    const updated = await client.subResource("scale").update(deployment, { body: scale });
    assert.equal(updated.kind, "Scale");
    assert.deepEqual(sent.map((s) => [s.method, s.path, s.query, s.body]), [
      ["PUT", `${DEPLOY}/status`, { fieldManager: ["me"] }, {
        ...deployment,
        status: { replicas: 1 },
      }],
      ["PUT", `${DEPLOY}/scale`, {}, scale],
    ]);
  });

  it("patch computes the patch against the body when one is given", async () => {
    const { client, sent } = clientWith(() => ({ body: { kind: "Scale" } }));
    const seen: unknown[] = [];
    const recording = {
      type: "application/merge-patch+json" as const,
      data: (target: unknown) => {
        seen.push(target);
        return { spec: { replicas: 2 } };
      },
    };
    const body = { apiVersion: "autoscaling/v1", kind: "Scale", spec: { replicas: 1 } };
    await client.subResource("scale").patch(deployment, recording, { body, dryRun: true });
    await client.status().patch(
      deployment,
      rawPatch("application/merge-patch+json", {
        status: { replicas: 0 },
      }),
    );
    assert.deepEqual(seen, [body], "the patch's target is the body");
    assert.deepEqual(sent.map((s) => [s.method, s.path, s.query, s.contentType, s.body]), [
      ["PATCH", `${DEPLOY}/scale`, { dryRun: ["All"] }, "application/merge-patch+json", {
        spec: { replicas: 2 },
      }],
      ["PATCH", `${DEPLOY}/status`, {}, "application/merge-patch+json", {
        status: { replicas: 0 },
      }],
    ]);
  });

  it("apply of a subresource needs a field manager too", async () => {
    const { client, sent } = clientWith(() => ({ body: deployment }));
    await client.status().apply(deployment, { fieldManager: "me" });
    assert.deepEqual(
      [sent[0].method, sent[0].path, sent[0].contentType, sent[0].query],
      ["PATCH", `${DEPLOY}/status`, "application/apply-patch+yaml", { fieldManager: ["me"] }],
    );
    await failure(client.status().apply(deployment, { fieldManager: "" }));
    assert.equal(sent.length, 1);
  });
});

describe("newClient", T, () => {
  it("shares a given REST client and mapper, and registers the given types", async () => {
    const { transport, sent } = recorder();
    const rest = new RestClient(config, { transport });
    const mapper = new RESTMapper();
    const widget = resourceType({
      group: "example.com",
      version: "v1",
      kind: "Widget",
      scope: "Namespaced",
    });
    const client: Client = newClient(config, { rest, mapper, types: [widget] });
    assert.equal(client.mapper, mapper);
    assert.equal(await mapper.resourceTypeFor(widget), widget, "registered with the given mapper");
    await client.get({ apiVersion: "example.com/v1", kind: "Widget" }, {
      namespace: NS,
      name: "w",
    });
    assert.deepEqual(sent.map((s) => s.path), [`/apis/example.com/v1/namespaces/${NS}/widgets/w`]);
  });

  it("makes a mapper that discovers unknown kinds through its REST client", async () => {
    const { client, sent } = clientWith((s) =>
      s.path === "/apis/example.com/v1"
        ? {
          body: {
            kind: "APIResourceList",
            groupVersion: "example.com/v1",
            resources: [{ name: "gadgets", kind: "Gadget", namespaced: false, verbs: ["get"] }],
          },
        }
        : { body: { metadata: { name: "g" } } }
    );
    const got = await client.get({ apiVersion: "example.com/v1", kind: "Gadget" }, { name: "g" });
    assert.equal(got.kind, "Gadget");
    assert.deepEqual(sent.map((s) => s.path), [
      "/apis/example.com/v1",
      "/apis/example.com/v1/gadgets/g",
    ]);
  });

  it("resolves the kind of a written object from the object", async () => {
    const { client, sent } = clientWith();
    await client.create(
      {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { namespace: NS, name: "p" },
      } satisfies Pod,
    );
    assert.equal(sent[0].path, `/api/v1/namespaces/${NS}/pods`);
  });
});
