// The Memcached webhooks, tested as plain functions: they need no server. (The manager serves
// them, and `rudder manifests` writes the configurations that send the API server's admission
// requests there.)
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { AdmissionDeniedError } from "@rudder/operator/webhook";
import { Memcached } from "../api/memcached.ts";
import { defaultMemcached, MAX_REPLICAS, validateMemcached } from "./memcached_webhook.ts";

/** A Memcached with `spec`, its schema's defaults applied. */
function sample(spec: Record<string, unknown> = {}): Memcached {
  return Memcached.parse({
    apiVersion: "cache.example.com/v1alpha1",
    kind: "Memcached",
    metadata: { name: "sample", namespace: "default" },
    spec,
  });
}

describe("the Memcached webhooks", () => {
  // +rudder:template:if defaulting
  it("default spec.replicas to 1 and keep a value that is set", () => {
    const unset = sample();
    defaultMemcached(unset);
    assert.equal(unset.spec.replicas, 1);
    const set = sample({ replicas: 3 });
    defaultMemcached(set);
    assert.equal(set.spec.replicas, 3);
  });
  // +rudder:template:end

  // +rudder:template:if validation
  it("accept up to MAX_REPLICAS copies", () => {
    assert.deepEqual(validateMemcached(sample({ replicas: MAX_REPLICAS })), []);
  });

  it("refuse more than MAX_REPLICAS copies as 422 Invalid", () => {
    assert.throws(
      () => validateMemcached(sample({ replicas: MAX_REPLICAS + 1 })),
      (err) => {
        assert.ok(err instanceof AdmissionDeniedError);
        assert.equal(err.code, 422);
        assert.match(err.message, /spec\.replicas must be at most 10, not 11/);
        return true;
      },
    );
  });
  // +rudder:template:end
});
