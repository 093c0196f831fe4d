// controllerutil: createOrUpdate and createOrPatch against the FakeClient (what each result
// means, which writes happen, frozen objects), owner references and finalizers.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConfigMap, Deployment } from "../../lib/api/builtins.ts";
import type { OwnerReference } from "../../lib/api/generated/meta_v1.ts";
import { type KubeObject, resourceType } from "../../lib/api/resource.ts";
import { deepFreeze } from "../../lib/api/readonly.ts";
import type { CachedClient } from "../../lib/cache/cached_client.ts";
import type { Client } from "../../lib/client/client.ts";
import type { Patch } from "../../lib/client/patch.ts";
import { ApiError, isForbidden } from "../../lib/kube/errors.ts";
import { FakeClient } from "../../lib/testing/fake_client/mod.ts";
import { type InterceptorFuncs, newInterceptedClient } from "../../lib/client/interceptor.ts";
import {
  addFinalizer,
  AlreadyOwnedError,
  containsFinalizer,
  createOrPatch,
  createOrUpdate,
  getControllerOf,
  hasControllerReference,
  hasOwnerReference,
  type ObjectClient,
  removeFinalizer,
  removeOwnerReference,
  setControllerReference,
  setOwnerReference,
} from "../../lib/controllerutil/controllerutil.ts";

const namespace = "default";

function configMap(name: string, data?: Record<string, string>): ConfigMap {
  const cm: ConfigMap = { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace, name } };
  if (data) cm.data = data;
  return cm;
}

function deployment(name: string, replicas = 1): Deployment {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { namespace, name, labels: { app: name } },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: "web", image: "nginx:1.27" }] },
      },
    },
  };
}

/** Every write the fake sees, with the body of each patch. */
interface Writes {
  verbs: string[];
  patches: { subresource: string; body: unknown }[];
}

/** A FakeClient that records its writes, and may hand out frozen objects like a cache. */
function recordingClient(
  objects: KubeObject[] = [],
  options: { frozenReads?: boolean; get?: InterceptorFuncs["get"] } = {},
): { client: Client; writes: Writes } {
  const writes: Writes = { verbs: [], patches: [] };
  const client = newInterceptedClient(new FakeClient({ objects }), {
    get: async (inner, type, key, opts) => {
      const obj = options.get
        ? await options.get(inner, type, key, opts)
        : await inner.get(type, key, opts);
      // Frozen in place, as a cache hands out its objects.
      if (options.frozenReads) deepFreeze(obj);
      return obj;
    },
    create: async (inner, obj, opts) => {
      writes.verbs.push("create");
      return await inner.create(obj, opts);
    },
    update: async (inner, obj, opts) => {
      writes.verbs.push("update");
      return await inner.update(obj, opts);
    },
    patch: async (inner, obj, patch, opts) => {
      writes.verbs.push("patch");
      writes.patches.push({ subresource: "", body: patch.data(obj) });
      return await inner.patch(obj, patch, opts);
    },
    subResourceUpdate: async (inner, name, obj, opts) => {
      writes.verbs.push(`${name}.update`);
      return await inner.subResource(name).update(obj, opts);
    },
    subResourcePatch: async (inner, name, obj, patch, opts) => {
      writes.verbs.push(`${name}.patch`);
      // Without a body the object is the target; the test patches only objects.
      writes.patches.push({ subresource: name, body: (patch as Patch<KubeObject>).data(obj) });
      return await inner.subResource(name).patch(obj, patch, opts);
    },
  });
  return { client, writes };
}

