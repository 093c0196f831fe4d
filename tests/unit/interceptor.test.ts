// newInterceptedClient: hooks stand in for verbs of any client (the fake, the real client over a
// stand-in transport, another wrapper), get the wrapped client and the call's arguments, and
// verbs without a hook go straight through.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConfigMap, Deployment, type Pod } from "../../lib/api/builtins.ts";
import type { KubeObject } from "../../lib/api/resource.ts";
import { type Client, newClient } from "../../lib/client/client.ts";
import { type InterceptorFuncs, newInterceptedClient } from "../../lib/client/interceptor.ts";
import { jsonPatch, mergeFrom } from "../../lib/client/patch.ts";
import { withFieldOwner } from "../../lib/client/wrappers.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import { ApiError, isNotFound } from "../../lib/kube/errors.ts";
import type { Transport } from "../../lib/kube/transport.ts";
import { FakeClient } from "../../lib/testing/fake_client/mod.ts";

const TIMEOUT = { timeout: 10_000 };
const namespace = "default";

function configMap(name: string, data: Record<string, string> = {}): ConfigMap {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace, name }, data };
}

function deployment(name: string): Deployment {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { namespace, name },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } } },
    },
  };
}

function unavailable(): ApiError {
  return new ApiError({ code: 503, reason: "ServiceUnavailable", message: "injected" });
}

function isUnavailable(err: unknown): boolean {
  return err instanceof ApiError && err.code === 503;
}

