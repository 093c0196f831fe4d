// Metrics against the real API server: a default manager serves them over HTTPS to scrapers it
// reviews with exactly the RBAC `rudder manifests` generates; the secure /metrics handler
// authenticates ServiceAccount tokens with TokenReviews and authorises them with
// SubjectAccessReviews (200 with a ClusterRole for `get` on /metrics, 403 without, 401 for
// garbage); and rest_client_requests_total counts the RestClient's real requests.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  ClusterRole,
  ClusterRoleBinding,
  Namespace,
  ServiceAccount,
} from "../../lib/api/builtins.ts";
import { type Client, newClient } from "../../lib/client/client.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import { RestClient } from "../../lib/kube/rest.ts";
import { Registry } from "../../lib/metrics/registry.ts";
import { restClientMetrics } from "../../lib/metrics/rest_client.ts";
import { metricsApp } from "../../lib/metrics/server.ts";
import { Manager } from "../../lib/manager/manager.ts";
import { Environment } from "../../lib/testing/envtest.ts";
import { METRICS_AUTH_RULES, METRICS_READER_RULES } from "../../cli/manifests.ts";
import { eventually } from "../support/eventually.ts";
import { fetchTrusting, presentedCertificates } from "../support/tls.ts";

const env = new Environment();
const namespace = "metrics-it";
let config: KubeConfig;
let client: Client;
let admin: RestClient;
const tokens: Record<"scraper" | "stranger", string> = { scraper: "", stranger: "" };
/** Milliseconds for starting (or stopping) the control plane; Environment allows 2 min. */
const HOOK_TIMEOUT = 300_000;
/** Milliseconds for one test. */
const TEST_TIMEOUT = 60_000;

/** A token of the ServiceAccount `name`, from the TokenRequest API. */
async function tokenFor(name: string): Promise<string> {
  const request = await admin.request<{ status: { token: string } }>({
    method: "POST",
    path: `/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`,
    body: {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: { expirationSeconds: 3600 },
    },
  });
  return request.status.token;
}

/** Whether the API server lets `user` get the non-resource URL /metrics. */
async function mayGetMetrics(user: string): Promise<boolean> {
  const review = await admin.request<{ status: { allowed?: boolean } }>({
    method: "POST",
    path: "/apis/authorization.k8s.io/v1/subjectaccessreviews",
    body: {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SubjectAccessReview",
      spec: { user, nonResourceAttributes: { path: "/metrics", verb: "get" } },
    },
  });
  return review.status.allowed === true;
}

function scrape(app: { fetch(r: Request): Promise<Response> }, token?: string) {
  const headers: Record<string, string> = token ? { Authorization: `Bearer ${token}` } : {};
  return app.fetch(new Request("https://localhost:8443/metrics", { headers }));
}

/** `rest_client_requests_total{code,method,host}` in a scrape of `registry`, 0 when absent. */
async function requests(registry: Registry, code: string, method: string, host: string) {
  const text = await registry.metrics();
  const line = `rest_client_requests_total{code="${code}",host="${host}",method="${method}"} `;
  const found = text.split("\n").find((l) => l.startsWith(line));
  return found ? Number(found.slice(line.length)) : 0;
}

before(async () => {
  config = await env.start();
  client = newClient(config);
  admin = new RestClient(config);
  await client.create<Namespace>({
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name: namespace },
  });
  for (const name of ["scraper", "stranger"]) {
    await client.create<ServiceAccount>({
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { namespace, name },
    });
  }
  await client.create<ClusterRole>({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: { name: "metrics-reader" },
    rules: [...METRICS_READER_RULES],
  });
  await client.create<ClusterRoleBinding>({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: "metrics-reader-scraper" },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "metrics-reader" },
    subjects: [{ kind: "ServiceAccount", name: "scraper", namespace }],
  });
  tokens.scraper = await tokenFor("scraper");
  tokens.stranger = await tokenFor("stranger");
  // RBAC reaches the authorizer through its informers: wait until the binding is in force.
  await eventually(
    "the scraper may get /metrics",
    () => mayGetMetrics(`system:serviceaccount:${namespace}:scraper`),
  );
}, { timeout: HOOK_TIMEOUT });

after(async () => {
  admin?.close();
  await env.stop();
}, { timeout: HOOK_TIMEOUT });

