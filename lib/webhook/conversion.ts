/**
 * CRD conversion webhooks, hub and spoke as in controller-runtime: one version of a kind is
 * the hub, and each other version (a spoke) has two functions, `convertTo` (spoke → hub) and
 * `convertFrom` (hub → spoke). Any version converts to any other through the hub, so n versions
 * need 2(n − 1) functions, not n². The server answers `ConversionReview`s (apiextensions.k8s.io/v1)
 * on `/convert`.
 *
 * The API server requires that a conversion keeps `metadata` (only labels and annotations may
 * change), so a function that leaves `metadata` out gets the input's; `apiVersion` and `kind`
 * are always set to the requested version's.
 *
 * @module
 */

import type { KubeObject, ResourceType } from "../api/resource.ts";
import { markConversionWebhook } from "../api/crd.ts";
import type { Status } from "../kube/errors.ts";
import { isJsonObject, type JsonObject } from "../util/json.ts";
import { readReviewBody, ReviewDecodeError, reviewErrorResponse } from "./admission.ts";
import { contextFromHeaders, SpanKind, SpanStatusCode, withSpan } from "../util/tracing.ts";

/** `apiVersion` of conversion reviews. */
export const CONVERSION_API_VERSION = "apiextensions.k8s.io/v1";

/** The `request` of a `ConversionReview`. */
export interface ConversionRequest {
  /** Identifies this request; the response echoes it. */
  uid: string;
  /** The version to convert to, e.g. `example.com/v2`. */
  desiredAPIVersion: string;
  /** The objects to convert. */
  objects: KubeObject[];
}

/** The `response` of a `ConversionReview`. */
export interface ConversionResponse {
  /** The request's `uid`. */
  uid: string;
  /** The converted objects, in the order of the request's. */
  convertedObjects: KubeObject[];
  /** `{ status: "Success" }`, or a failure with its message. */
  result: Status;
}

/** A `ConversionReview`: what the API server sends to `/convert` and gets back. */
export interface ConversionReview {
  /** `apiextensions.k8s.io/v1`. */
  apiVersion: typeof CONVERSION_API_VERSION;
  /** `ConversionReview`. */
  kind: "ConversionReview";
  /** Set by the API server. */
  request?: ConversionRequest;
  /** Set by the webhook. */
  response?: ConversionResponse;
}

/**
 * An object of `T` whose `apiVersion` and `kind` may be left out: a conversion's result, which
 * Rudder stamps with the requested version.
 */
export type Converted<T extends KubeObject> = Omit<T, "apiVersion" | "kind"> & {
  apiVersion?: string;
  kind?: string;
};

/**
 * The two functions of a spoke version `S` around its hub `H`. Each gets its own copy of the
 * object; `apiVersion` and `kind` of the result are set by Rudder, and `metadata` is the
 * input's when the result has none.
 */
export interface SpokeConversion<H extends KubeObject, S extends KubeObject> {
  /** Converts an object of the spoke version to the hub version. */
  convertTo(spoke: S): Converted<H>;
  /** Converts an object of the hub version to the spoke version. */
  convertFrom(hub: H): Converted<S>;
}

interface Kind {
  hub: ResourceType<KubeObject>;
  /**
   * By the spoke's apiVersion. Each spoke's own type is not kept (the compiler allows it: they
   * are methods): `convert` looks a pair up by the object's apiVersion, so each function only
   * ever gets the version it was written for.
   */
  spokes: Map<string, SpokeConversion<KubeObject, KubeObject>>;
}

/**
 * The conversions a webhook server knows, per kind: a hub and its spokes.
 *
 * @example Round-trip through the hub
 * ```ts ignore
 * import { ConversionRegistry } from "@rudder/operator/webhook";
 * import { ExampleV1, ExampleV2 } from "./api.ts";
 *
 * const conversions = new ConversionRegistry();
 * conversions.register(ExampleV1, ExampleV2, {
 *   convertTo: (v2) => ({ ...v2, apiVersion: "example.com/v1", spec: { size: v2.spec.replicas } }),
 *   convertFrom: (v1) => ({ ...v1, apiVersion: "example.com/v2", spec: { replicas: v1.spec.size } }),
 * });
 * const v2 = conversions.convert(someV1Object, "example.com/v2");
 * ```
 */
export class ConversionRegistry {
  readonly #kinds = new Map<string, Kind>();

