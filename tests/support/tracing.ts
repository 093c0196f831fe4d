// An OpenTelemetry SDK for tests: spans kept in memory, context carried by AsyncLocalStorage.
// Registered once per process (Bun runs every test file in one), shared by the files that use it.
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  TracerProvider,
} from "@opentelemetry/sdk-trace";

const KEY = Symbol.for("rudder.test.tracing");

interface TestTracing {
  exporter: InMemorySpanExporter;
}

/** Registers the in-memory SDK unless a test file already did; returns its exporter. */
export function installTestTracing(): InMemorySpanExporter {
  const holder = globalThis as { [KEY]?: TestTracing };
  if (holder[KEY]) return holder[KEY].exporter;
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  holder[KEY] = { exporter };
  return exporter;
}

/** The finished spans named `name`. */
export function spansNamed(exporter: InMemorySpanExporter, name: string): ReadableSpan[] {
  return exporter.getFinishedSpans().filter((span) => span.name === name);
}
