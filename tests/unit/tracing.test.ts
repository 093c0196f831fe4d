// Rudder's spans with an in-memory OpenTelemetry SDK: the reconcile span and what it says about
// its trigger, API request spans as its children, cache reads, list spans, admission spans, and
// log records that carry the active span's ids. The same against a real trace backend is
// tests/integration/tracing.test.ts.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { SpanStatusCode, trace } from "@opentelemetry/api";
import { configure, type LogRecord, reset } from "@logtape/logtape";
import { Controller } from "../../lib/controller/controller.ts";
import type { RequestQueue } from "../../lib/reconcile/reconcile.ts";
import type { Source } from "../../lib/source/source.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import { RestClient } from "../../lib/kube/rest.ts";
import { kubeRequestInfo } from "../../lib/kube/request_attributes.ts";
import { Reflector } from "../../lib/cache/reflector.ts";
import { Store } from "../../lib/cache/store.ts";
import type { ConfigMap } from "../../lib/api/builtins.ts";
import { admissionHandler, allowed, denied } from "../../lib/webhook/admission.ts";
import { conversionHandler, ConversionRegistry } from "../../lib/webhook/conversion.ts";
import { formatDevLogRecord, formatJsonLogRecord } from "../../lib/util/logging.ts";
import { duringEvent } from "../../lib/util/tracing.ts";
import { installTestTracing, spansNamed } from "../support/tracing.ts";
import { eventually } from "../support/eventually.ts";

/** Explicit, so no test depends on a runtime's default (Bun: 5 s). */
const TIMEOUT = { timeout: 30_000 };

const exporter = installTestTracing();

/** A source the test feeds by hand. */
function manualSource(): Source & { queue?: RequestQueue } {
  const source: Source & { queue?: RequestQueue } = {
    description: "manual source",
    start(_signal, queue) {
      source.queue = queue;
      return Promise.resolve();
    },
    waitForSync: () => Promise.resolve(),
  };
  return source;
}

const config: KubeConfig = {
  server: "https://api.test:6443",
  namespace: "default",
  auth: { credentials: () => Promise.resolve({}) },
  source: "unit test",
};

/** A RestClient whose transport answers with `respond`. */
function restClient(respond: (path: string, init: RequestInit) => Response): RestClient {
  return new RestClient(config, {
    transport: {
      config,
      fetch: (path, init = {}) => Promise.resolve(respond(path, init)),
      close() {},
    },
  });
}

describe("kubeRequestInfo", () => {
  it("reads verb, group, resource, namespace, name and subresource from a path", TIMEOUT, () => {
    assert.deepEqual(kubeRequestInfo("GET", "/api/v1/namespaces/ns/configmaps/a"), {
      verb: "get",
      group: "",
      resource: "configmaps",
      namespace: "ns",
      name: "a",
      subresource: undefined,
    });
    assert.deepEqual(
      kubeRequestInfo("PUT", "/apis/apps/v1/namespaces/ns/deployments/web/status"),
      {
        verb: "update",
        group: "apps",
        resource: "deployments",
        namespace: "ns",
        name: "web",
        subresource: "status",
      },
    );
    assert.equal(kubeRequestInfo("GET", "/apis/example.com/v1/widgets").verb, "list");
    assert.equal(kubeRequestInfo("GET", "/api/v1/pods", { watch: true }).verb, "watch");
    assert.equal(kubeRequestInfo("DELETE", "/api/v1/namespaces/ns/pods").verb, "deletecollection");
    const namespace = kubeRequestInfo("GET", "/api/v1/namespaces/ns");
    assert.equal(namespace.resource, "namespaces");
    assert.equal(namespace.name, "ns");
    assert.equal(kubeRequestInfo("GET", "/version").verb, "get");
  });
});