describe("a default manager's metrics", () => {
  it(
    "refuse a scrape without a token (401) and one by a user without the reader role (403), and serve an authorised one over TLS",
    { timeout: TEST_TIMEOUT },
    async () => {
      // The manager runs as a user with only the generated metrics-auth rules.
      const operator = "metrics-operator";
      await client.create<ClusterRole>({
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRole",
        metadata: { name: "metrics-auth" },
        rules: METRICS_AUTH_RULES.map((rule) => ({ ...rule })),
      });
      await client.create<ClusterRoleBinding>({
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        metadata: { name: "metrics-auth" },
        roleRef: {
          apiGroup: "rbac.authorization.k8s.io",
          kind: "ClusterRole",
          name: "metrics-auth",
        },
        subjects: [{ kind: "User", apiGroup: "rbac.authorization.k8s.io", name: operator }],
      });
      const mgr = new Manager({
        config: await env.addUser({ name: operator }),
        metricsBindAddress: "127.0.0.1:0",
        metricsRegistry: new Registry(),
      });
      const stop = new AbortController();
      const running = mgr.start(stop.signal);
      try {
        await mgr.elected();
        const url = `${mgr.metricsURL}/metrics`;
        assert.match(url, /^https:\/\/127\.0\.0\.1:\d+\/metrics$/);
        const chain = await presentedCertificates(url);
        const ca = chain[chain.length - 1];
        const scrape = (token?: string) =>
          fetchTrusting(ca, url, { headers: token ? { Authorization: `Bearer ${token}` } : {} });
        assert.deepEqual(await scrape(), { status: 401, text: "Unauthorized\n" });
        // RBAC reaches the authorizer through informers: the operator's binding may lag.
        let denied = { status: 0, text: "" };
        await eventually("the stranger is refused with 403", async () => {
          denied = await scrape(tokens.stranger);
          return denied.status === 403;
        });
        assert.equal(
          denied.text,
          `Authorization denied for user system:serviceaccount:${namespace}:stranger\n`,
        );
        const allowed = await scrape(tokens.scraper);
        assert.equal(allowed.status, 200, allowed.text);
        assert.match(allowed.text, /^# TYPE rest_client_requests_total counter$/m);
      } finally {
        stop.abort();
        await running;
      }
    },
  );
});

describe("metricsApp with secure serving", () => {
  it(
    "serves a ServiceAccount whose ClusterRole allows get on /metrics",
    { timeout: TEST_TIMEOUT },
    async () => {
      const registry = new Registry();
      const rest = new RestClient(config, { onRequest: restClientMetrics(registry) });
      try {
        const app = metricsApp(registry, { secure: { rest } });
        const response = await scrape(app, tokens.scraper);
        assert.equal(response.status, 200);
        assert.equal(response.headers.get("content-type"), registry.contentType);
        const text = await response.text();
        // The reviews that let this scrape through were counted before it was written.
        const host = new URL(config.server).host;
        assert.match(
          text,
          new RegExp(
            `^rest_client_requests_total\\{code="201",host="${host}",method="POST"\\} 2$`,
            "m",
          ),
        );
      } finally {
        rest.close();
      }
    },
  );

  it(
    "forbids a ServiceAccount without that ClusterRole with 403",
    { timeout: TEST_TIMEOUT },
    async () => {
      const rest = new RestClient(config);
      try {
        const response = await scrape(
          metricsApp(new Registry(), { secure: { rest } }),
          tokens.stranger,
        );
        assert.equal(response.status, 403);
        assert.equal(
          await response.text(),
          `Authorization denied for user system:serviceaccount:${namespace}:stranger\n`,
        );
      } finally {
        rest.close();
      }
    },
  );

  it(
    "answers 401 to a garbage token, a forged JWT and no token",
    { timeout: TEST_TIMEOUT },
    async () => {
      const rest = new RestClient(config);
      try {
        const app = metricsApp(new Registry(), { secure: { rest } });
        const [header, payload] = tokens.scraper.split(".");
        for (const token of ["garbage", `${header}.${payload}.c2lnbmF0dXJl`, undefined]) {
          const response = await scrape(app, token);
          assert.equal(response.status, 401, `token ${token?.slice(0, 10)}`);
          assert.equal(await response.text(), "Unauthorized\n");
        }
      } finally {
        rest.close();
      }
    },
  );

  it("reviews a token once while its answer is remembered", { timeout: TEST_TIMEOUT }, async () => {
    const registry = new Registry();
    const rest = new RestClient(config, { onRequest: restClientMetrics(registry) });
    const host = new URL(config.server).host;
    try {
      const app = metricsApp(new Registry(), { secure: { rest, cacheTTL: 300_000 } });
      assert.equal((await scrape(app, tokens.scraper)).status, 200);
      const reviews = await requests(registry, "201", "POST", host);
      assert.equal(reviews, 2, "one TokenReview and one SubjectAccessReview");
      assert.equal((await scrape(app, tokens.scraper)).status, 200);
      assert.equal((await scrape(app, tokens.stranger)).status, 403);
      assert.equal((await scrape(app, tokens.stranger)).status, 403);
      assert.equal(await requests(registry, "201", "POST", host), 4, "the stranger's, once");
    } finally {
      rest.close();
    }
  });

  it(
    "answers 500 when the manager's client may not create TokenReviews",
    { timeout: TEST_TIMEOUT },
    async () => {
      const rest = new RestClient(await env.addUser({ name: "no-reviews" }));
      try {
        const response = await scrape(
          metricsApp(new Registry(), { secure: { rest } }),
          tokens.scraper,
        );
        assert.equal(response.status, 500);
        assert.equal(await response.text(), "Authentication failed\n");
      } finally {
        rest.close();
      }
    },
  );
});

describe("rest_client_requests_total", () => {
  it("counts a RestClient's real requests by code, method and host, and <error> without answer", {
    timeout: TEST_TIMEOUT,
  }, async () => {
    const registry = new Registry();
    const onRequest = restClientMetrics(registry);
    const rest = new RestClient(config, { onRequest });
    const host = new URL(config.server).host;
    try {
      await rest.request({ path: "/version" });
      await rest.request({ path: `/api/v1/namespaces/${namespace}` });
      await assert.rejects(
        rest.request({ path: `/api/v1/namespaces/${namespace}/configmaps/none` }),
      );
      assert.equal(await requests(registry, "200", "GET", host), 2);
      assert.equal(await requests(registry, "404", "GET", host), 1);
      await rest.request({
        method: "POST",
        path: `/api/v1/namespaces/${namespace}/configmaps`,
        body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "counted" } },
      });
      assert.equal(await requests(registry, "201", "POST", host), 1);
    } finally {
      rest.close();
    }
    // Nothing listens on port 1: the attempt gets no answer.
    const nowhere = new RestClient({ ...config, server: "https://127.0.0.1:1" }, {
      onRequest,
      maxRetries: 0,
    });
    try {
      await assert.rejects(nowhere.request({ path: "/version" }));
      assert.equal(await requests(registry, "<error>", "GET", "127.0.0.1:1"), 1);
    } finally {
      nowhere.close();
    }
  });
});
