// An informer of ConfigMaps against a fresh FakeWatchServer in every test, stopped after it, with
// Rudder's log records captured: the set-up the informer's unit tests share.
import { after, afterEach, before, beforeEach } from "node:test";
import type { LogRecord } from "@logtape/logtape";
import { ConfigMap } from "../../lib/api/builtins.ts";
import { Informer, type InformerOptions } from "../../lib/cache/informer.ts";
import { RestClient } from "../../lib/kube/rest.ts";
import { FakeWatchServer, NAMESPACE } from "./fake_watch_server.ts";
import { captureLogs } from "./logs.ts";

/** What a test of the harness works with; valid inside a test (between its hooks). */
export interface InformerHarness {
  /** This test's fake API server. */
  readonly server: FakeWatchServer;
  /** A REST client of it that does not retry. */
  readonly rest: RestClient;
  /** Aborted after the test (or by it, to stop the informer). */
  readonly stop: AbortController;
  /** The run of the informer {@linkcode InformerHarness.start} started, if any. */
  readonly running: Promise<void> | undefined;
  /** The log records of this test. */
  readonly records: LogRecord[];
  /** Starts an informer of the namespace's ConfigMaps (fast back-off), stopped after the test. */
  start(options?: InformerOptions<ConfigMap>): Informer<ConfigMap>;
}

/** Registers the hooks (call it in a `describe`) and returns what the tests use. */
export function useInformerHarness(timeout: { timeout: number }): InformerHarness {
  let server: FakeWatchServer | undefined;
  let rest: RestClient | undefined;
  let stop = new AbortController();
  let running: Promise<void> | undefined;
  let logs: Awaited<ReturnType<typeof captureLogs>> | undefined;
  const inTest = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`the harness's ${what} is only there during a test`);
    return value;
  };

  before(async () => {
    logs = await captureLogs();
  }, timeout);
  after(async () => {
    await logs?.stop();
  }, timeout);
  beforeEach(async () => {
    server = new FakeWatchServer();
    await server.start();
    rest = new RestClient(server.config(), { maxRetries: 0 });
    stop = new AbortController();
    if (logs) logs.records.length = 0;
  }, timeout);
  afterEach(async () => {
    stop.abort();
    await running;
    running = undefined;
    rest?.close();
    await server?.stop();
  }, timeout);

  return {
    get server() {
      return inTest(server, "server");
    },
    get rest() {
      return inTest(rest, "REST client");
    },
    get stop() {
      return stop;
    },
    get running() {
      return running;
    },
    get records() {
      return inTest(logs, "log capture").records;
    },
    start(options = {}) {
      const informer = new Informer(inTest(rest, "REST client"), ConfigMap, {
        namespace: NAMESPACE,
        backoff: { initial: 10, max: 50 },
        ...options,
      });
      running = informer.run(stop.signal);
      return informer;
    },
  };
}
