// configureLogging's JSON lines: errors keep their name, message, fields and cause chain, and
// never their stack.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { LogRecord } from "@logtape/logtape";
import { formatJsonLogRecord, serializeError } from "../../lib/util/logging.ts";

const TIMEOUT = { timeout: 10_000 };

function record(message: unknown[], properties: Record<string, unknown>): LogRecord {
  return {
    category: ["rudder", "test"],
    level: "error",
    timestamp: Date.parse("2026-01-01T00:00:00Z"),
    rawMessage: "failed: {error}",
    message,
    properties,
  } as unknown as LogRecord;
}

describe("JSON log records", () => {
  const inner = Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
  const outer = Object.assign(new Error("cannot connect to api:6443", { cause: inner }), {
    name: "ConnectionError",
    host: "api:6443",
    reason: "refused",
    unsafe: { nested: true },
  });

  it(
    "writes an error property as name, message, fields and cause, without a stack",
    TIMEOUT,
    () => {
      const line = formatJsonLogRecord(record(["failed: ", outer, ""], { error: outer }));
      assert.ok(line.endsWith("\n"));
      const parsed = JSON.parse(line);
      assert.deepEqual(parsed.properties.error, {
        name: "ConnectionError",
        message: "cannot connect to api:6443",
        host: "api:6443",
        reason: "refused",
        cause: { name: "Error", message: "connect ECONNREFUSED", code: "ECONNREFUSED" },
      });
      assert.doesNotMatch(line, /"stack"/);
      assert.doesNotMatch(line, /at .*logging\.test\.ts/);
    },
  );

  it("renders an error in the message as its name, message and causes, not {}", TIMEOUT, () => {
    const parsed = JSON.parse(formatJsonLogRecord(record(["failed: ", outer, ""], {})));
    assert.equal(
      parsed.message,
      "failed: ConnectionError: cannot connect to api:6443 (caused by Error: connect ECONNREFUSED)",
    );
    assert.equal(parsed.level, "ERROR");
    assert.equal(parsed.logger, "rudder.test");
  });

  it("finds errors inside plain objects and arrays of the properties", TIMEOUT, () => {
    const parsed = JSON.parse(
      formatJsonLogRecord(record(["x"], { details: { errors: [inner] }, count: 2 })),
    );
    assert.deepEqual(parsed.properties, {
      details: {
        errors: [{ name: "Error", message: "connect ECONNREFUSED", code: "ECONNREFUSED" }],
      },
      count: 2,
    });
  });

  it("keeps a cause that is not an error as it is, and stops at a cycle", TIMEOUT, () => {
    assert.deepEqual(serializeError(new Error("a", { cause: "text cause" })), {
      name: "Error",
      message: "a",
      cause: "text cause",
    });
    const loop = new Error("loop");
    (loop as { cause?: unknown }).cause = loop;
    const serialized = JSON.stringify(serializeError(loop));
    assert.ok(serialized.length < 2_000, "bounded");
  });
});
