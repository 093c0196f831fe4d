/**
 * The webhook builder, like controller-runtime's `builder.WebhookManagedBy`:
 *
 * ```ts ignore
 * newWebhookManagedBy(mgr, Example)
 *   .withDefaulter((example) => { example.spec.replicas ??= 1; })
 *   .withValidator({ validateCreate: (example) => check(example) })
 *   .complete();
 * ```
 *
 * A defaulter gets a copy of the object to change in place; the server answers with the JSON
 * patch from the object as sent to the changed copy. A validator returns warnings (or nothing)
 * to admit, and throws to deny: see `denialFromError` for how an error becomes a denial.
 * Paths are controller-runtime's: `/mutate-<group with dashes>-<version>-<kind lower-cased>`
 * and `/validate-…`.
 *
 * @module
 */

import { isDefinedResource, type KubeObject, type ResourceType } from "../api/resource.ts";
import {
  type AdmissionGroupVersionKind,
  admissionHandler,
  type AdmissionOperation,
  type AdmissionRequest,
  type AdmissionResult,
  allowed,
} from "./admission.ts";
import type { SpokeConversion } from "./conversion.ts";
import { createJsonPatch } from "../client/json_patch.ts";
import type { WebhookServer } from "./server.ts";

/**
 * What the webhook builder needs from its manager: the webhook server to register on. The
 * Manager implements it; a test can hand over a bare server.
 */
export interface WebhookHost {
  /** The server webhooks are registered on. */
  getWebhookServer(): WebhookServer;
}

/**
 * Sets defaults on `obj`, a copy of the object being admitted, in place. Runs on CREATE and
 * UPDATE. Throwing denies the request.
 */
export type Defaulter<T> = (obj: T, request: AdmissionRequest<T>) => void | Promise<void>;

/** Warnings a validator returns to the client (the API server sends them as `Warning` headers). */
export type Warnings = string[] | void | undefined;

/**
 * Checks objects of kind `T`; each method returns warnings to admit, and throws (best an
 * `AdmissionDeniedError`) to deny. A missing method admits.
 */
export interface Validator<T> {
  /** Checks an object being created. */
  validateCreate?(obj: T, request: AdmissionRequest<T>): Warnings | Promise<Warnings>;
  /** Checks an update from `oldObj` to `newObj`. */
  validateUpdate?(oldObj: T, newObj: T, request: AdmissionRequest<T>): Warnings | Promise<Warnings>;
  /** Checks an object being deleted (its last state). */
  validateDelete?(obj: T, request: AdmissionRequest<T>): Warnings | Promise<Warnings>;
}

function pathSuffix(gvk: { group: string; version: string; kind: string }): string {
  return `${gvk.group.replaceAll(".", "-")}-${gvk.version}-${gvk.kind.toLowerCase()}`;
}

/**
 * controller-runtime's path of a kind's defaulting webhook.
 *
 * @example
 * ```ts
 * import { generateMutatePath } from "@rudder/operator/webhook";
 *
 * console.log(generateMutatePath({ group: "example.com", version: "v1", kind: "Example" }));
 * // /mutate-example-com-v1-example
 * ```
 */
export function generateMutatePath(gvk: AdmissionGroupVersionKind): string {
  return `/mutate-${pathSuffix(gvk)}`;
}

/**
 * controller-runtime's path of a kind's validating webhook.
 *
 * @example
 * ```ts
 * import { generateValidatePath } from "@rudder/operator/webhook";
 *
 * console.log(generateValidatePath({ group: "", version: "v1", kind: "Pod" })); // /validate--v1-pod
 * ```
 */
export function generateValidatePath(gvk: AdmissionGroupVersionKind): string {
  return `/validate-${pathSuffix(gvk)}`;
}

/**
 * The admission decision of a defaulter: the JSON patch from the object as sent to the copy
 * the defaulter changed. DELETE and CONNECT are admitted untouched.
 *
 * @example
 * ```ts ignore
 * const result = await defaultingResult((obj) => { obj.spec.replicas ??= 1; }, request);
 * console.log(result.patch); // [{ op: "add", path: "/spec/replicas", value: 1 }]
 * ```
 */
export async function defaultingResult<T>(
  defaulter: Defaulter<T>,
  request: AdmissionRequest<T>,
): Promise<AdmissionResult> {
  if (request.operation !== "CREATE" && request.operation !== "UPDATE") return allowed();
  if (request.object === undefined || request.object === null) {
    throw new Error(`${request.operation} request without an object`);
  }
  const copy = structuredClone(request.object);
  await defaulter(copy, request);
  return { allowed: true, patch: createJsonPatch(request.object, copy) };
}

/**
 * The admission decision of a validator for one request: admitted with its warnings, or an
 * error thrown (which the handler turns into a denial).
 *
 * @example
 * ```ts ignore
 * const result = await validationResult({ validateCreate: () => ["deprecated"] }, request);
 * console.log(result); // { allowed: true, warnings: ["deprecated"] }
 * ```
 */
export async function validationResult<T>(
  validator: Validator<T>,
  request: AdmissionRequest<T>,
): Promise<AdmissionResult> {
  const need = (obj: T | undefined, what: string): T => {
    if (obj === undefined || obj === null) {
      throw new Error(`${request.operation} request without ${what}`);
    }
    return structuredClone(obj);
  };
  let warnings: Warnings;
  switch (request.operation) {
    case "CREATE":
      if (validator.validateCreate) {
        warnings = await validator.validateCreate(need(request.object, "an object"), request);
      }
      break;
    case "UPDATE":
      if (validator.validateUpdate) {
        warnings = await validator.validateUpdate(
          need(request.oldObject, "an old object"),
          need(request.object, "an object"),
          request,
        );
      }
      break;
    case "DELETE":
      if (validator.validateDelete) {
        warnings = await validator.validateDelete(
          need(request.oldObject, "an old object"),
          request,
        );
      }
      break;
  }
  return allowed(warnings ?? undefined);
}

