/**
 * OpenTelemetry tracing for the website-operator operator. `main.ts` imports this module only
 * when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set; otherwise the
 * SDK is never loaded and Rudder's spans cost nothing. It registers the SDK: spans follow
 * `await` through AsyncLocalStorage, are batched, and go over OTLP/HTTP to the endpoint (the
 * exporter reads the other OTEL_EXPORTER_OTLP_* variables: headers, timeout, …). The service is
 * called website-operator unless OTEL_SERVICE_NAME says otherwise; OTEL_RESOURCE_ATTRIBUTES
 * adds attributes.
 *
 * @module
 */

import process from "node:process";
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";

/** Registers the OpenTelemetry SDK; the returned function flushes the last spans and stops it. */
export function startTracing(): () => Promise<void> {
  const resource = resourceFromAttributes({ "service.name": "website-operator" })
    .merge(detectResources({ detectors: [envDetector] }))
    .merge(
      process.env.OTEL_SERVICE_NAME
        ? resourceFromAttributes({ "service.name": process.env.OTEL_SERVICE_NAME })
        : null,
    );
  const provider = new TracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter() })],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  return () => provider.shutdown();
}
