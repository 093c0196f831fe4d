// Webhooks without a server: JSON-patch diffs, controller-runtime's paths, strict decoding of
// AdmissionReview and ConversionReview bodies, how errors become denials, the defaulting and
// validating handlers, the builder's registrations, hub-and-spoke conversion, the generated
// webhook configurations, and the webhook metric families.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { z } from "zod";
import { defineResource, ValidationError } from "../../lib/api/resource.ts";
import { ApiError } from "../../lib/kube/errors.ts";
import { Registry } from "../../lib/metrics/registry.ts";
import { webhookMetrics } from "../../lib/metrics/webhook.ts";
import {
  AdmissionDeniedError,
  admissionHandler,
  type AdmissionRequest,
  admissionReviewResponse,
  allowed,
  decodeAdmissionReview,
  denialFromError,
  ReviewDecodeError,
} from "../../lib/webhook/admission.ts";
import {
  defaultingResult,
  generateMutatePath,
  generateValidatePath,
  newWebhookManagedBy,
  validationResult,
} from "../../lib/webhook/builder.ts";
import { webhookConfigurations } from "../../lib/webhook/configurations.ts";
import {
  conversionHandler,
  ConversionRegistry,
  convertReview,
  decodeConversionReview,
} from "../../lib/webhook/conversion.ts";
import type { JsonPatchOperation } from "../../lib/client/json_patch.ts";
import { WebhookServer } from "../../lib/webhook/server.ts";

const T = { timeout: 10_000 };

describe("webhook paths", () => {
  it("follow controller-runtime: dashes for dots, kind lower-cased", T, () => {
    const gvk = { group: "apps.example.com", version: "v1beta1", kind: "WebApp" };
    assert.equal(generateMutatePath(gvk), "/mutate-apps-example-com-v1beta1-webapp");
    assert.equal(generateValidatePath(gvk), "/validate-apps-example-com-v1beta1-webapp");
    assert.equal(
      generateValidatePath({ group: "", version: "v1", kind: "Pod" }),
      "/validate--v1-pod",
    );
  });
});

function review(request: Record<string, unknown>): Record<string, unknown> {
  return { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request };
}

const REQUEST = {
  uid: "u-1",
  kind: { group: "example.com", version: "v1", kind: "Example" },
  resource: { group: "example.com", version: "v1", resource: "examples" },
  operation: "CREATE",
  userInfo: { username: "admin" },
  namespace: "default",
  name: "web",
  object: { apiVersion: "example.com/v1", kind: "Example", metadata: { name: "web" }, spec: {} },
};