describe("createOrUpdate", () => {
  it("creates an absent object from a copy of the given one after mutate, and says created", async () => {
    const { client, writes } = recordingClient();
    const given = configMap("settings");
    const { result, object } = await createOrUpdate(client, given, (cm: ConfigMap) => {
      cm.data = { mode: "fast" };
    });
    assert.equal(result, "created");
    assert.deepEqual(object.data, { mode: "fast" });
    assert.ok(object.metadata?.uid, "the result is the object the server returned");
    assert.equal(given.data, undefined, "the given object is not changed");
    assert.deepEqual(writes.verbs, ["create"]);
    const stored = await client.get(ConfigMap, { namespace, name: "settings" });
    assert.deepEqual(stored.data, { mode: "fast" });
  });

  it("updates an existing object when mutate changes it, starting from the stored object", async () => {
    const { client, writes } = recordingClient([
      configMap("settings", { mode: "slow", keep: "me" }),
    ]);
    const { result, object } = await createOrUpdate(
      client,
      configMap("settings", { ignored: "because the object exists" }),
      (cm: ConfigMap) => {
        assert.equal(cm.data?.mode, "slow", "mutate sees the stored object");
        cm.data = { ...cm.data, mode: "fast" };
      },
    );
    assert.equal(result, "updated");
    assert.deepEqual(object.data, { mode: "fast", keep: "me" });
    assert.deepEqual(writes.verbs, ["update"]);
  });

  it("writes nothing when mutate leaves the object as it was, and says unchanged", async () => {
    const { client, writes } = recordingClient([configMap("settings", { mode: "fast" })]);
    const before = await client.get(ConfigMap, { namespace, name: "settings" });
    const { result, object } = await createOrUpdate(client, configMap("settings"), (cm) => {
      cm.data = { mode: "fast" }; // the value it already has
    });
    assert.equal(result, "unchanged");
    assert.deepEqual(writes.verbs, []);
    assert.equal(object.metadata?.resourceVersion, before.metadata?.resourceVersion);
  });

  it("awaits an async mutate", async () => {
    const { client } = recordingClient();
    const { object } = await createOrUpdate(client, configMap("later"), async (cm: ConfigMap) => {
      await Promise.resolve();
      cm.data = { ready: "yes" };
    });
    assert.deepEqual(object.data, { ready: "yes" });
  });

  it("refuses a mutate that changes the name or the namespace, without writing", async () => {
    const { client, writes } = recordingClient([configMap("settings")]);
    const message = /MutateFn cannot mutate object name and\/or object namespace/;
    await assert.rejects(
      createOrUpdate(client, configMap("settings"), (cm) => {
        cm.metadata!.name = "other";
      }),
      message,
    );
    await assert.rejects(
      createOrUpdate(client, configMap("absent"), (cm) => {
        cm.metadata!.namespace = "elsewhere";
      }),
      message,
    );
    assert.deepEqual(writes.verbs, []);
  });

  it("works with a frozen object and a client whose reads are frozen, changing neither", async () => {
    const { client, writes } = recordingClient([configMap("settings", { mode: "slow" })], {
      frozenReads: true,
    });
    const frozen = deepFreeze(configMap("settings"));
    const { result, object } = await createOrUpdate<ConfigMap>(client, frozen, (cm) => {
      cm.data = { mode: "fast" };
    });
    assert.equal(result, "updated");
    assert.deepEqual(object.data, { mode: "fast" });
    assert.deepEqual(writes.verbs, ["update"]);

    const created = await createOrUpdate<ConfigMap>(client, deepFreeze(configMap("new")), (cm) => {
      cm.data = { made: "here" };
    });
    assert.equal(created.result, "created");
    assert.deepEqual(created.object.data, { made: "here" });
  });

  it("passes on read errors other than NotFound without creating", async () => {
    const { client, writes } = recordingClient([], {
      get: () => Promise.reject(new ApiError({ code: 403, reason: "Forbidden", message: "no" })),
    });
    await assert.rejects(createOrUpdate(client, configMap("settings"), () => {}), isForbidden);
    assert.deepEqual(writes.verbs, []);
  });

  it("needs a name to look the object up", async () => {
    const { client } = recordingClient();
    const unnamed: ConfigMap = { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace } };
    await assert.rejects(createOrUpdate(client, unnamed, () => {}), /metadata\.name/);
  });
});