describe("reconcile spans", () => {
  let records: string[] = [];
  before(async () => {
    await configure({
      reset: true,
      // Formatted in the sink, as configureLogging's sinks do.
      sinks: {
        memory: (record: LogRecord) => {
          records.push(formatJsonLogRecord(record));
          records.push(formatDevLogRecord(record));
        },
      },
      loggers: [
        { category: ["rudder"], sinks: ["memory"], lowestLevel: "debug" },
        { category: ["logtape", "meta"], sinks: [], lowestLevel: "warning" },
      ],
    });
  });
  after(async () => {
    await reset();
  });

  it(
    "puts each reconcile in a root span with its result, trigger, API calls and log records",
    TIMEOUT,
    async () => {
      exporter.reset();
      records = [];
      const rest = restClient((path) =>
        path.includes("missing")
          ? Response.json({ kind: "Status", code: 404, reason: "NotFound" }, { status: 404 })
          : Response.json({ kind: "ConfigMap", metadata: { name: "a" } })
      );
      const source = manualSource();
      const controller = new Controller("traced", async (request, ctx) => {
        ctx.log.info("reconciling {name}", { name: request.name });
        const found = await rest.request({
          path: `/api/v1/namespaces/ns/configmaps/${request.name}`,
        }).catch(() => undefined);
        if (!found) throw new Error("it is gone");
        return request.name === "later" ? { requeueAfter: 60_000 } : {};
      });
      controller.watch(source);
      const stop = new AbortController();
      const running = controller.start(stop.signal);
      try {
        await eventually("the source has started", () => source.queue !== undefined);
        // The event arrives inside a span (an informer's list, say), with its object.
        trace.getTracer("test").startActiveSpan("event", (span) => {
          duringEvent(
            { kind: "ConfigMap", metadata: { resourceVersion: "42" } },
            () => source.queue!.add({ namespace: "ns", name: "a" }),
          );
          span.end();
        });
        source.queue!.add({ namespace: "ns", name: "missing" });
        source.queue!.add({ namespace: "ns", name: "later" });
        await eventually("the three requests were reconciled", () => {
          const names = spansNamed(exporter, "reconcile traced").map((span) =>
            span.attributes["rudder.k8s.name"]
          );
          return ["a", "missing", "later"].every((name) => names.includes(name));
        });
      } finally {
        stop.abort();
        await running;
      }
      const reconciles = spansNamed(exporter, "reconcile traced");
      const byName = (name: string) =>
        reconciles.find((span) => span.attributes["rudder.k8s.name"] === name)!;

      const a = byName("a");
      assert.equal(a.parentSpanContext, undefined, "a reconcile starts a trace");
      assert.equal(a.attributes["rudder.controller"], "traced");
      assert.equal(a.attributes["k8s.namespace.name"], "ns");
      assert.equal(a.attributes["rudder.reconcile.result"], "success");
      assert.equal(a.attributes["rudder.event.resource_version"], "42");
      assert.equal(a.attributes["rudder.event.kind"], "ConfigMap");
      assert.equal(typeof a.attributes["rudder.queue.wait_ms"], "number");
      assert.equal(typeof a.attributes["rudder.reconcile_id"], "string");
      const eventSpans = spansNamed(exporter, "event").map((span) => span.spanContext().spanId);
      assert.equal(a.links.length, 1);
      assert.ok(eventSpans.includes(a.links[0].context.spanId), "links the enqueuing span");

      const get = exporter.getFinishedSpans().find((span) =>
        span.name === "get configmaps" &&
        span.parentSpanContext?.spanId === a.spanContext().spanId
      );
      assert.ok(get, "the API call is a child of the reconcile");
      assert.equal(get.attributes["http.request.method"], "GET");
      assert.equal(get.attributes["http.response.status_code"], 200);
      assert.equal(get.attributes["server.address"], "api.test");
      assert.equal(get.attributes["server.port"], 6443);
      assert.equal(get.attributes["rudder.k8s.verb"], "get");
      assert.equal(get.attributes["rudder.k8s.resource"], "configmaps");
      assert.equal(get.attributes["rudder.k8s.name"], "a");
      assert.equal(get.spanContext().traceId, a.spanContext().traceId);

      const missing = byName("missing");
      assert.equal(missing.attributes["rudder.reconcile.result"], "error");
      assert.equal(missing.status.code, SpanStatusCode.ERROR);
      assert.equal(missing.status.message, "it is gone");
      const notFound = exporter.getFinishedSpans().find((span) =>
        span.parentSpanContext?.spanId === missing.spanContext().spanId
      );
      assert.equal(notFound?.attributes["http.response.status_code"], 404);
      assert.equal(notFound?.status.code, SpanStatusCode.ERROR);

      const later = byName("later");
      assert.equal(later.attributes["rudder.reconcile.result"], "requeue_after");
      assert.equal(later.attributes["rudder.reconcile.requeue_after_ms"], 60_000);

      const json = records.filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line))
        .find((line) => line.properties.name === "a" && line.properties.reconcileID);
      assert.ok(json, "the reconcile logged");
      assert.equal(json.properties.trace_id, a.spanContext().traceId);
      assert.equal(json.properties.span_id, a.spanContext().spanId);
      const text = records.find((line) => !line.startsWith("{") && line.includes("reconciling a"));
      assert.match(text ?? "", new RegExp(`trace_id=${a.spanContext().traceId} span_id=`));
    },
  );

  it("keeps ids a record already carries, in both formats", TIMEOUT, () => {
    const carried = {
      category: ["rudder"],
      level: "info" as const,
      timestamp: 0,
      rawMessage: "hello",
      message: ["hello"],
      properties: { trace_id: "4bf92f3577b34da6a3ce929d0e0e4736", span_id: "00f067aa0ba902b7" },
    };
    const inside = (fn: () => string) =>
      trace.getTracer("test").startActiveSpan("elsewhere", (span) => {
        try {
          return fn();
        } finally {
          span.end();
        }
      });
    const json = JSON.parse(inside(() => formatJsonLogRecord(carried)));
    assert.equal(json.properties.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
    assert.equal(json.properties.span_id, "00f067aa0ba902b7");
    assert.match(
      inside(() => formatDevLogRecord(carried)),
      /hello trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=00f067aa0ba902b7\n$/,
    );
  });

  it("writes no trace ids for a record outside a span", TIMEOUT, () => {
    const line = formatJsonLogRecord({
      category: ["rudder"],
      level: "info",
      timestamp: 0,
      rawMessage: "hello",
      message: ["hello"],
      properties: {},
    });
    assert.equal(JSON.parse(line).properties.trace_id, undefined);
  });
});

