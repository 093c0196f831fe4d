/**
 * Rudder's spans, through what `@opentelemetry/api` registers (read from the API's global, so
 * that an operator without tracing never loads the API): until the application registers an
 * OpenTelemetry SDK every span is a non-recording span, and attributes are built only
 * for a span that records (`attributes` below is a function for that reason). Attribute names
 * follow OpenTelemetry's semantic conventions where one exists (`http.request.method`,
 * `k8s.namespace.name`, …) and are `rudder.*` otherwise; docs/guides/tracing-and-dashboards.md
 * lists them.
 *
 * @module
 */

import type {
  Attributes,
  Context,
  ContextManager,
  Link,
  Span,
  SpanContext,
  TextMapPropagator,
  Tracer,
  TracerProvider,
} from "@opentelemetry/api";
import { VERSION } from "../version.ts";

export type { Span, SpanContext };

/**
 * `@opentelemetry/api`'s `SpanKind`, the same values: Rudder reads the API's registrations from
 * their global instead of importing the API, which held 0.9–1.3 MiB resident in every operator,
 * tracing on or off (bench/README.md, "Idle memory, second pass").
 */
export const SpanKind = { INTERNAL: 0, SERVER: 1, CLIENT: 2, PRODUCER: 3, CONSUMER: 4 } as const;
/** A span kind (see {@linkcode SpanKind}). */
export type SpanKind = typeof SpanKind[keyof typeof SpanKind];
/** `@opentelemetry/api`'s `SpanStatusCode`, the same values. */
export const SpanStatusCode = { UNSET: 0, OK: 1, ERROR: 2 } as const;

/**
 * What `@opentelemetry/api` (major version 1) registers, under this global symbol, when an
 * application sets a tracer provider, a context manager or a propagator: the API's own
 * `trace`, `context` and `propagation` read from it too.
 */
const API_GLOBAL = Symbol.for("opentelemetry.js.api.1");

interface Registered {
  trace?: TracerProvider;
  context?: ContextManager;
  propagation?: TextMapPropagator;
}

function registered(): Registered | undefined {
  return (globalThis as { [API_GLOBAL]?: Registered })[API_GLOBAL];
}

/** The API's key of the active span in a context (`createContextKey` is `Symbol.for`). */
const SPAN_KEY = Symbol.for("OpenTelemetry Context Key SPAN");

/** The empty context, as the API's `ROOT_CONTEXT`: what is active without a context manager. */
const ROOT_CONTEXT: Context = newContext(new Map());

function newContext(values: ReadonlyMap<symbol, unknown>): Context {
  return {
    getValue: (key) => values.get(key),
    setValue: (key, value) => newContext(new Map(values).set(key, value)),
    deleteValue: (key) => {
      const next = new Map(values);
      next.delete(key);
      return newContext(next);
    },
  };
}

function activeContext(): Context {
  return registered()?.context?.active() ?? ROOT_CONTEXT;
}

/**
 * The tracer of Rudder's spans, asked for at each span rather than kept: a kept proxy tracer
 * stays bound to the first SDK it saw, even after that one is replaced.
 */
function tracer(provider: TracerProvider): Tracer {
  return provider.getTracer("rudder", VERSION);
}

const INVALID_SPAN_CONTEXT: SpanContext = {
  traceId: "00000000000000000000000000000000",
  spanId: "0000000000000000",
  traceFlags: 0,
};

/** A span that records nothing, for the calls made while no SDK is registered. */
const NOT_RECORDING: Span = {
  spanContext: () => INVALID_SPAN_CONTEXT,
  setAttribute: () => NOT_RECORDING,
  setAttributes: () => NOT_RECORDING,
  addEvent: () => NOT_RECORDING,
  addLink: () => NOT_RECORDING,
  addLinks: () => NOT_RECORDING,
  setStatus: () => NOT_RECORDING,
  updateName: () => NOT_RECORDING,
  end: () => {},
  isRecording: () => false,
  recordException: () => {},
};

/**
 * False while no SDK is registered, when every span would be the API's no-op anyway: then the
 * call sites skip even that (the span objects, the context switch, the bookkeeping of what
 * queued a request). Any registered tracer provider counts.
 */
export function tracingEnabled(): boolean {
  return registered()?.trace !== undefined;
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
  const provider = registered()?.trace;
  if (!provider) return fn(NOT_RECORDING);
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
    ? tracer(provider).startActiveSpan(name, options, start.parent, run)
    : tracer(provider).startActiveSpan(name, options, run);
}

/** Starts a span that is not made active (one whose work is not a single call: a list). */
export function startSpan(name: string, start: SpanStart = {}): Span {
  const provider = registered()?.trace;
  if (!provider) return NOT_RECORDING;
  const span = tracer(provider).startSpan(name, {
    kind: start.kind,
    links: start.links,
    root: start.root,
  });
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
  const active = activeContext();
  const propagator = registered()?.propagation;
  if (!propagator) return active;
  return propagator.extract(active, headers, {
    keys: (carrier) => [...carrier.keys()],
    get: (carrier, key) => carrier.get(key) ?? undefined,
  });
}

/** The span context of the active span when it records, to link to later. */
export function activeSpanContext(): SpanContext | undefined {
  const span = activeContext().getValue(SPAN_KEY) as Span | undefined;
  return span?.isRecording() ? span.spanContext() : undefined;
}

/** `trace_id` and `span_id` of the active span, for log records; undefined outside a span. */
export function activeTraceIds(): { trace_id: string; span_id: string } | undefined {
  const span = activeContext().getValue(SPAN_KEY) as Span | undefined;
  if (!span) return undefined;
  const ids = span.spanContext();
  if (!VALID_TRACE_ID.test(ids.traceId) || !VALID_SPAN_ID.test(ids.spanId)) return undefined;
  return { trace_id: ids.traceId, span_id: ids.spanId };
}

/** Ids as the API's `isSpanContextValid` accepts them: lower or upper hex, not all zeros. */
const VALID_TRACE_ID = /^(?!0{32}$)[0-9a-f]{32}$/i;
const VALID_SPAN_ID = /^(?!0{16}$)[0-9a-f]{16}$/i;

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
