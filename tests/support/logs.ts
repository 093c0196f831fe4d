// Capturing Rudder's log records in tests, to assert on what was logged.
import { configure, type LogRecord, reset } from "@logtape/logtape";

/** Routes every `rudder` log record into the returned array until `stop()`. */
export async function captureLogs(): Promise<{ records: LogRecord[]; stop: () => Promise<void> }> {
  const records: LogRecord[] = [];
  await configure({
    reset: true,
    sinks: { memory: (record) => records.push(record) },
    loggers: [
      { category: ["rudder"], sinks: ["memory"], lowestLevel: "debug" },
      { category: ["logtape", "meta"], sinks: [], lowestLevel: "warning" },
    ],
  });
  return { records, stop: () => reset() };
}
