// The REST client against a real kube-apiserver: client-certificate and bearer-token auth,
// typed API errors, and watches.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import { loadConfig } from "../../lib/kube/config/load.ts";
import {
  ApiError,
  ignoreNotFound,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isInvalid,
  isNotFound,
  isUnauthorized,
} from "../../lib/kube/errors.ts";
import { RestClient } from "../../lib/kube/rest.ts";
import type { WatchEvent } from "../../lib/kube/watch.ts";
import { Environment } from "../../lib/testing/envtest.ts";

interface ConfigMap {
  apiVersion: "v1";
  kind: "ConfigMap";
  metadata: { name: string; namespace?: string; resourceVersion?: string; uid?: string };
  data?: Record<string, string>;
}

/** A ConfigMap to create. */
function configMap(name: string, data: Record<string, string>, labels?: Record<string, string>) {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name, labels }, data };
}

const env = new Environment();
let admin: RestClient;
let config: KubeConfig;
const scratch = mkdtempSync(join(tmpdir(), "rudder-rest-"));

/** Writes a kubeconfig for the test server that authenticates with `user`. */
function kubeconfigWith(name: string, user: Record<string, unknown>): string {
  const path = join(scratch, `${name}.yaml`);
  writeFileSync(
    path,
    stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{
        name: "test",
        cluster: { server: config.server, "certificate-authority-data": btoa(config.caData!) },
      }],
      users: [{ name, user }],
      contexts: [{ name: "test", context: { cluster: "test", user: name, namespace: "apps" } }],
      "current-context": "test",
    }),
  );
  return path;
}

before(async () => {
  config = await env.start();
  admin = new RestClient(config);
  await admin.request({
    method: "POST",
    path: "/api/v1/namespaces",
    body: { apiVersion: "v1", kind: "Namespace", metadata: { name: "apps" } },
  });
});