describe("createOrPatch", () => {
  it("creates an absent object and says created", async () => {
    const { client, writes } = recordingClient();
    const { result, object } = await createOrPatch(client, deployment("web"), (d: Deployment) => {
      d.spec!.replicas = 2;
    });
    assert.equal(result, "created");
    assert.equal(object.spec?.replicas, 2);
    assert.deepEqual(writes.verbs, ["create"]);
  });

  it("patches only what mutate changed, without the status, and says updated", async () => {
    const { client, writes } = recordingClient([deployment("web")]);
    const { result, object } = await createOrPatch(client, deployment("web"), (d: Deployment) => {
      d.spec!.replicas = 3;
      delete d.metadata!.labels;
    });
    assert.equal(result, "updated");
    assert.equal(object.spec?.replicas, 3);
    assert.equal(object.metadata?.labels, undefined);
    assert.deepEqual(writes.verbs, ["patch"]);
    assert.deepEqual(writes.patches[0].body, {
      metadata: { labels: null },
      spec: { replicas: 3 },
    });
  });

  it("patches the object, then the status subresource with the status alone: updatedStatus", async () => {
    const { client, writes } = recordingClient([deployment("web")]);
    const { result, object } = await createOrPatch(client, deployment("web"), (d: Deployment) => {
      d.spec!.replicas = 4;
      d.status = { replicas: 4, readyReplicas: 2 };
    });
    assert.equal(result, "updatedStatus");
    assert.deepEqual(writes.verbs, ["patch", "status.patch"]);
    assert.deepEqual(writes.patches, [
      { subresource: "", body: { spec: { replicas: 4 } } },
      { subresource: "status", body: { status: { replicas: 4, readyReplicas: 2 } } },
    ]);
    assert.equal(object.spec?.replicas, 4);
    assert.deepEqual(object.status, { replicas: 4, readyReplicas: 2 });
  });

  it("patches only the status subresource when only the status changed: updatedStatusOnly", async () => {
    const { client, writes } = recordingClient([{
      ...deployment("web"),
      status: { replicas: 1, readyReplicas: 1 },
    } as Deployment]);
    const { result, object } = await createOrPatch(client, deployment("web"), (d: Deployment) => {
      d.status = { ...d.status, readyReplicas: 0 };
    });
    assert.equal(result, "updatedStatusOnly");
    assert.deepEqual(writes.verbs, ["status.patch"]);
    assert.deepEqual(writes.patches[0].body, { status: { readyReplicas: 0 } });
    assert.deepEqual(object.status, { replicas: 1, readyReplicas: 0 });
  });

  it("removes the status with a null status patch when mutate deletes it", async () => {
    const { client, writes } = recordingClient([{
      ...deployment("web"),
      status: { replicas: 1 },
    } as Deployment]);
    const { result } = await createOrPatch(client, deployment("web"), (d: Deployment) => {
      delete d.status;
    });
    assert.equal(result, "updatedStatusOnly");
    assert.deepEqual(writes.patches[0].body, { status: null });
  });

  it("writes nothing when mutate changes nothing: unchanged", async () => {
    const { client, writes } = recordingClient([{
      ...deployment("web"),
      status: { replicas: 1 },
    } as Deployment]);
    const { result } = await createOrPatch(client, deployment("web"), (d: Deployment) => {
      d.spec!.replicas = 1;
      d.status!.replicas = 1;
    });
    assert.equal(result, "unchanged");
    assert.deepEqual(writes.verbs, []);
  });

  it("refuses a mutate that changes the namespace, without writing", async () => {
    const { client, writes } = recordingClient([deployment("web")]);
    await assert.rejects(
      createOrPatch(client, deployment("web"), (d) => {
        d.metadata!.namespace = "other";
      }),
      /MutateFn cannot mutate object name and\/or object namespace/,
    );
    assert.deepEqual(writes.verbs, []);
  });

  it("works with frozen reads and a frozen object", async () => {
    const { client, writes } = recordingClient([deployment("web")], { frozenReads: true });
    const { result } = await createOrPatch<Deployment>(
      client,
      deepFreeze(deployment("web")),
      (d) => {
        d.spec!.replicas = 5;
        d.status = { replicas: 5 };
      },
    );
    assert.equal(result, "updatedStatus");
    assert.deepEqual(writes.verbs, ["patch", "status.patch"]);
    const stored = await client.get(Deployment, { namespace, name: "web" });
    assert.equal(stored.spec?.replicas, 5);
    assert.deepEqual(stored.status, { replicas: 5 });
  });

  it("takes the client, the cached client and the fake client", () => {
    // Compile-time: each of them is an ObjectClient.
    const accept = (client: Client | CachedClient | FakeClient): ObjectClient => client;
    assert.ok(accept(new FakeClient()));
  });
});

// ---------------------------------------------------------------------------------------------
// Owner references

function owner(name = "web", uid = "uid-web", apiVersion = "apps/v1"): KubeObject {
  return { apiVersion, kind: "Deployment", metadata: { namespace, name, uid } };
}

