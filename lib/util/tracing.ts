/**
 * Rudder's spans, through `@opentelemetry/api` only: until the application registers an
 * OpenTelemetry SDK every span is the API's non-recording span, and attributes are built only
 * for a span that records (`attributes` below is a function for that reason). Attribute names
 * follow OpenTelemetry's semantic conventions where one exists (`http.request.method`,
 * `k8s.namespace.name`, …) and are `rudder.*` otherwise; docs/guides/tracing-and-dashboards.md
 * lists them.
 *
 * @module
 */

import {
  type Attributes,
  type Context,
  context,
  INVALID_SPAN_CONTEXT,
  type Link,
  propagation,
  ProxyTracerProvider,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  trace,
  type Tracer,
} from "@opentelemetry/api";
import { VERSION } from "../version.ts";

export { SpanKind, SpanStatusCode };
export type { Span, SpanContext };

/**
 * The tracer of Rudder's spans, asked for at each span rather than kept: a kept proxy tracer
 * stays bound to the first SDK it saw, even after that one is replaced.
 */
function tracer(): Tracer {
  return trace.getTracer("rudder", VERSION);
}

/** What a proxy tracer provider delegates to while no SDK is registered: the API's no-op. */
const NO_SDK = new ProxyTracerProvider().getDelegate();

/** A span that records nothing, for the calls made while no SDK is registered. */
const NOT_RECORDING: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/**
 * False while no SDK is registered, when every span would be the API's no-op anyway: then the
 * call sites skip even that (the span objects, the context switch, the bookkeeping of what
 * queued a request). A provider that is not the API's own proxy counts as registered.
 */
export function tracingEnabled(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== NO_SDK;
}

/** How a span starts. */
export interface SpanStart {
  /** Default `INTERNAL`. */
  kind?: SpanKind;
  /** Built only when the span records. */
  attributes?: () => Attributes;
  /** Spans this one follows from (the enqueuing span of a reconcile). */
  links?: Link[];
  /** Start a new trace instead of a child of the active span. */
  root?: boolean;
  /** The parent context, when not the active one (a propagated `traceparent`). */
  parent?: Context;
}

/**
 * Runs `fn` inside a new active span and ends the span when `fn` settles; a throw is recorded
 * on the span (status ERROR) and rethrown.
 */
export function withSpan<T>(
  name: string,
  start: SpanStart,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  if (!tracingEnabled()) return fn(NOT_RECORDING);
  const options = { kind: start.kind, links: start.links, root: start.root };
  const run = async (span: Span): Promise<T> => {
    if (start.attributes && span.isRecording()) span.setAttributes(start.attributes());
    try {
      return await fn(span);
    } catch (err) {
      recordError(span, err);
      throw err;
    } finally {
      span.end();
    }
  };
  return start.parent
    ? tracer().startActiveSpan(name, options, start.parent, run)
    : tracer().startActiveSpan(name, options, run);
}

/** Starts a span that is not made active (one whose work is not a single call: a list). */
export function startSpan(name: string, start: SpanStart = {}): Span {
  if (!tracingEnabled()) return NOT_RECORDING;
  const span = tracer().startSpan(name, { kind: start.kind, links: start.links, root: start.root });
  if (start.attributes && span.isRecording()) span.setAttributes(start.attributes());
  return span;
}

/**
 * Marks `span` failed with `err`: status ERROR with the message, `error.type`, and an
 * `exception` event without the stack (which may repeat what a log must not hold).
 */
export function recordError(span: Span, err: unknown): void {
  if (!span.isRecording()) return;
  const type = err instanceof Error ? err.name : typeof err;
  const message = err instanceof Error ? err.message : String(err);
  span.setAttribute("error.type", type);
  span.addEvent("exception", { "exception.type": type, "exception.message": message });
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}

/**
 * The context a caller propagated in `traceparent`/`tracestate` headers, read with the
 * registered propagator (none until an SDK registers one: then the active context).
 */
export function contextFromHeaders(headers: Headers): Context {
  return propagation.extract(context.active(), headers, {
    keys: (carrier) => [...carrier.keys()],
    get: (carrier, key) => carrier.get(key) ?? undefined,
  });
}

/** The span context of the active span when it records, to link to later. */
export function activeSpanContext(): SpanContext | undefined {
  const span = trace.getActiveSpan();
  return span?.isRecording() ? span.spanContext() : undefined;
}

/** `trace_id` and `span_id` of the active span, for log records; undefined outside a span. */
export function activeTraceIds(): { trace_id: string; span_id: string } | undefined {
  const span = trace.getSpan(context.active());
  if (!span) return undefined;
  const ids = span.spanContext();
  if (!trace.isSpanContextValid(ids)) return undefined;
  return { trace_id: ids.traceId, span_id: ids.spanId };
}

/** The object whose event is being handed to event handlers (see {@linkcode duringEvent}). */
let currentEventObject: EventObject | undefined;

/** What a reconcile span says about the object whose event enqueued it. */
export interface EventObject {
  /** The object's kind, when it carries one. */
  kind?: string;
  /** Its metadata. */
  metadata?: { resourceVersion?: string };
}

/**
 * Runs `fn` (an event handler's synchronous dispatch) with `object` as the event's object, so a
 * request added to a controller's queue meanwhile can name what triggered it.
 */
export function duringEvent(object: EventObject, fn: () => void): void {
  const previous = currentEventObject;
  currentEventObject = object;
  try {
    fn();
  } finally {
    currentEventObject = previous;
  }
}

/** The object of the event being dispatched, if any. */
export function eventObject(): EventObject | undefined {
  return currentEventObject;
}
