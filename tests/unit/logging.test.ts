// configureLogging's JSON lines: errors keep their name, message, fields and cause chain, and
// never their stack.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { LogRecord } from "@logtape/logtape";
import { formatDevLogRecord, formatJsonLogRecord, serializeError } from "../../lib/util/logging.ts";

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

describe("dev-mode log lines", () => {
  const reconcile = {
    controller: "example",
    namespace: "default",
    name: "hello",
    reconcileID: "r-1",
    result: "created",
  };
  const info = (message: unknown[], properties: Record<string, unknown>) =>
    ({ ...record(message, properties), level: "info" }) as LogRecord;

  it("write plain words unquoted and put the reconcile's key first", TIMEOUT, () => {
    const line = formatDevLogRecord(
      info(["Deployment ", "hello", " ", "created", ""], reconcile),
      { color: false },
    );
    assert.equal(line, "00:00:00.000 INF default/hello rudder·test: Deployment hello created\n");
  });

  it(
    "write numbers and objects as JSON, errors as one line, and no key outside a reconcile",
    TIMEOUT,
    () => {
      const err = new Error("refused", { cause: new Error("ECONNREFUSED") });
      const line = formatDevLogRecord(
        info(["synced ", 3, " objects ", { a: 1 }, " then ", err, ""], {}),
        { color: false },
      );
      assert.equal(
        line,
        '00:00:00.000 INF rudder·test: synced 3 objects {"a":1} then Error: refused (caused by Error: ECONNREFUSED)\n',
      );
    },
  );

  it("use escape codes only when asked for colour", TIMEOUT, () => {
    const plain = formatDevLogRecord(info(["hi"], {}), { color: false });
    const coloured = formatDevLogRecord(info(["hi"], {}), { color: true });
    const ESC = String.fromCharCode(27);
    assert.ok(!plain.includes(ESC));
    assert.ok(coloured.includes(`${ESC}[`));
    assert.equal(coloured.replaceAll(new RegExp(`${ESC}\\[[0-9;]*m`, "g"), ""), plain);
  });

  it("name a cluster-scoped object by its name alone", TIMEOUT, () => {
    const line = formatDevLogRecord(
      info(["ok"], { namespace: "", name: "node-1", reconcileID: "r-2" }),
      { color: false },
    );
    assert.match(line, / INF node-1 rudder·test: ok\n$/);
  });
});