  /**
   * Registers `spoke`'s conversions to and from `hub` (same group and kind, another version),
   * and marks the kind's CRD for webhook conversion (`crd()` then emits `spec.conversion`).
   */
  register<H extends KubeObject, S extends KubeObject>(
    hub: ResourceType<H>,
    spoke: ResourceType<S>,
    conversion: SpokeConversion<H, S>,
  ): void {
    if (hub.group !== spoke.group || hub.kind !== spoke.kind) {
      throw new Error(
        `conversion between ${hub.kind}.${hub.group} and ${spoke.kind}.${spoke.group}: ` +
          "hub and spoke must be versions of the same group and kind",
      );
    }
    if (hub.apiVersion === spoke.apiVersion) {
      throw new Error(`conversion of ${hub.kind}: the spoke ${spoke.apiVersion} is the hub`);
    }
    const key = `${hub.kind}.${hub.group}`;
    let kind = this.#kinds.get(key);
    if (!kind) {
      this.#kinds.set(key, kind = { hub, spokes: new Map() });
    }
    if (kind.hub.apiVersion !== hub.apiVersion) {
      throw new Error(`${key} already has the hub ${kind.hub.apiVersion}, not ${hub.apiVersion}`);
    }
    if (kind.spokes.has(spoke.apiVersion)) {
      throw new Error(`${key}: the conversion of ${spoke.apiVersion} is registered twice`);
    }
    kind.spokes.set(spoke.apiVersion, conversion);
    markConversionWebhook(`${hub.plural}.${hub.group}`);
  }

  /** Whether any conversion is registered. */
  get size(): number {
    return this.#kinds.size;
  }