describe("newInterceptedClient over a FakeClient", () => {
  it("passes every verb without a hook straight to the wrapped client", TIMEOUT, async () => {
    const fake = new FakeClient({ objects: [deployment("web")] });
    const client = newInterceptedClient(fake, {});
    assert.equal(client.mapper, fake.mapper);

    const created = await client.create(configMap("a", { k: "1" }));
    const got = await client.get(ConfigMap, { namespace, name: "a" });
    assert.deepEqual(got, created);
    const updated = await client.update({ ...got, data: { k: "2" } });
    const patched = await client.patch({ ...updated, data: { k: "3" } }, mergeFrom(updated));
    assert.deepEqual(patched.data, { k: "3" });
    await client.apply(configMap("b", { k: "1" }), { fieldManager: "test" });
    const names = [];
    for await (const cm of client.listAll(ConfigMap, { namespace, pageSize: 1 })) {
      names.push(cm.metadata?.name);
    }
    assert.deepEqual(names, ["a", "b"]);

    const web = await client.get(Deployment, { namespace, name: "web" });
    await client.status().update({ ...web, status: { replicas: 1 } });
    const scale = await client.subResource("scale").get<{ spec: { replicas: number } }>(web);
    assert.equal(scale.spec.replicas, 1);
    const fresh = await fake.get(Deployment, { namespace, name: "web" });
    assert.equal(fresh.status?.replicas, 1);

    await client.delete(patched);
    await client.deleteAllOf(ConfigMap, { namespace });
    assert.equal((await fake.list(ConfigMap, { namespace })).items.length, 0);
  });

  it("hands each hook the wrapped client and the call's arguments as given", TIMEOUT, async () => {
    const fake = new FakeClient({ objects: [deployment("web"), configMap("a")] });
    const seen: { verb: string; client: Client; args: unknown[] }[] = [];
    const note = (verb: string, client: Client, ...args: unknown[]) =>
      seen.push({ verb, client, args });
    const client = newInterceptedClient(fake, {
      get: (inner, type, key, options) => {
        note("get", inner, type, key, options);
        return inner.get(type, key, options);
      },
      list: (inner, type, options) => {
        note("list", inner, type, options);
        return inner.list(type, options);
      },
      create: (inner, obj, options) => {
        note("create", inner, obj, options);
        return inner.create(obj, options);
      },
      update: (inner, obj, options) => {
        note("update", inner, obj, options);
        return inner.update(obj, options);
      },
      patch: (inner, obj, patch, options) => {
        note("patch", inner, obj, patch, options);
        return inner.patch(obj, patch, options);
      },
      apply: (inner, obj, options) => {
        note("apply", inner, obj, options);
        return inner.apply(obj, options);
      },
      delete: (inner, obj, options) => {
        note("delete", inner, obj, options);
        return inner.delete(obj, options);
      },
      deleteAllOf: (inner, type, options) => {
        note("deleteAllOf", inner, type, options);
        return inner.deleteAllOf(type, options);
      },
      subResourceGet: (inner, name, obj, options) => {
        note(`${name}.get`, inner, obj, options);
        return inner.subResource(name).get(obj, options);
      },
      subResourceCreate: (inner, name, obj, body, options) => {
        note(`${name}.create`, inner, obj, body, options);
        return inner.subResource(name).create(obj, body, options);
      },
      subResourceUpdate: (inner, name, obj, options) => {
        note(`${name}.update`, inner, obj, options);
        return inner.subResource(name).update(obj, options);
      },
      subResourcePatch: (inner, name, obj, patch, options) => {
        note(`${name}.patch`, inner, obj, patch, options);
        return inner.subResource(name).patch(obj, patch, options);
      },
      subResourceApply: (inner, name, obj, options) => {
        note(`${name}.apply`, inner, obj, options);
        return inner.subResource(name).apply(obj, options);
      },
    });

    const key = { namespace, name: "a" };
    const getOptions = { resourceVersion: "" };
    const a = await client.get(ConfigMap, key, getOptions);
    const listOptions = { namespace };
    await client.list(ConfigMap, listOptions);
    const b = configMap("b");
    const createOptions = { fieldManager: "creator" };
    await client.create(b, createOptions);
    const changed = { ...a, data: { k: "v" } };
    await client.update(changed);
    const patch = mergeFrom(a);
    await client.patch(changed, patch);
    const applied = configMap("c", { k: "v" });
    const applyOptions = { fieldManager: "applier" };
    await client.apply(applied, applyOptions);
    const web = await client.get(Deployment, { namespace, name: "web" });
    await client.subResource("scale").get(web);
    await client.status().update({ ...web, status: { replicas: 1 } });
    const statusPatch = jsonPatch([{ op: "replace", path: "/status/replicas", value: 2 }]);
    await client.status().patch(web, statusPatch);
    await client.status().apply(
      { apiVersion: "apps/v1", kind: "Deployment", metadata: { namespace, name: "web" } },
      applyOptions,
    );
    const pod: Pod = { apiVersion: "v1", kind: "Pod", metadata: { namespace, name: "p" } };
    await fake.create(pod);
    const eviction = { apiVersion: "policy/v1", kind: "Eviction", metadata: { namespace } };
    await client.subResource("eviction").create(pod, eviction);
    const deleteOptions = { dryRun: true };
    await client.delete(changed, deleteOptions);
    await client.deleteAllOf(ConfigMap, listOptions);

    assert.ok(seen.every((call) => call.client === fake), "every hook gets the wrapped client");
    const byVerb = new Map(seen.map((call) => [call.verb, call.args]));
    assert.deepEqual([...new Set(seen.map((call) => call.verb))], [
      "get",
      "list",
      "create",
      "update",
      "patch",
      "apply",
      "scale.get",
      "status.update",
      "status.patch",
      "status.apply",
      "eviction.create",
      "delete",
      "deleteAllOf",
    ]);
    const [type, gotKey, gotOptions] = seen[0].args;
    assert.equal(type, ConfigMap);
    assert.equal(gotKey, key);
    assert.equal(gotOptions, getOptions);
    assert.equal(byVerb.get("list")?.[1], listOptions);
    assert.equal(byVerb.get("create")?.[0], b);
    assert.equal(byVerb.get("create")?.[1], createOptions);
    assert.equal(byVerb.get("patch")?.[0], changed);
    assert.equal(byVerb.get("patch")?.[1], patch);
    assert.equal(byVerb.get("apply")?.[0], applied);
    assert.equal(byVerb.get("status.patch")?.[1], statusPatch);
    assert.equal(byVerb.get("eviction.create")?.[1], eviction);
    assert.equal(byVerb.get("delete")?.[1], deleteOptions);
    assert.equal(byVerb.get("deleteAllOf")?.[0], ConfigMap);
  });

  it("pages listAll through the list hook, so it sees every page", TIMEOUT, async () => {
    const fake = new FakeClient({ objects: ["a", "b", "c"].map((name) => configMap(name)) });
    const pages: (string | undefined)[] = [];
    const client = newInterceptedClient(fake, {
      list: (inner, type, options) => {
        pages.push(options?.continue);
        return inner.list(type, options);
      },
    });
    const names = [];
    for await (const cm of client.listAll(ConfigMap, { namespace, pageSize: 2 })) {
      names.push(cm.metadata?.name);
    }
    assert.deepEqual(names, ["a", "b", "c"]);
    assert.equal(pages.length, 2);
    assert.equal(pages[0], undefined);
    assert.ok(pages[1], "the second page continues the first");
  });

  it("changes arguments and results, and injects a failure into one call", TIMEOUT, async () => {
    const fake = new FakeClient({ objects: [configMap("settings", { mode: "slow" })] });
    let failures = 1;
    const client = newInterceptedClient(fake, {
      create: (inner, obj, options) =>
        inner.create({ ...obj, metadata: { ...obj.metadata, labels: { by: "hook" } } }, options),
      update: (inner, obj, options) =>
        failures-- > 0 ? Promise.reject(unavailable()) : inner.update(obj, options),
      get: async (inner, type, key, options) => {
        const obj = await inner.get(type, key, options);
        return { ...obj, metadata: { ...obj.metadata, annotations: { read: "yes" } } };
      },
    });
    const made = await client.create(configMap("new"));
    assert.deepEqual(made.metadata?.labels, { by: "hook" });
    const settings = await client.get(ConfigMap, { namespace, name: "settings" });
    assert.deepEqual(settings.metadata?.annotations, { read: "yes" });
    await assert.rejects(client.update({ ...settings, data: { mode: "fast" } }), isUnavailable);
    const updated = await client.update({ ...settings, data: { mode: "fast" } });
    assert.deepEqual(updated.data, { mode: "fast" });
  });

  it("composes: the outer hook runs first, then the inner one", TIMEOUT, async () => {
    const order: string[] = [];
    const inner = newInterceptedClient(new FakeClient(), {
      create: (client, obj, options) => {
        order.push(`inner ${options?.fieldManager}`);
        return client.create(obj, options);
      },
    });
    const outer = newInterceptedClient(inner, {
      create: (client, obj, options) => {
        order.push(`outer ${options?.fieldManager}`);
        return client.create(obj, options);
      },
    });
    // The client wrappers compose with it too.
    await withFieldOwner(outer, "owner").create(configMap("a"));
    assert.deepEqual(order, ["outer owner", "inner owner"]);
    assert.ok(await inner.get(ConfigMap, { namespace, name: "a" }));
  });

  it(
    "turns a hook that throws into a rejection, as the client's own verbs fail",
    TIMEOUT,
    async () => {
      const notFound = () => {
        throw new ApiError({ code: 404, reason: "NotFound", message: "gone" });
      };
      const client = newInterceptedClient(new FakeClient(), {
        get: notFound,
        create: notFound,
        update: notFound,
        patch: notFound,
        apply: notFound,
        delete: notFound,
        deleteAllOf: notFound,
        list: notFound,
        subResourceGet: notFound,
        subResourceCreate: notFound,
        subResourceUpdate: notFound,
        subResourcePatch: notFound,
        subResourceApply: notFound,
      });
      const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", namespace: "n" } };
      const calls: (() => Promise<unknown>)[] = [
        () => client.get(ConfigMap, { namespace: "n", name: "a" }),
        () => client.list(ConfigMap),
        () => client.create(cm),
        () => client.update(cm),
        () => client.patch(cm, mergeFrom(cm)),
        () => client.apply(cm, { fieldManager: "test" }),
        () => client.delete(cm),
        () => client.deleteAllOf(ConfigMap, { namespace: "n" }),
        () => client.status().get(cm),
        () => client.subResource("eviction").create(cm, {}),
        () => client.status().update(cm),
        () => client.status().patch(cm, mergeFrom(cm)),
        () => client.status().apply(cm, { fieldManager: "test" }),
      ];
      for (const call of calls) {
        // A synchronous throw would escape .catch() and fail here instead of resolving.
        assert.equal(await call().catch((err) => (isNotFound(err) ? "caught" : err)), "caught");
      }
    },
  );

  it("keeps the hooks it was given, not later changes to the object", TIMEOUT, async () => {
    const funcs: InterceptorFuncs = {};
    const client = newInterceptedClient(new FakeClient(), funcs);
    funcs.get = () => Promise.reject(unavailable());
    await assert.rejects(client.get(ConfigMap, { namespace, name: "absent" }), isNotFound);
  });
});

