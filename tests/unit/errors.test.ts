import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  ApiError,
  ignoreAlreadyExists,
  ignoreNotFound,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isGone,
  isInvalid,
  isNotFound,
  isTooManyRequests,
  isUnauthorized,
} from "../../lib/kube/errors.ts";

/** Explicit, so no test depends on a runtime's default (Bun: 5 s). */
const TIMEOUT = { timeout: 30_000 };

const notFoundBody = JSON.stringify({
  kind: "Status",
  apiVersion: "v1",
  status: "Failure",
  message: 'configmaps "x" not found',
  reason: "NotFound",
  details: { name: "x", kind: "configmaps" },
  code: 404,
});

describe("ApiError", () => {
  it("is built from a Status body with its code, reason, details and the request", TIMEOUT, () => {
    const err = ApiError.fromResponseBody(404, notFoundBody, {
      method: "GET",
      path: "/api/v1/namespaces/a/configmaps/x",
    });
    assert.equal(err.code, 404);
    assert.equal(err.reason, "NotFound");
    assert.equal(err.details?.name, "x");
    assert.equal(err.method, "GET");
    assert.equal(
      err.message,
      'GET /api/v1/namespaces/a/configmaps/x: configmaps "x" not found (404 NotFound)',
    );
    assert.equal(err.name, "ApiError");
    assert.ok(err instanceof Error);
  });

  it("derives the reason from the HTTP code when the body is not a Status", TIMEOUT, () => {
    const err = ApiError.fromResponseBody(503, "<html>upstream down</html>");
    assert.equal(err.reason, "ServiceUnavailable");
    assert.equal(err.status.message, "<html>upstream down</html>");
    const long = ApiError.fromResponseBody(500, "x".repeat(5000));
    assert.equal(long.status.message!.length, 1025);
    assert.equal(ApiError.fromResponseBody(418, "").reason, "Unknown");
  });

  it(
    "takes the HTTP code when the Status omits it, and Retry-After from headers or details",
    TIMEOUT,
    () => {
      const err = ApiError.fromResponseBody(
        429,
        JSON.stringify({
          kind: "Status",
          reason: "TooManyRequests",
          details: { retryAfterSeconds: 3 },
        }),
      );
      assert.equal(err.code, 429);
      assert.equal(err.retryAfterSeconds, 3);
      const fromHeader = ApiError.fromResponseBody(429, "", { retryAfterSeconds: 7 });
      assert.equal(fromHeader.retryAfterSeconds, 7);
    },
  );

  it("names the missing RBAC rule of a 403, and where Rudder's roles come from", TIMEOUT, () => {
    const namespaced = new ApiError({
      code: 403,
      reason: "Forbidden",
      message: 'configmaps is forbidden: User "system:serviceaccount:ops:op" cannot list ' +
        'resource "configmaps" in API group "" in the namespace "team-a"',
    }, { method: "GET", path: "/api/v1/namespaces/team-a/configmaps" });
    assert.match(
      namespaced.message,
      /the RBAC rule missing is apiGroups: \[""\], resources: \["configmaps"\], verbs: \["list"\] in the namespace team-a\. rudder manifests derives/,
    );
    const cluster = new ApiError({
      code: 403,
      reason: "Forbidden",
      message: 'deployments.apps "x" is forbidden: User "u" cannot patch resource ' +
        '"deployments/status" in API group "apps" at the cluster scope',
    });
    assert.match(
      cluster.message,
      /apiGroups: \["apps"\], resources: \["deployments\/status"\], verbs: \["patch"\] cluster-wide/,
    );
    // A 403 that does not say what was denied (a webhook's, a proxy's) is left as it is.
    assert.equal(new ApiError({ code: 403, message: "no" }).message, "no (403 Forbidden)");
  });

  it("answers each predicate for its reason only", TIMEOUT, () => {
    const cases: [number, string, (e: unknown) => boolean][] = [
      [404, "NotFound", isNotFound],
      [409, "Conflict", isConflict],
      [409, "AlreadyExists", isAlreadyExists],
      [410, "Gone", isGone],
      [410, "Expired", isGone],
      [422, "Invalid", isInvalid],
      [403, "Forbidden", isForbidden],
      [401, "Unauthorized", isUnauthorized],
      [429, "TooManyRequests", isTooManyRequests],
    ];
    const predicates = [...new Set(cases.map(([, , p]) => p))];
    for (const [code, reason, predicate] of cases) {
      const err = new ApiError({ code, reason });
      for (const other of predicates) {
        assert.equal(other(err), other === predicate, `${other.name} on ${code} ${reason}`);
      }
    }
    assert.equal(isNotFound(new Error("404")), false);
    assert.equal(isConflict(new ApiError({ code: 409, reason: "AlreadyExists" })), false);
    // A bare code without a known reason still classifies.
    assert.equal(isNotFound(ApiError.fromResponseBody(404, "page not found")), true);
  });

  it(
    "ignoreNotFound and ignoreAlreadyExists swallow their error and rethrow the rest",
    TIMEOUT,
    async () => {
      assert.equal(ignoreNotFound(new ApiError({ code: 404, reason: "NotFound" })), undefined);
      assert.equal(
        ignoreAlreadyExists(new ApiError({ code: 409, reason: "AlreadyExists" })),
        undefined,
      );
      const conflict = new ApiError({ code: 409, reason: "Conflict" });
      assert.throws(() => ignoreNotFound(conflict), (e) => e === conflict);
      assert.throws(() => ignoreAlreadyExists(conflict), (e) => e === conflict);
      const value = await Promise.reject(new ApiError({ code: 404, reason: "NotFound" }))
        .catch(ignoreNotFound);
      assert.equal(value, undefined);
    },
  );
});