describe("decodeAdmissionReview", () => {
  it("returns the request of a well-formed review", T, () => {
    const request = decodeAdmissionReview(review(REQUEST));
    assert.equal(request.uid, "u-1");
    assert.equal(request.operation, "CREATE");
  });

  it("returns the fields sent, typed, and leaves out those sent as null", T, () => {
    const request = decodeAdmissionReview(review({
      ...REQUEST,
      operation: "DELETE",
      object: null,
      oldObject: REQUEST.object,
      dryRun: true,
      userInfo: { username: "admin", groups: ["system:masters"], extra: { scope: ["a"] } },
    }));
    assert.deepEqual(request, {
      uid: "u-1",
      kind: REQUEST.kind,
      resource: REQUEST.resource,
      namespace: "default",
      name: "web",
      operation: "DELETE",
      userInfo: { username: "admin", groups: ["system:masters"], extra: { scope: ["a"] } },
      oldObject: REQUEST.object,
      dryRun: true,
    });
  });

  it("refuses what is not an AdmissionReview v1 with a request, naming the problem", T, () => {
    const bad: [unknown, RegExp][] = [
      [null, /not a JSON object/],
      [[1], /not a JSON object/],
      [{ ...review(REQUEST), kind: "ConversionReview" }, /expected kind AdmissionReview/],
      [{ ...review(REQUEST), apiVersion: "admission.k8s.io/v1beta1" }, /expected apiVersion/],
      [{ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview" }, /has no request/],
      [review({ ...REQUEST, uid: "" }), /no uid/],
      [review({ ...REQUEST, operation: "PATCH" }), /unknown operation "PATCH"/],
      [review({ ...REQUEST, kind: undefined }), /no kind/],
      [review({ ...REQUEST, object: "x" }), /request.object is not an object/],
      [review({ ...REQUEST, oldObject: [1] }), /request.oldObject is not an object/],
      [review({ ...REQUEST, kind: { kind: "Example" } }), /request.kind.group is not a string/],
      [review({ ...REQUEST, resource: undefined }), /request.resource is not an object/],
      [review({ ...REQUEST, userInfo: undefined }), /request.userInfo is not an object/],
      [review({ ...REQUEST, userInfo: { groups: "a" } }), /request.userInfo.groups is not a list/],
      [review({ ...REQUEST, dryRun: "yes" }), /request.dryRun is not a boolean/],
      [review({ ...REQUEST, name: 7 }), /request.name is not a string/],
    ];
    for (const [body, message] of bad) {
      assert.throws(() => decodeAdmissionReview(body), (err: unknown) => {
        assert.ok(err instanceof ReviewDecodeError);
        assert.equal(err.code, 400);
        assert.match(err.message, message);
        return true;
      });
    }
  });
});

describe("denialFromError", () => {
  it("keeps an AdmissionDeniedError's message, code, reason and causes", T, () => {
    assert.deepEqual(denialFromError(new AdmissionDeniedError("nope")), {
      allowed: false,
      status: { status: "Failure", message: "nope", reason: "Forbidden", code: 403 },
    });
    const causes = [{ field: "spec.replicas", message: "too many" }];
    const result = denialFromError(
      new AdmissionDeniedError("too many", { code: 422, reason: "Invalid", causes }),
    );
    assert.equal(result.status?.code, 422);
    assert.equal(result.status?.reason, "Invalid");
    assert.deepEqual(result.status?.details?.causes, causes);
  });

  it("never lets an AdmissionDeniedError claim a code outside 4xx", T, () => {
    assert.equal(new AdmissionDeniedError("x", { code: 500 }).code, 403);
    assert.equal(new AdmissionDeniedError("x", { code: 200 }).code, 403);
  });

  it("keeps a 4xx ApiError and turns a 5xx one into an internal error", T, () => {
    const conflict = new ApiError({ code: 409, reason: "Conflict", message: "taken" });
    assert.deepEqual(denialFromError(conflict).status, {
      status: "Failure",
      message: "taken",
      reason: "Conflict",
      code: 409,
    });
    const unavailable = new ApiError({ code: 503, message: "down" });
    assert.equal(denialFromError(unavailable).status?.code, 500);
  });

  it("makes a resource's ValidationError a 422 with a cause per field", T, () => {
    const err = new ValidationError("Example default/web", [
      { path: "spec.replicas", message: "Too big" },
    ]);
    const result = denialFromError(err);
    assert.equal(result.status?.code, 422);
    assert.equal(result.status?.reason, "Invalid");
    assert.deepEqual(result.status?.details?.causes, [
      { reason: "FieldValueInvalid", message: "Too big", field: "spec.replicas" },
    ]);
  });

  it("makes anything else a 500 internal error with its message", T, () => {
    const result = denialFromError(new TypeError("x is undefined"));
    assert.equal(result.allowed, false);
    assert.equal(result.status?.code, 500);
    assert.equal(result.status?.reason, "InternalError");
    assert.match(result.status?.message ?? "", /x is undefined/);
    assert.equal(denialFromError("thrown string").status?.code, 500);
  });
});

describe("admissionReviewResponse", () => {
  it("echoes the uid and base64-encodes the patch", T, () => {
    const patch: JsonPatchOperation[] = [{ op: "add", path: "/spec/replicas", value: 1 }];
    const { response } = admissionReviewResponse("u-9", { allowed: true, patch, warnings: ["w"] });
    assert.equal(response?.uid, "u-9");
    assert.equal(response?.allowed, true);
    assert.equal(response?.patchType, "JSONPatch");
    assert.deepEqual(JSON.parse(Buffer.from(response!.patch!, "base64").toString()), patch);
    assert.deepEqual(response?.warnings, ["w"]);
  });

  it("leaves the patch out when nothing changed", T, () => {
    const { response } = admissionReviewResponse("u", { allowed: true, patch: [] });
    assert.deepEqual(response, { uid: "u", allowed: true });
  });
});

function post(body: string, type = "application/json", method = "POST"): Request {
  return new Request("https://localhost/hook", {
    method,
    headers: { "content-type": type },
    ...(method === "POST" ? { body } : {}),
  });
}

describe("admissionHandler", () => {
  it("answers malformed bodies with a 4xx and keeps answering", T, async () => {
    const handler = admissionHandler(() => allowed());
    assert.equal((await handler(post("{not json"))).status, 400);
    assert.equal((await handler(post(JSON.stringify({ kind: "Pod" })))).status, 400);
    assert.equal((await handler(post(JSON.stringify(review(REQUEST)), "text/plain"))).status, 415);
    assert.equal((await handler(post("", "application/json", "GET"))).status, 405);
    const ok = await handler(post(JSON.stringify(review(REQUEST))));
    assert.equal(ok.status, 200);
    assert.deepEqual((await ok.json()).response, { uid: "u-1", allowed: true });
  });

  it("turns an unexpected throw into a 500 denial, not a failed request", T, async () => {
    const handler = admissionHandler(() => {
      throw new RangeError("bug");
    });
    const response = await handler(post(JSON.stringify(review(REQUEST))));
    assert.equal(response.status, 200);
    const body = await response.json();
    assert.equal(body.kind, "AdmissionReview");
    assert.equal(body.response.allowed, false);
    assert.equal(body.response.status.code, 500);
  });
});

type Obj = { metadata: { name: string }; spec: { replicas?: number; tier?: string } };

function request(
  operation: AdmissionRequest["operation"],
  object?: Obj,
  oldObject?: Obj,
): AdmissionRequest<Obj> {
  return { ...REQUEST, operation, object, oldObject } as AdmissionRequest<Obj>;
}

describe("defaultingResult", () => {
  const defaulter = (obj: Obj) => {
    obj.spec.replicas ??= 1;
    obj.spec.tier = "gold";
  };

  it("patches the difference and leaves the request's object alone", T, async () => {
    const obj: Obj = { metadata: { name: "web" }, spec: { tier: "silver" } };
    const result = await defaultingResult(defaulter, request("CREATE", obj));
    assert.deepEqual(result.patch, [
      { op: "replace", path: "/spec/tier", value: "gold" },
      { op: "add", path: "/spec/replicas", value: 1 },
    ]);
    assert.deepEqual(obj, { metadata: { name: "web" }, spec: { tier: "silver" } });
  });

  it("defaults on UPDATE too, and admits DELETE untouched", T, async () => {
    const obj: Obj = { metadata: { name: "web" }, spec: { replicas: 2, tier: "gold" } };
    assert.deepEqual((await defaultingResult(defaulter, request("UPDATE", obj, obj))).patch, []);
    let called = false;
    const result = await defaultingResult(
      () => void (called = true),
      request("DELETE", undefined, obj),
    );
    assert.deepEqual(result, { allowed: true });
    assert.equal(called, false);
  });
});

describe("validationResult", () => {
  it("calls the method of the operation with the right objects", T, async () => {
    const calls: string[] = [];
    const validator = {
      validateCreate: (obj: Obj) => void calls.push(`create ${obj.spec.replicas}`),
      validateUpdate: (old: Obj, obj: Obj) =>
        void calls.push(`update ${old.spec.replicas}->${obj.spec.replicas}`),
      validateDelete: (obj: Obj) => {
        calls.push(`delete ${obj.spec.replicas}`);
        return ["going away"];
      },
    };
    const one: Obj = { metadata: { name: "a" }, spec: { replicas: 1 } };
    const two: Obj = { metadata: { name: "a" }, spec: { replicas: 2 } };
    assert.deepEqual(await validationResult(validator, request("CREATE", one)), { allowed: true });
    await validationResult(validator, request("UPDATE", two, one));
    const deleted = await validationResult(validator, request("DELETE", undefined, two));
    assert.deepEqual(calls, ["create 1", "update 1->2", "delete 2"]);
    assert.deepEqual(deleted, { allowed: true, warnings: ["going away"] });
  });

  it("admits an operation without a method, and returns warnings", T, async () => {
    const obj: Obj = { metadata: { name: "a" }, spec: {} };
    assert.deepEqual(await validationResult({}, request("UPDATE", obj, obj)), { allowed: true });
    assert.deepEqual(
      await validationResult({ validateCreate: () => ["w1", "w2"] }, request("CREATE", obj)),
      { allowed: true, warnings: ["w1", "w2"] },
    );
  });

  it("lets a denial propagate for the handler to map", T, async () => {
    const obj: Obj = { metadata: { name: "a" }, spec: {} };
    await assert.rejects(
      validationResult({
        validateCreate: () => {
          throw new AdmissionDeniedError("no");
        },
      }, request("CREATE", obj)),
      AdmissionDeniedError,
    );
  });
});

const Widget = defineResource({
  group: "hooks.example.com",
  version: "v1",
  kind: "Widget",
  scope: "Namespaced",
  spec: z.object({ size: z.int().optional() }),
});

const GadgetV2 = defineResource({
  group: "convert.example.com",
  version: "v2",
  kind: "Gadget",
  scope: "Namespaced",
  spec: z.object({ replicas: z.int(), tier: z.string() }),
});

const Gadget = defineResource({
  group: "convert.example.com",
  version: "v1",
  kind: "Gadget",
  scope: "Namespaced",
  spec: z.object({ size: z.int(), class: z.string().optional() }),
  versions: [GadgetV2],
});

const GadgetV3 = defineResource({
  group: "convert.example.com",
  version: "v3",
  kind: "Gadget",
  scope: "Namespaced",
  spec: z.object({ scale: z.object({ replicas: z.int() }), tier: z.string() }),
});

type GadgetV1Object = ReturnType<typeof Gadget.parse>;
type GadgetV2Object = ReturnType<typeof GadgetV2.parse>;
type GadgetV3Object = ReturnType<typeof GadgetV3.parse>;

function gadgetConversions(): ConversionRegistry {
  const conversions = new ConversionRegistry();
  conversions.register(Gadget, GadgetV2, {
    convertTo: (v2: GadgetV2Object): GadgetV1Object => ({
      apiVersion: "convert.example.com/v1",
      kind: "Gadget",
      metadata: v2.metadata,
      spec: { size: v2.spec.replicas, class: v2.spec.tier },
    }),
    convertFrom: (v1: GadgetV1Object): GadgetV2Object => ({
      apiVersion: "convert.example.com/v2",
      kind: "Gadget",
      metadata: v1.metadata,
      spec: { replicas: v1.spec.size, tier: v1.spec.class ?? "standard" },
    }),
  });
  conversions.register(Gadget, GadgetV3, {
    convertTo: (v3: GadgetV3Object) => ({
      apiVersion: "convert.example.com/v1" as const,
      kind: "Gadget" as const,
      spec: { size: v3.spec.scale.replicas, class: v3.spec.tier },
    }),
    convertFrom: (v1: GadgetV1Object) => ({
      apiVersion: "convert.example.com/v3" as const,
      kind: "Gadget" as const,
      spec: { scale: { replicas: v1.spec.size }, tier: v1.spec.class ?? "standard" },
    }),
  });
  return conversions;
}

const V1_OBJECT = {
  apiVersion: "convert.example.com/v1",
  kind: "Gadget",
  metadata: { name: "g", namespace: "default", labels: { a: "b" }, uid: "1" },
  spec: { size: 3, class: "gold" },
};

describe("ConversionRegistry", () => {
  it("round-trips v1 → v2 → v1 and v2 → v3 → v2 losslessly", T, () => {
    const conversions = gadgetConversions();
    const v2 = conversions.convert(V1_OBJECT, "convert.example.com/v2");
    assert.deepEqual(v2, {
      apiVersion: "convert.example.com/v2",
      kind: "Gadget",
      metadata: V1_OBJECT.metadata,
      spec: { replicas: 3, tier: "gold" },
    });
    assert.deepEqual(conversions.convert(v2, "convert.example.com/v1"), V1_OBJECT);
    const v3 = conversions.convert(v2, "convert.example.com/v3");
    assert.deepEqual((v3 as GadgetV3Object).spec, { scale: { replicas: 3 }, tier: "gold" });
    assert.deepEqual(conversions.convert(v3, "convert.example.com/v2"), v2);
  });

  it("keeps metadata a conversion leaves out, and sets apiVersion and kind", T, () => {
    const v3 = gadgetConversions().convert(V1_OBJECT, "convert.example.com/v3");
    assert.equal(v3.apiVersion, "convert.example.com/v3");
    assert.deepEqual(v3.metadata, V1_OBJECT.metadata);
  });

  it("returns an object already in the desired version as it is", T, () => {
    assert.equal(gadgetConversions().convert(V1_OBJECT, "convert.example.com/v1"), V1_OBJECT);
  });

  it("does not let a conversion change the object it was given", T, () => {
    const conversions = new ConversionRegistry();
    conversions.register(Gadget, GadgetV2, {
      convertTo: (v2) => {
        (v2.spec as { replicas?: number }).replicas = 99;
        return { ...v2, apiVersion: "convert.example.com/v1", spec: { size: 1 } };
      },
      convertFrom: (v1) => ({
        ...v1,
        apiVersion: "convert.example.com/v2",
        spec: { replicas: 1, tier: "" },
      }),
    });
    const v2 = {
      ...V1_OBJECT,
      apiVersion: "convert.example.com/v2",
      spec: { replicas: 3, tier: "" },
    };
    conversions.convert(v2, "convert.example.com/v1");
    assert.equal(v2.spec.replicas, 3);
  });

  it("refuses unknown kinds and versions and mismatched registrations", T, () => {
    const conversions = gadgetConversions();
    assert.throws(
      () => conversions.convert({ ...V1_OBJECT, kind: "Other" }, "convert.example.com/v2"),
      /no conversion registered for Other/,
    );
    assert.throws(
      () => conversions.convert(V1_OBJECT, "convert.example.com/v9"),
      /version convert.example.com\/v9/,
    );
    assert.throws(
      () => conversions.register(Gadget, Widget as never, {} as never),
      /same group and kind/,
    );
    assert.throws(() => conversions.register(Gadget, Gadget, {} as never), /is the hub/);
    assert.throws(
      () => conversions.register(GadgetV2, GadgetV3, {} as never),
      /already has the hub/,
    );
  });

  it("makes the hub's crd() convert through the webhook", T, () => {
    gadgetConversions();
    const crd = Gadget.crd();
    assert.deepEqual(crd.spec.conversion, {
      strategy: "Webhook",
      webhook: {
        conversionReviewVersions: ["v1"],
        clientConfig: {
          service: { namespace: "system", name: "webhook-service", path: "/convert" },
        },
      },
    });
    assert.equal(Widget.crd().spec.conversion, undefined);
  });
});

describe("ConversionReview", () => {
  const body = (request: unknown) => ({
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "ConversionReview",
    request,
  });

  it("converts every object, or fails naming the one that could not be", T, () => {
    const conversions = gadgetConversions();
    const ok = convertReview(conversions, {
      uid: "c1",
      desiredAPIVersion: "convert.example.com/v2",
      objects: [V1_OBJECT, V1_OBJECT],
    });
    assert.equal(ok.result.status, "Success");
    assert.equal(ok.convertedObjects.length, 2);
    const failed = convertReview(conversions, {
      uid: "c2",
      desiredAPIVersion: "convert.example.com/v7",
      objects: [V1_OBJECT],
    });
    assert.equal(failed.uid, "c2");
    assert.equal(failed.result.status, "Failure");
    assert.match(failed.result.message ?? "", /Gadget default\/g/);
  });

  it("refuses malformed reviews with a 4xx", T, async () => {
    const bad: [unknown, RegExp][] = [
      ["x", /not a JSON object/],
      [{ ...body({}), kind: "AdmissionReview" }, /expected kind ConversionReview/],
      [{ ...body({}), apiVersion: "v1" }, /expected apiVersion/],
      [{ apiVersion: "apiextensions.k8s.io/v1", kind: "ConversionReview" }, /no request/],
      [body({ desiredAPIVersion: "a/b", objects: [] }), /no uid/],
      [body({ uid: "1", objects: [] }), /no desiredAPIVersion/],
      [body({ uid: "1", desiredAPIVersion: "a/b", objects: [1] }), /not a list of objects/],
      [body({ uid: "1", desiredAPIVersion: "a/b", objects: [{ kind: "X" }] }), /with apiVersion/],
    ];
    for (const [review, message] of bad) {
      assert.throws(() => decodeConversionReview(review), message);
    }
    const handler = conversionHandler(gadgetConversions());
    assert.equal((await handler(post("[]"))).status, 400);
    const response = await handler(post(JSON.stringify(body({
      uid: "c3",
      desiredAPIVersion: "convert.example.com/v2",
      objects: [V1_OBJECT],
    }))));
    assert.equal(response.status, 200);
    const answer = await response.json();
    assert.equal(answer.kind, "ConversionReview");
    assert.equal(answer.response.uid, "c3");
    assert.equal(answer.response.convertedObjects[0].spec.replicas, 3);
  });
});

describe("newWebhookManagedBy", () => {
  it("registers the mutating and validating paths with what they admit", T, () => {
    const server = new WebhookServer();
    newWebhookManagedBy({ getWebhookServer: () => server }, Widget)
      .withDefaulter((w) => void (w.spec.size ??= 1))
      .withValidator({ validateCreate: () => {}, validateDelete: () => {} })
      .complete();
    assert.deepEqual(server.paths(), [
      "/mutate-hooks-example-com-v1-widget",
      "/validate-hooks-example-com-v1-widget",
    ]);
    assert.deepEqual(
      server.webhooks().map((w) => [w.type, w.path, w.resource.kind, w.operations]),
      [
        ["mutating", "/mutate-hooks-example-com-v1-widget", "Widget", ["CREATE", "UPDATE"]],
        ["validating", "/validate-hooks-example-com-v1-widget", "Widget", [
          "CREATE",
          "UPDATE",
          "DELETE",
        ]],
      ],
    );
  });

  it("sends DELETE only to a validator that checks deletes", T, () => {
    const server = new WebhookServer();
    newWebhookManagedBy({ getWebhookServer: () => server }, Widget)
      .withValidator({ validateCreate: () => {} }).complete();
    assert.deepEqual(server.webhooks()[0].operations, ["CREATE", "UPDATE"]);
  });

  it("serves /convert once conversions are registered", T, () => {
    const server = new WebhookServer();
    newWebhookManagedBy({ getWebhookServer: () => server }, Gadget)
      .withConversion(GadgetV2, {
        convertTo: (v2) => ({ ...v2, apiVersion: "convert.example.com/v1", spec: { size: 1 } }),
        convertFrom: (v1) => ({
          ...v1,
          apiVersion: "convert.example.com/v2",
          spec: { replicas: v1.spec.size, tier: "" },
        }),
      })
      .complete();
    assert.deepEqual(server.paths(), ["/convert"]);
    assert.equal(server.conversions.size, 1);
  });

  it("refuses a builder without webhooks, or a path twice", T, () => {
    const server = new WebhookServer();
    const host = { getWebhookServer: () => server };
    assert.throws(() => newWebhookManagedBy(host, Widget).complete(), /withDefaulter/);
    newWebhookManagedBy(host, Widget).withDefaulter(() => {}).complete();
    assert.throws(
      () => newWebhookManagedBy(host, Widget).withDefaulter(() => {}).complete(),
      /already registered/,
    );
  });
});

describe("webhookConfigurations", () => {
  it("derives kubebuilder's configurations from the registrations", T, () => {
    const server = new WebhookServer();
    newWebhookManagedBy({ getWebhookServer: () => server }, Widget)
      .withDefaulter(() => {}).withValidator({ validateCreate: () => {} }).complete();
    const { mutating, validating } = webhookConfigurations(server.webhooks(), {
      name: "widgets",
      clientConfig: (path) => ({ url: `https://127.0.0.1:9443${path}`, caBundle: "Q0E=" }),
    });
    assert.equal(mutating?.metadata?.name, "widgets-mutating-webhook-configuration");
    assert.deepEqual(mutating?.webhooks?.[0], {
      name: "mwidget-v1.hooks.example.com",
      admissionReviewVersions: ["v1"],
      clientConfig: {
        url: "https://127.0.0.1:9443/mutate-hooks-example-com-v1-widget",
        caBundle: "Q0E=",
      },
      failurePolicy: "Fail",
      matchPolicy: "Equivalent",
      sideEffects: "None",
      timeoutSeconds: 10,
      rules: [{
        apiGroups: ["hooks.example.com"],
        apiVersions: ["v1"],
        operations: ["CREATE", "UPDATE"],
        resources: ["widgets"],
        scope: "Namespaced",
      }],
    });
    assert.equal(validating?.webhooks?.[0].name, "vwidget-v1.hooks.example.com");
    assert.deepEqual(webhookConfigurations([], { name: "x", clientConfig: () => ({}) }), {});
  });
});

describe("webhookMetrics", () => {
  it("counts by path and code, times, and tracks requests in flight", T, async () => {
    const registry = new Registry();
    const metrics = webhookMetrics(registry);
    assert.equal(webhookMetrics(registry), metrics);
    const done = metrics.requestStarted("/validate-x");
    let text = await registry.metrics();
    assert.match(text, /controller_runtime_webhook_requests_in_flight\{webhook="\/validate-x"\} 1/);
    done(200);
    done(200); // a second call is ignored
    metrics.requestStarted("/validate-x")(400);
    text = await registry.metrics();
    assert.match(text, /controller_runtime_webhook_requests_in_flight\{webhook="\/validate-x"\} 0/);
    assert.match(
      text,
      /controller_runtime_webhook_requests_total\{code="200",webhook="\/validate-x"\} 1/,
    );
    assert.match(
      text,
      /controller_runtime_webhook_requests_total\{code="400",webhook="\/validate-x"\} 1/,
    );
    assert.match(
      text,
      /controller_runtime_webhook_latency_seconds_count\{webhook="\/validate-x"\} 2/,
    );
  });
});

describe("withSchemaValidation", () => {
  const Bounded = defineResource({
    group: "schema.example.com",
    version: "v1",
    kind: "Bounded",
    scope: "Namespaced",
    spec: z.object({ min: z.int(), max: z.int() }).refine((s) => s.min <= s.max, {
      message: "min must not exceed max",
      path: ["min"],
    }),
  });

  function reviewOf(operation: string, spec: unknown): string {
    const object = {
      apiVersion: "schema.example.com/v1",
      kind: "Bounded",
      metadata: { name: "b", namespace: "default" },
      spec,
    };
    return JSON.stringify(review({
      ...REQUEST,
      operation,
      object,
      ...(operation === "UPDATE" ? { oldObject: object } : {}),
    }));
  }

  it(
    "denies what the zod schema refuses, naming the failing field, then runs the validator",
    T,
    async () => {
      const server = new WebhookServer();
      const seen: number[] = [];
      newWebhookManagedBy({ getWebhookServer: () => server }, Bounded)
        .withSchemaValidation()
        .withValidator({ validateCreate: (b) => void seen.push(b.spec.max) })
        .complete();
      const url = "https://localhost/validate-schema-example-com-v1-bounded";
      const ask = async (operation: string, spec: unknown) => {
        const response = await server.fetch(
          new Request(url, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: reviewOf(operation, spec),
          }),
        );
        return (await response.json()).response;
      };
      const refused = await ask("CREATE", { min: 5, max: 1 });
      assert.equal(refused.allowed, false);
      assert.equal(refused.status.code, 422);
      assert.match(refused.status.message, /spec\.min: min must not exceed max/);
      assert.deepEqual(refused.status.details.causes[0].field, "spec.min");
      assert.equal((await ask("UPDATE", { min: 1, max: "x" })).status.code, 422);
      assert.equal((await ask("CREATE", { min: 1, max: 2 })).allowed, true);
      assert.deepEqual(seen, [2]);
    },
  );

  it("needs a defineResource kind", T, () => {
    const server = new WebhookServer();
    assert.throws(
      () =>
        newWebhookManagedBy(
          { getWebhookServer: () => server },
          { ...Widget, parse: undefined, safeParse: undefined } as never,
        ).withSchemaValidation().complete(),
      /needs a kind made by defineResource/,
    );
  });
});