after(async () => {
  admin?.close();
  await env.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe("RestClient with the admin's client certificate", () => {
  const path = "/api/v1/namespaces/apps/configmaps";

  it("creates, reads, updates and deletes a ConfigMap, keeping UTF-8 intact", async () => {
    const created = await admin.request<ConfigMap>({
      method: "POST",
      path,
      body: configMap("crud", { greeting: "héllo 日本語 🚀" }),
    });
    assert.ok(created.metadata.uid);
    const read = await admin.request<ConfigMap>({ path: `${path}/crud` });
    assert.equal(read.data?.greeting, "héllo 日本語 🚀");

    const updated = await admin.request<ConfigMap>({
      method: "PUT",
      path: `${path}/crud`,
      body: { ...read, data: { greeting: "bye" } },
    });
    assert.notEqual(updated.metadata.resourceVersion, read.metadata.resourceVersion);

    await admin.request({ method: "DELETE", path: `${path}/crud` });
    await assert.rejects(admin.request({ path: `${path}/crud` }), isNotFound);
    assert.equal(await admin.request({ path: `${path}/crud` }).catch(ignoreNotFound), undefined);
  });

  it("turns refusals into typed ApiErrors: AlreadyExists, Conflict, Invalid, NotFound", async () => {
    const body = configMap("errors", {});
    const first = await admin.request<ConfigMap>({ method: "POST", path, body });
    await assert.rejects(admin.request({ method: "POST", path, body }), (err) => {
      assert.ok(err instanceof ApiError);
      assert.ok(isAlreadyExists(err));
      assert.equal(err.code, 409);
      assert.equal(err.details?.name, "errors");
      assert.match(err.message, /^POST \/api\/v1\/namespaces\/apps\/configmaps: .*already exists/);
      return true;
    });
    await admin.request({
      method: "PUT",
      path: `${path}/errors`,
      body: { ...first, data: { a: "1" } },
    });
    await assert.rejects(
      admin.request({
        method: "PUT",
        path: `${path}/errors`,
        body: { ...first, data: { a: "2" } },
      }),
      (err) => isConflict(err) && (err as ApiError).code === 409,
    );
    await assert.rejects(
      admin.request({
        method: "POST",
        path,
        body: configMap("Not_A_Valid_Name", {}),
      }),
      (err) => {
        assert.ok(isInvalid(err));
        assert.equal((err as ApiError).code, 422);
        assert.ok((err as ApiError).details?.causes?.some((c) => c.field === "metadata.name"));
        return true;
      },
    );
    await assert.rejects(
      admin.request({ path: "/api/v1/namespaces/apps/configmaps/missing" }),
      (err) => isNotFound(err) && (err as ApiError).details?.name === "missing",
    );
  });

  it("answers plain-text endpoints", async () => {
    assert.equal((await admin.requestText({ path: "/healthz" })).trim(), "ok");
  });
});

describe("RestClient with a client certificate that rotates", () => {
  it("connects with the new certificate as soon as the credentials carry it", async () => {
    const alice = (await env.addUser({ name: "alice" })).auth;
    const bob = (await env.addUser({ name: "bob" })).auth;
    let current = alice;
    // As an exec plugin hands out a renewed certificate: same config, new credentials.
    const rotating: KubeConfig = {
      ...config,
      auth: { credentials: (signal) => current.credentials(signal) },
    };
    const client = new RestClient(rotating);
    const whoami = async () => {
      const review = await client.request<{ status: { userInfo: { username: string } } }>({
        method: "POST",
        path: "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
      });
      return review.status.userInfo.username;
    };
    try {
      assert.equal(await whoami(), "alice");
      assert.equal(await whoami(), "alice");
      current = bob;
      assert.equal(await whoami(), "bob");
      current = alice;
      assert.equal(await whoami(), "alice");
    } finally {
      client.close();
    }
  });
});

describe("RestClient with a ServiceAccount token from the TokenRequest API", () => {
  let token = "";

  before(async () => {
    await admin.request({
      method: "POST",
      path: "/api/v1/namespaces/apps/serviceaccounts",
      body: { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "robot" } },
    });
    await admin.request({
      method: "POST",
      path: "/apis/rbac.authorization.k8s.io/v1/namespaces/apps/roles",
      body: {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "Role",
        metadata: { name: "configmap-editor" },
        rules: [{
          apiGroups: [""],
          resources: ["configmaps"],
          verbs: ["get", "list", "watch", "create", "update", "delete"],
        }],
      },
    });
    await admin.request({
      method: "POST",
      path: "/apis/rbac.authorization.k8s.io/v1/namespaces/apps/rolebindings",
      body: {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "RoleBinding",
        metadata: { name: "robot-edits-configmaps" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "configmap-editor" },
        subjects: [{ kind: "ServiceAccount", name: "robot", namespace: "apps" }],
      },
    });
    const request = await admin.request<{ status: { token: string } }>({
      method: "POST",
      path: "/api/v1/namespaces/apps/serviceaccounts/robot/token",
      body: {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        spec: { expirationSeconds: 3600 },
      },
    });
    token = request.status.token;
    assert.match(token, /^ey/);
  });

  it("creates, reads and deletes a ConfigMap as the ServiceAccount", async () => {
    const robot = new RestClient(
      await loadConfig({ kubeconfig: kubeconfigWith("robot", { token }) }),
    );
    try {
      assert.equal(robot.config.namespace, "apps");
      const path = `/api/v1/namespaces/${robot.config.namespace}/configmaps`;
      await robot.request({
        method: "POST",
        path,
        body: configMap("by-robot", { a: "b" }),
      });
      const read = await robot.request<ConfigMap>({ path: `${path}/by-robot` });
      assert.deepEqual(read.data, { a: "b" });
      await robot.request({ method: "DELETE", path: `${path}/by-robot` });
      await assert.rejects(robot.request({ path: `${path}/by-robot` }), isNotFound);
      // RBAC still applies: the Role grants ConfigMaps only.
      await assert.rejects(
        robot.request({ path: "/api/v1/namespaces/apps/secrets" }),
        (err) =>
          isForbidden(err) && /system:serviceaccount:apps:robot/.test((err as Error).message),
      );
    } finally {
      robot.close();
    }
  });

  it("re-reads a rotated token file after a 401 and retries once", async () => {
    const tokenFile = join(scratch, "token");
    writeFileSync(tokenFile, "not-a-valid-token\n");
    const robot = new RestClient(
      await loadConfig({ kubeconfig: kubeconfigWith("rotating", { tokenFile }) }),
    );
    try {
      await assert.rejects(
        robot.request({ path: "/api/v1/namespaces/apps/configmaps" }),
        isUnauthorized,
      );
      writeFileSync(tokenFile, `${token}\n`);
      const list = await robot.request<{ kind: string }>({
        path: "/api/v1/namespaces/apps/configmaps",
      });
      assert.equal(list.kind, "ConfigMapList");
    } finally {
      robot.close();
    }
  });
});

describe("RestClient.watch", () => {
  it("sees ADDED, MODIFIED and DELETED in order", async () => {
    const path = "/api/v1/namespaces/apps/configmaps";
    const list = await admin.request<{ metadata: { resourceVersion: string } }>({
      path,
      query: { labelSelector: "watched=yes" },
    });
    const controller = new AbortController();
    const events: WatchEvent<ConfigMap>[] = [];
    const watching = (async () => {
      for await (
        const event of admin.watch<ConfigMap>({
          path,
          query: { labelSelector: "watched=yes", resourceVersion: list.metadata.resourceVersion },
          signal: controller.signal,
        })
      ) {
        events.push(event);
        if (event.type === "DELETED") break;
      }
    })();
    const labels = { watched: "yes" };
    const created = await admin.request<ConfigMap>({
      method: "POST",
      path,
      body: configMap("watched", { v: "1" }, labels),
    });
    await admin.request({
      method: "PUT",
      path: `${path}/watched`,
      body: { ...created, data: { v: "2" } },
    });
    await admin.request({ method: "DELETE", path: `${path}/watched` });
    const timeout = setTimeout(() => controller.abort(new Error("watch timed out")), 20_000);
    try {
      await watching;
    } finally {
      clearTimeout(timeout);
    }
    assert.deepEqual(events.map((e) => e.type), ["ADDED", "MODIFIED", "DELETED"]);
    const objects = events.map((e) => e.object as ConfigMap);
    assert.deepEqual(objects.map((o) => o.metadata.name), ["watched", "watched", "watched"]);
    assert.deepEqual(objects.map((o) => o.data?.v), ["1", "2", "2"]);
  });

  it("ends with the abort reason when its signal aborts, closing the stream", async () => {
    const controller = new AbortController();
    const reason = new Error("stop watching");
    const iterate = (async () => {
      for await (
        const _ of admin.watch({ path: "/api/v1/namespaces", signal: controller.signal })
      ) {
        // The initial ADDED events of the existing namespaces, then nothing until the abort.
      }
    })();
    setTimeout(() => controller.abort(reason), 200);
    await assert.rejects(iterate, (err) => err === reason);
  });

  it("throws a typed ApiError when the watch itself is refused", async () => {
    const watch = admin.watch({ path: "/api/v1/namespaces/apps/nosuchresource" });
    await assert.rejects(watch.next(), isNotFound);
  });
});