/** `validator`, after the object has passed `type.parse` (which throws a `ValidationError`). */
function withSchema<T>(
  type: { parse(obj: unknown): unknown },
  validator: Validator<T>,
): Validator<T> {
  return {
    validateCreate: (obj, request) => {
      type.parse(obj);
      return validator.validateCreate?.(obj, request);
    },
    validateUpdate: (oldObj, obj, request) => {
      type.parse(obj);
      return validator.validateUpdate?.(oldObj, obj, request);
    },
    ...(validator.validateDelete ? { validateDelete: validator.validateDelete } : {}),
  };
}

/** Collects a kind's webhooks; see {@linkcode newWebhookManagedBy}. */
export class WebhookBuilder<T extends KubeObject = KubeObject> {
  readonly #host: WebhookHost;
  readonly #for: ResourceType<T>;
  #defaulter: Defaulter<T> | undefined;
  #validator: Validator<T> | undefined;
  /** Spokes of any version: see ConversionRegistry for why forgetting a spoke's type is safe. */
  #conversions: { spoke: ResourceType<KubeObject>; conversion: SpokeConversion<T, KubeObject> }[] =
    [];
  #schemaValidation = false;
  #completed = false;

  /** Use {@linkcode newWebhookManagedBy}. */
  constructor(host: WebhookHost, type: ResourceType<T>) {
    this.#host = host;
    this.#for = type;
  }

  /** Sets defaults on a copy of each object created or updated; see {@linkcode Defaulter}. */
  withDefaulter(defaulter: Defaulter<T>): this {
    this.#defaulter = defaulter;
    return this;
  }

  /** Checks objects created, updated and deleted; see {@linkcode Validator}. */
  withValidator(validator: Validator<T>): this {
    this.#validator = validator;
    return this;
  }

  /**
   * Beyond controller-runtime: checks created and updated objects against the whole zod
   * schema of a `defineResource` kind, refinements included (which a CRD's structural schema
   * cannot express), before the validator runs. A failure is denied `422 Invalid`, naming each
   * failing field.
   */
  withSchemaValidation(): this {
    this.#schemaValidation = true;
    return this;
  }

  /**
   * Converts between the `for` kind (the hub) and another version of it, `spoke`:
   * `convertTo(spoke)` returns the hub object, `convertFrom(hub)` the spoke object.
   */
  withConversion<S extends KubeObject>(
    spoke: ResourceType<S>,
    conversion: SpokeConversion<T, S>,
  ): this {
    this.#conversions.push({ spoke, conversion });
    return this;
  }

  /** Registers the webhooks on the host's server. */
  complete(): void {
    if (this.#completed) throw new Error("complete() was already called");
    const type = this.#for;
    if (
      !this.#defaulter && !this.#validator && !this.#schemaValidation &&
      this.#conversions.length === 0
    ) {
      throw new Error(
        `webhooks of ${type.kind}: give withDefaulter, withValidator, withSchemaValidation ` +
          "or withConversion",
      );
    }
    let schema: { parse(obj: unknown): unknown } | undefined;
    if (this.#schemaValidation) {
      if (!isDefinedResource(type)) {
        throw new Error(
          `withSchemaValidation needs a kind made by defineResource, not ${type.kind}`,
        );
      }
      schema = type;
    }
    this.#completed = true;
    const server = this.#host.getWebhookServer();
    const gvk = { group: type.group, version: type.version, kind: type.kind };
    const defaulter = this.#defaulter;
    if (defaulter) {
      server.register(
        generateMutatePath(gvk),
        admissionHandler<T>((request) => defaultingResult(defaulter, request)),
        {
          type: "mutating",
          resource: type,
          operations: ["CREATE", "UPDATE"],
        },
      );
    }
    const validator = schema ? withSchema(schema, this.#validator ?? {}) : this.#validator;
    if (validator) {
      const operations: AdmissionOperation[] = ["CREATE", "UPDATE"];
      if (validator.validateDelete) operations.push("DELETE");
      server.register(
        generateValidatePath(gvk),
        admissionHandler<T>((request) => validationResult(validator, request)),
        { type: "validating", resource: type, operations },
      );
    }
    for (const { spoke, conversion } of this.#conversions) {
      server.conversions.register(type, spoke, conversion);
    }
    if (this.#conversions.length > 0) server.serveConversions();
  }
}

/**
 * Starts a builder of the webhooks of `type` (the kind they admit, and the hub of its
 * conversions), registered on `host` (a Manager), as controller-runtime's
 * `builder.WebhookManagedBy(mgr, obj)`.
 *
 * @example
 * ```ts ignore
 * import { Manager } from "@rudder/operator";
 * import { AdmissionDeniedError, newWebhookManagedBy } from "@rudder/operator/webhook";
 * import { Example } from "./api/example.ts";
 *
 * const mgr = new Manager();
 * newWebhookManagedBy(mgr, Example)
 *   .withDefaulter((example) => {
 *     example.spec.replicas ??= 1;
 *   })
 *   .withValidator({
 *     validateCreate(example) {
 *       if (example.spec.replicas > 10) {
 *         throw new AdmissionDeniedError("spec.replicas must be at most 10");
 *       }
 *     },
 *   })
 *   .complete();
 * ```
 */
export function newWebhookManagedBy<T extends KubeObject>(
  host: WebhookHost,
  type: ResourceType<T>,
): WebhookBuilder<T> {
  return new WebhookBuilder(host, type);
}