const clusterOwner: KubeObject = {
  apiVersion: "rbac.authorization.k8s.io/v1",
  kind: "ClusterRole",
  metadata: { name: "admin", uid: "uid-admin" },
};

describe("setControllerReference", () => {
  it("adds a controller reference that blocks owner deletion, changing the object in place", () => {
    const cm = configMap("settings");
    const returned = setControllerReference(owner(), cm);
    assert.equal(returned, cm);
    assert.deepEqual(cm.metadata?.ownerReferences, [{
      apiVersion: "apps/v1",
      kind: "Deployment",
      name: "web",
      uid: "uid-web",
      blockOwnerDeletion: true,
      controller: true,
    }]);
    assert.ok(hasControllerReference(cm));
    assert.equal(getControllerOf(cm)?.name, "web");
  });

  it("is idempotent, and replaces the reference to the same owner in another version", () => {
    const cm = configMap("settings");
    setControllerReference(owner(), cm);
    setControllerReference(owner(), cm);
    setControllerReference(owner("web", "uid-new", "apps/v1beta2"), cm);
    assert.equal(cm.metadata?.ownerReferences?.length, 1);
    assert.equal(cm.metadata?.ownerReferences?.[0].apiVersion, "apps/v1beta2");
    assert.equal(cm.metadata?.ownerReferences?.[0].uid, "uid-new");
  });

  it("keeps other owners' plain references", () => {
    const cm = configMap("settings");
    setOwnerReference(owner("other", "uid-other"), cm);
    setControllerReference(owner(), cm);
    assert.deepEqual(cm.metadata?.ownerReferences?.map((r) => [r.name, r.controller]), [
      ["other", undefined],
      ["web", true],
    ]);
  });

  it("honours blockOwnerDeletion: false", () => {
    const cm = setControllerReference(owner(), configMap("settings"), {
      blockOwnerDeletion: false,
    });
    assert.equal(cm.metadata?.ownerReferences?.[0].blockOwnerDeletion, false);
  });

  it("refuses a second controller with AlreadyOwnedError naming the existing one", () => {
    const cm = setControllerReference(owner("first", "uid-1"), configMap("settings"));
    const before = structuredClone(cm);
    assert.throws(
      () => setControllerReference(owner("second", "uid-2"), cm),
      (err) => {
        assert.ok(err instanceof AlreadyOwnedError);
        assert.equal(
          err.message,
          "Object default/settings is already owned by another Deployment controller first",
        );
        assert.equal(err.owner.name, "first");
        assert.deepEqual(err.object, { kind: "ConfigMap", namespace, name: "settings" });
        return true;
      },
    );
    assert.deepEqual(cm, before, "the object is left as it was");
  });

  it("refuses a controller of another group with the same kind and name", () => {
    const cm = setControllerReference(owner(), configMap("settings"));
    const lookalike = { ...owner(), apiVersion: "example.com/v1" };
    assert.throws(() => setControllerReference(lookalike, cm), AlreadyOwnedError);
  });

  it("refuses an owner in another namespace", () => {
    const cm: ConfigMap = { ...configMap("settings"), metadata: { namespace: "other", name: "s" } };
    assert.throws(
      () => setControllerReference(owner(), cm),
      /cross-namespace owner references are disallowed, owner's namespace default, obj's namespace other/,
    );
    assert.equal(cm.metadata?.ownerReferences, undefined);
  });

  it("refuses a namespaced owner of a cluster-scoped object", () => {
    const role = structuredClone(clusterOwner);
    assert.throws(
      () => setControllerReference(owner(), role),
      /cluster-scoped resource must not have a namespace-scoped owner, owner's namespace default/,
    );
  });

  it("lets a cluster-scoped owner control a namespaced object", () => {
    const cm = setControllerReference(clusterOwner, configMap("settings"));
    assert.equal(cm.metadata?.ownerReferences?.[0].kind, "ClusterRole");
  });

  it("takes scopes from resource types when given", () => {
    const Widget = resourceType({
      group: "example.com",
      version: "v1",
      kind: "Widget",
      scope: "Cluster",
    });
    // A stray namespace on a cluster-scoped owner does not make it namespaced.
    const strayOwner = { ...clusterOwner, metadata: { ...clusterOwner.metadata, namespace: "x" } };
    const cm = setControllerReference(strayOwner, configMap("settings"), {
      ownerType: resourceType({
        group: "rbac.authorization.k8s.io",
        version: "v1",
        kind: "ClusterRole",
        scope: "Cluster",
      }),
    });
    assert.equal(cm.metadata?.ownerReferences?.length, 1);
    // A cluster-scoped object with a stray namespace still may not have a namespaced owner.
    const widget = {
      apiVersion: "example.com/v1",
      kind: "Widget",
      metadata: { namespace, name: "w" },
    };
    assert.throws(
      () => setControllerReference(owner(), widget, { objectType: Widget }),
      /cluster-scoped resource must not have a namespace-scoped owner/,
    );
    // A namespaced object without its namespace cannot be checked.
    const unplaced: ConfigMap = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "u" } };
    assert.throws(
      () => setControllerReference(owner(), unplaced, { objectType: ConfigMap }),
      /object ConfigMap u is namespaced but has no metadata.namespace/,
    );
  });

  it("needs an owner with a uid", () => {
    const unsaved: KubeObject = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { namespace, name: "web" },
    };
    assert.throws(() => setControllerReference(unsaved, configMap("settings")), /metadata\.uid/);
  });

  it("returns a changed copy of a frozen object and leaves it as it was", () => {
    const frozen = deepFreeze(configMap("settings"));
    const changed = setControllerReference(owner(), frozen);
    assert.notEqual(changed, frozen);
    assert.equal(frozen.metadata?.ownerReferences, undefined);
    assert.equal(changed.metadata?.ownerReferences?.length, 1);
    assert.ok(!Object.isFrozen(changed.metadata));
  });

  it("replaces a frozen metadata of a mutable object instead of changing it", () => {
    const frozen = deepFreeze(configMap("settings"));
    const spread = { ...frozen };
    const changed = setControllerReference(owner(), spread);
    assert.equal(changed, spread);
    assert.equal(frozen.metadata?.ownerReferences, undefined);
    assert.equal(spread.metadata?.ownerReferences?.length, 1);
  });
});