describe("newInterceptedClient over the real client", () => {
  const config: KubeConfig = {
    server: "https://api.test:6443",
    namespace,
    auth: { credentials: () => Promise.resolve({}) },
    source: "unit test",
  };

  /** The client of newClient over a transport that records paths and answers `body`. */
  function realClient(body: (path: string) => unknown) {
    const paths: string[] = [];
    const transport: Transport = {
      config,
      fetch(path, init = {}) {
        paths.push(`${init.method ?? "GET"} ${path}`);
        return Promise.resolve(Response.json(body(path)));
      },
      close() {},
    };
    return { client: newClient(config, { transport, maxRetries: 0 }), paths };
  }

  it("injects a failure before any request is sent, and delegates the rest", TIMEOUT, async () => {
    const { client: real, paths } = realClient((path) => ({
      metadata: { namespace, name: path.split("/").pop() },
      data: { from: "server" },
    }));
    const client = newInterceptedClient(real, {
      get: (inner, type, key, options) =>
        key.name === "broken" ? Promise.reject(unavailable()) : inner.get(type, key, options),
    });
    await assert.rejects(client.get(ConfigMap, { namespace, name: "broken" }), isUnavailable);
    assert.deepEqual(paths, [], "the failing call never reached the server");

    const found = await client.get(ConfigMap, { namespace, name: "settings" });
    assert.equal(found.kind, "ConfigMap");
    assert.deepEqual(found.data, { from: "server" });
    await client.delete(found);
    assert.deepEqual(paths, [
      "GET /api/v1/namespaces/default/configmaps/settings",
      "DELETE /api/v1/namespaces/default/configmaps/settings",
    ]);
  });
});

// Not run: hooks are typed as the verbs they stand in for.
function _typedHooks(fake: FakeClient): Client {
  return newInterceptedClient(fake, {
    // A get hook answers the type it was asked for…
    get: (inner, type, key, options) => inner.get(type, key, options),
    // @ts-expect-error …not some other object.
    list: (_inner, _type, _options) => Promise.resolve({ items: [] as KubeObject[] }),
    // @ts-expect-error an update hook must answer the object's type.
    update: (_inner, _obj, _options) => Promise.resolve(configMap("other")),
  });
}