  /** Names (`<plural>.<group>`) of the CRDs with conversions. */
  crdNames(): string[] {
    return [...this.#kinds.values()].map(({ hub }) => `${hub.plural}.${hub.group}`);
  }

  /**
   * Converts `obj` to `desiredAPIVersion` through the hub; an object already in that version
   * comes back as it is. Throws when the kind or a version has no conversion.
   */
  convert(obj: KubeObject, desiredAPIVersion: string): KubeObject {
    if (obj.apiVersion === desiredAPIVersion) return obj;
    const group = (obj.apiVersion ?? "").split("/")[0];
    const desiredGroup = desiredAPIVersion.split("/")[0];
    const key = `${obj.kind}.${group}`;
    const kind = this.#kinds.get(key);
    if (!kind) throw new Error(`no conversion registered for ${key}`);
    if (desiredGroup !== group) {
      throw new Error(`cannot convert ${key} to another group: ${desiredAPIVersion}`);
    }
    const spoke = (apiVersion: string) => {
      const found = kind.spokes.get(apiVersion);
      if (!found) throw new Error(`no conversion registered for ${key} version ${apiVersion}`);
      return found;
    };
    const hubVersion = kind.hub.apiVersion;
    const hubObject = obj.apiVersion === hubVersion
      ? obj
      : withIdentity(spoke(obj.apiVersion!).convertTo(structuredClone(obj)), obj, hubVersion);
    if (desiredAPIVersion === hubVersion) return hubObject;
    return withIdentity(
      spoke(desiredAPIVersion).convertFrom(structuredClone(hubObject)),
      obj,
      desiredAPIVersion,
    );
  }
}

function withIdentity(
  converted: Converted<KubeObject>,
  original: KubeObject,
  apiVersion: string,
): KubeObject {
  if (typeof converted !== "object" || converted === null) {
    throw new Error(`a conversion to ${apiVersion} returned ${String(converted)}, not an object`);
  }
  return {
    ...converted,
    apiVersion,
    kind: original.kind,
    metadata: converted.metadata ?? original.metadata,
  };
}

/**
 * Checks that `body` (parsed JSON) is a `ConversionReview` with a request and returns it;
 * throws a {@linkcode ReviewDecodeError} (400) naming what is wrong.
 *
 * @example
 * ```ts
 * import { decodeConversionReview } from "@rudder/operator/webhook";
 *
 * const request = decodeConversionReview({
 *   apiVersion: "apiextensions.k8s.io/v1",
 *   kind: "ConversionReview",
 *   request: { uid: "1", desiredAPIVersion: "example.com/v2", objects: [] },
 * });
 * console.log(request.desiredAPIVersion); // example.com/v2
 * ```
 */
export function decodeConversionReview(body: unknown): ConversionRequest {
  if (!isJsonObject(body)) throw new ReviewDecodeError("the body is not a JSON object");
  if (body.kind !== "ConversionReview") {
    throw new ReviewDecodeError(
      `expected kind ConversionReview, got ${JSON.stringify(body.kind)}`,
    );
  }
  if (body.apiVersion !== CONVERSION_API_VERSION) {
    throw new ReviewDecodeError(
      `expected apiVersion ${CONVERSION_API_VERSION}, got ${JSON.stringify(body.apiVersion)}`,
    );
  }
  const request = body.request;
  if (!isJsonObject(request)) throw new ReviewDecodeError("the ConversionReview has no request");
  const { uid, desiredAPIVersion, objects } = request;
  if (typeof uid !== "string" || uid === "") {
    throw new ReviewDecodeError("the ConversionReview request has no uid");
  }
  if (typeof desiredAPIVersion !== "string" || !desiredAPIVersion) {
    throw new ReviewDecodeError("the ConversionReview request has no desiredAPIVersion");
  }
  if (!Array.isArray(objects) || !objects.every(hasKind)) {
    throw new ReviewDecodeError(
      "the ConversionReview request's objects are not a list of objects with apiVersion and kind",
    );
  }
  // Checked down to apiVersion and kind; the rest (metadata included) is the API server's
  // stored object of the CRD's kind, for the conversion functions to read.
  return { uid, desiredAPIVersion, objects: objects as KubeObject[] };
}

function hasKind(value: unknown): value is JsonObject & { apiVersion: string; kind: string } {
  return isJsonObject(value) && typeof value.apiVersion === "string" &&
    typeof value.kind === "string";
}

/**
 * Answers a conversion request: every object converted, or a failure naming the first that
 * could not be (the API server then fails the request that needed it).
 *
 * @example
 * ```ts
 * import { ConversionRegistry, convertReview } from "@rudder/operator/webhook";
 *
 * const response = convertReview(new ConversionRegistry(), {
 *   uid: "1",
 *   desiredAPIVersion: "example.com/v2",
 *   objects: [],
 * });
 * console.log(response.result.status); // Success
 * ```
 */
export function convertReview(
  registry: ConversionRegistry,
  request: ConversionRequest,
): ConversionResponse {
  const convertedObjects: KubeObject[] = [];
  for (const obj of request.objects) {
    try {
      convertedObjects.push(registry.convert(obj, request.desiredAPIVersion));
    } catch (err) {
      const name = obj.metadata?.namespace
        ? `${obj.metadata.namespace}/${obj.metadata.name}`
        : obj.metadata?.name ?? "";
      const message = err instanceof Error ? err.message : String(err);
      return {
        uid: request.uid,
        convertedObjects: [],
        result: {
          status: "Failure",
          message: `converting ${obj.kind} ${name} to ${request.desiredAPIVersion}: ${message}`,
        },
      };
    }
  }
  return { uid: request.uid, convertedObjects, result: { status: "Success" } };
}

/**
 * A `fetch` handler of `ConversionReview`s over `registry`: 4xx for a malformed review, else
 * the converted objects (or a failure result).
 *
 * @example
 * ```ts
 * import { ConversionRegistry, conversionHandler } from "@rudder/operator/webhook";
 *
 * const handler = conversionHandler(new ConversionRegistry());
 * const response = await handler(new Request("https://localhost/convert", {
 *   method: "POST",
 *   headers: { "content-type": "application/json" },
 *   body: "not json",
 * }));
 * console.log(response.status); // 400
 * ```
 */
export function conversionHandler(
  registry: ConversionRegistry,
): (request: Request) => Promise<Response> {
  return async (httpRequest) => {
    let request: ConversionRequest;
    try {
      request = decodeConversionReview(await readReviewBody(httpRequest));
    } catch (err) {
      return reviewErrorResponse(err);
    }
    const response = await withSpan(`conversion to ${request.desiredAPIVersion}`, {
      kind: SpanKind.SERVER,
      parent: contextFromHeaders(httpRequest.headers),
      attributes: () => ({
        "url.path": new URL(httpRequest.url).pathname,
        "rudder.conversion.desired_api_version": request.desiredAPIVersion,
        "rudder.conversion.objects": request.objects.length,
        "rudder.conversion.uid": request.uid,
      }),
    }, (span) => {
      const response = convertReview(registry, request);
      if (response.result.status !== "Success") {
        span.setStatus({ code: SpanStatusCode.ERROR, message: response.result.message });
      }
      return Promise.resolve(response);
    });
    const review: ConversionReview = {
      apiVersion: CONVERSION_API_VERSION,
      kind: "ConversionReview",
      response,
    };
    return Response.json(review);
  };
}