describe("setOwnerReference", () => {
  it("adds a plain owner reference, without controller or blockOwnerDeletion", () => {
    const cm = setOwnerReference(owner(), configMap("settings"));
    assert.deepEqual(cm.metadata?.ownerReferences, [{
      apiVersion: "apps/v1",
      kind: "Deployment",
      name: "web",
      uid: "uid-web",
    }]);
    assert.equal(hasControllerReference(cm), false);
  });

  it("updates the reference to the same owner instead of adding another", () => {
    const cm = setOwnerReference(owner("web", "uid-old"), configMap("settings"));
    setOwnerReference(owner("other", "uid-other"), cm);
    setOwnerReference(owner("web", "uid-recreated"), cm, { blockOwnerDeletion: true });
    assert.deepEqual(
      cm.metadata?.ownerReferences?.map((r) => [r.name, r.uid, r.blockOwnerDeletion]),
      [
        ["web", "uid-recreated", true],
        ["other", "uid-other", undefined],
      ],
    );
  });

  it("turns a controller reference to the same owner into a plain one, as controller-runtime does", () => {
    const cm = setControllerReference(owner(), configMap("settings"));
    setOwnerReference(owner(), cm);
    assert.equal(hasControllerReference(cm), false);
  });

  it("refuses cross-namespace owners", () => {
    const cm: ConfigMap = { ...configMap("s"), metadata: { namespace: "other", name: "s" } };
    assert.throws(() => setOwnerReference(owner(), cm), /cross-namespace/);
  });
});

describe("removeOwnerReference", () => {
  it("removes the reference to the owner (any version), keeping the others", () => {
    const cm = setOwnerReference(owner("web"), configMap("settings"));
    setOwnerReference(owner("other", "uid-other"), cm);
    removeOwnerReference(owner("web", "uid-web", "apps/v1beta2"), cm);
    assert.deepEqual(cm.metadata?.ownerReferences?.map((r) => r.name), ["other"]);
    removeOwnerReference(owner("other", "uid-other"), cm);
    assert.equal(cm.metadata?.ownerReferences, undefined, "no empty list is left behind");
  });

  it("throws when the object has no owner references, or none to the owner", () => {
    assert.throws(
      () => removeOwnerReference(owner(), configMap("settings")),
      /ConfigMap default\/settings does not have any owner references/,
    );
    const cm = setOwnerReference(owner("other", "uid-other"), configMap("settings"));
    assert.throws(
      () => removeOwnerReference(owner(), cm),
      /does not have an owner reference for Deployment default\/web/,
    );
  });

  it("returns a changed copy of a frozen object", () => {
    const frozen = deepFreeze(setOwnerReference(owner(), configMap("settings")));
    const changed = removeOwnerReference(owner(), frozen);
    assert.equal(changed.metadata?.ownerReferences, undefined);
    assert.equal(frozen.metadata?.ownerReferences?.length, 1);
  });
});