describe("request spans", () => {
  it("count retries and name the status of the last attempt", TIMEOUT, async () => {
    exporter.reset();
    let calls = 0;
    const rest = restClient(() =>
      ++calls < 3
        ? new Response("busy", { status: 503, headers: { "Retry-After": "0" } })
        : Response.json({ kind: "ConfigMapList", items: [] })
    );
    await rest.request({ path: "/api/v1/namespaces/ns/configmaps" });
    const [list] = spansNamed(exporter, "list configmaps");
    assert.equal(list.attributes["http.request.resend_count"], 2);
    assert.equal(list.attributes["http.response.status_code"], 200);
    assert.equal(list.attributes["rudder.k8s.verb"], "list");
  });

  it("give a watch a span for its set-up only", TIMEOUT, async () => {
    exporter.reset();
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(
          new TextEncoder().encode(
            JSON.stringify({ type: "ADDED", object: { metadata: { name: "a" } } }) + "\n",
          ),
        );
      },
    });
    const rest = restClient(() => new Response(body));
    for await (const event of rest.watch({ path: "/api/v1/configmaps" })) {
      assert.equal(event.type, "ADDED");
      const [watch] = spansNamed(exporter, "watch configmaps");
      assert.ok(watch, "the watch's span ended once it was set up");
      break;
    }
  });
});

describe("informer list spans", () => {
  it("span each list from Init to InitDone, telling a relist and the object count", TIMEOUT, () => {
    exporter.reset();
    const reflector = new Reflector(new Store<ConfigMap>(), { description: "ConfigMap" });
    const object = (name: string): ConfigMap => ({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name, resourceVersion: "1" },
    });
    reflector.apply({ type: "Init" });
    reflector.apply({ type: "InitApply", object: object("a") });
    reflector.apply({ type: "InitApply", object: object("b") });
    reflector.apply({ type: "InitDone", resourceVersion: "1" });
    reflector.apply({ type: "Init" });
    reflector.apply({ type: "InitApply", object: object("a") });
    reflector.apply({ type: "InitDone", resourceVersion: "2" });
    const [list] = spansNamed(exporter, "informer list");
    assert.equal(list.attributes["rudder.informer"], "ConfigMap");
    assert.equal(list.attributes["rudder.informer.objects"], 2);
    assert.equal(list.attributes["rudder.informer.relist"], false);
    const [relist] = spansNamed(exporter, "informer relist");
    assert.equal(relist.attributes["rudder.informer.objects"], 1);
    assert.equal(relist.attributes["rudder.informer.deleted"], 1);
  });
});

describe("webhook spans", () => {
  it("tell an admission's kind, operation, decision and denial message", TIMEOUT, async () => {
    exporter.reset();
    const handler = admissionHandler((request) =>
      request.name === "bad" ? denied("bad names are not allowed") : allowed()
    );
    const review = (name: string) =>
      new Request("https://webhook.test/validate", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({
          apiVersion: "admission.k8s.io/v1",
          kind: "AdmissionReview",
          request: {
            uid: `uid-${name}`,
            kind: { group: "", version: "v1", kind: "ConfigMap" },
            resource: { group: "", version: "v1", resource: "configmaps" },
            operation: "CREATE",
            namespace: "ns",
            name,
            userInfo: { username: "someone" },
          },
        }),
      });
    await handler(review("good"));
    await handler(review("bad"));
    const spans = spansNamed(exporter, "admission ConfigMap");
    assert.equal(spans.length, 2);
    const bad = spans.find((span) => span.attributes["rudder.k8s.name"] === "bad")!;
    assert.equal(bad.attributes["rudder.admission.operation"], "CREATE");
    assert.equal(bad.attributes["rudder.admission.allowed"], false);
    assert.equal(bad.attributes["rudder.admission.denial"], "bad names are not allowed");
    assert.equal(bad.attributes["url.path"], "/validate");
    const good = spans.find((span) => span.attributes["rudder.k8s.name"] === "good")!;
    assert.equal(good.attributes["rudder.admission.allowed"], true);
    assert.equal(good.attributes["rudder.admission.denial"], undefined);
  });

  it(
    "tell a conversion's version asked for, its objects and its failure",
    TIMEOUT,
    async () => {
      exporter.reset();
      const handler = conversionHandler(new ConversionRegistry());
      const response = await handler(
        new Request("https://webhook.test/convert", {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({
            apiVersion: "apiextensions.k8s.io/v1",
            kind: "ConversionReview",
            request: {
              uid: "u1",
              desiredAPIVersion: "example.com/v2",
              objects: [{ apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "a" } }],
            },
          }),
        }),
      );
      assert.equal((await response.json()).response.result.status, "Failure");
      const [span] = spansNamed(exporter, "conversion to example.com/v2");
      assert.equal(span.attributes["rudder.conversion.objects"], 1);
      assert.equal(span.attributes["url.path"], "/convert");
      assert.equal(span.status.code, SpanStatusCode.ERROR);
    },
  );
});