describe("hasOwnerReference and hasControllerReference", () => {
  it("match by API group, kind and name, whatever the version and uid", () => {
    const refs: OwnerReference[] = [{
      apiVersion: "apps/v1",
      kind: "Deployment",
      name: "web",
      uid: "u",
    }];
    assert.ok(hasOwnerReference(refs, owner("web", "another-uid", "apps/v1beta1")));
    assert.equal(hasOwnerReference(refs, { ...owner(), apiVersion: "example.com/v1" }), false);
    assert.equal(hasOwnerReference(refs, owner("api")), false);
    assert.equal(hasOwnerReference(refs, { ...owner(), kind: "StatefulSet" }), false);
    assert.equal(hasOwnerReference(undefined, owner()), false);
  });

  it("hasControllerReference needs controller: true", () => {
    assert.equal(hasControllerReference(configMap("a")), false);
    assert.equal(hasControllerReference(setOwnerReference(owner(), configMap("b"))), false);
    assert.ok(hasControllerReference(deepFreeze(setControllerReference(owner(), configMap("c")))));
  });
});

// ---------------------------------------------------------------------------------------------
// Finalizers

describe("finalizers", () => {
  const finalizer = "example.com/cleanup";

  it("addFinalizer adds once and says whether it changed the object", () => {
    const cm = configMap("settings");
    assert.equal(addFinalizer(cm, finalizer), true);
    assert.equal(addFinalizer(cm, finalizer), false);
    assert.equal(addFinalizer(cm, "example.com/other"), true);
    assert.deepEqual(cm.metadata?.finalizers, [finalizer, "example.com/other"]);
    assert.ok(containsFinalizer(cm, finalizer));
  });

  it("removeFinalizer removes every occurrence and says whether it changed the object", () => {
    const cm: ConfigMap = {
      ...configMap("settings"),
      metadata: { namespace, name: "settings", finalizers: [finalizer, "keep", finalizer] },
    };
    assert.equal(removeFinalizer(cm, finalizer), true);
    assert.deepEqual(cm.metadata?.finalizers, ["keep"]);
    assert.equal(removeFinalizer(cm, finalizer), false);
    assert.equal(removeFinalizer(cm, "keep"), true);
    assert.equal(cm.metadata?.finalizers, undefined, "no empty list is left behind");
    assert.equal(containsFinalizer(cm, "keep"), false);
  });

  it("works on an object without metadata", () => {
    const bare: KubeObject = { apiVersion: "v1", kind: "ConfigMap" };
    assert.equal(containsFinalizer(bare, finalizer), false);
    assert.equal(removeFinalizer(bare, finalizer), false);
    assert.equal(addFinalizer(bare, finalizer), true);
    assert.deepEqual(bare.metadata?.finalizers, [finalizer]);
  });

  it("refuses a frozen object with a TypeError, and reads it fine", () => {
    const frozen = deepFreeze({
      ...configMap("settings"),
      metadata: { namespace, name: "settings", finalizers: [finalizer] },
    });
    assert.throws(() => addFinalizer(frozen, "example.com/other"), TypeError);
    assert.throws(() => removeFinalizer(frozen, finalizer), /frozen.*clone it/);
    assert.ok(containsFinalizer(frozen, finalizer));
    assert.deepEqual(frozen.metadata.finalizers, [finalizer]);
  });

  it("changes a spread copy of a frozen object without touching the original", () => {
    const frozen = deepFreeze(configMap("settings"));
    const copy = { ...frozen };
    assert.equal(addFinalizer(copy, finalizer), true);
    assert.deepEqual(copy.metadata?.finalizers, [finalizer]);
    assert.equal(frozen.metadata?.finalizers, undefined);
  });
});
