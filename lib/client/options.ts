/**
 * Options of client calls, in controller-runtime's terms, and their translation to the query
 * parameters and bodies of the Kubernetes API.
 *
 * @module
 */

import type { QueryValue } from "../kube/rest.ts";

/** A label selector as structured data (metav1.LabelSelector). */
export interface LabelSelectorObject {
  /** Labels that must have exactly these values. */
  matchLabels?: Record<string, string>;
  /** Set-based requirements. */
  matchExpressions?: {
    /** The label key. */
    key: string;
    /** `In`, `NotIn`, `Exists` or `DoesNotExist`. */
    operator: "In" | "NotIn" | "Exists" | "DoesNotExist";
    /** Values for `In` and `NotIn`. */
    values?: string[];
  }[];
}

/** A label selector: the API's string form (`app=web,tier in (a,b)`) or structured. */
export type LabelSelectorInput = string | LabelSelectorObject;

/** A field selector: the API's string form (`metadata.name=x`) or `{ field: value }` pairs. */
export type FieldSelectorInput = string | Record<string, string>;

/** Cancellation, shared by every call. */
export interface CallOptions {
  /** Aborts the request. */
  signal?: AbortSignal;
}

/** Options of `get`. */
export interface GetOptions extends CallOptions {
  /** Serve from the API server's cache at this resourceVersion (`"0"`: any). */
  resourceVersion?: string;
}

/** Options of `list`, `listAll` and `deleteAllOf`. */
export interface ListOptions extends CallOptions {
  /** Namespace to list in; all namespaces when unset. */
  namespace?: string;
  /** Only objects whose labels match. */
  labelSelector?: LabelSelectorInput;
  /** Only objects whose fields match. */
  fieldSelector?: FieldSelectorInput;
  /** At most this many objects; the answer's `metadata.continue` fetches the next page. */
  limit?: number;
  /** The `metadata.continue` token of the previous page. */
  continue?: string;
  /** The resourceVersion to list at. */
  resourceVersion?: string;
  /** How `resourceVersion` applies: `Exact` or `NotOlderThan`. */
  resourceVersionMatch?: "Exact" | "NotOlderThan";
}

/** Server-side field validation: reject, warn about or ignore unknown and duplicate fields. */
export type FieldValidation = "Strict" | "Warn" | "Ignore";

/** Options of every write. */
export interface WriteOptions extends CallOptions {
  /** Validate and answer, but persist nothing. */
  dryRun?: boolean;
  /** Name of the actor making the change, recorded in managedFields. */
  fieldManager?: string;
  /** What to do with unknown or duplicate fields; the server's default is `Warn`. */
  fieldValidation?: FieldValidation;
}

/** Options of `create`. */
export type CreateOptions = WriteOptions;

/** Options of `update`. */
export type UpdateOptions = WriteOptions;

/** Options of `patch`. */
export interface PatchOptions extends WriteOptions {
  /** Take fields other managers own; only for server-side apply patches. */
  force?: boolean;
}

/** Options of `apply` (server-side apply). */
export interface ApplyOptions extends WriteOptions {
  /** The field manager that owns what this apply sets; required. */
  fieldManager: string;
  /** Take fields other managers own instead of failing with a conflict. */
  force?: boolean;
}

/** What happens to dependents of a deleted object. */
export type PropagationPolicy = "Orphan" | "Background" | "Foreground";

/** Options of `delete`. */
export interface DeleteOptions extends CallOptions {
  /** Validate, but delete nothing. */
  dryRun?: boolean;
  /** Seconds before the object is deleted; `0` deletes at once. */
  gracePeriodSeconds?: number;
  /** Whether and how dependents are garbage-collected. */
  propagationPolicy?: PropagationPolicy;
  /** Delete only if the object still has this uid and/or resourceVersion. */
  preconditions?: { uid?: string; resourceVersion?: string };
}

/** Options of `deleteAllOf`: which objects, and how each is deleted. */
export type DeleteAllOfOptions = ListOptions & Omit<DeleteOptions, "signal">;

/** Turns a structured label selector into the API's string form. */
export function formatLabelSelector(selector: LabelSelectorInput): string {
  if (typeof selector === "string") return selector;
  const parts: string[] = [];
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    parts.push(`${key}=${value}`);
  }
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    switch (operator) {
      case "In":
      case "NotIn":
        if (values.length === 0) {
          throw new Error(`labelSelector: ${key} ${operator} needs at least one value`);
        }
        parts.push(`${key} ${operator.toLowerCase()} (${[...values].sort().join(",")})`);
        break;
      case "Exists":
        parts.push(key);
        break;
      case "DoesNotExist":
        parts.push(`!${key}`);
        break;
      default:
        throw new Error(`labelSelector: unknown operator ${JSON.stringify(operator)} for ${key}`);
    }
  }
  return parts.join(",");
}

/**
 * Turns `{ field: value }` pairs into the API's field selector string, escaping `\`, `,` and
 * `=` in values as apimachinery's `fields.EscapeValue` does.
 */
export function formatFieldSelector(selector: FieldSelectorInput): string {
  if (typeof selector === "string") return selector;
  return Object.entries(selector)
    .map(([field, value]) => `${field}=${value.replace(/[\\,=]/g, (c) => `\\${c}`)}`)
    .join(",");
}

/** Query parameters of a list. */
export function listQuery(options: ListOptions): Record<string, QueryValue> {
  return {
    labelSelector: options.labelSelector === undefined
      ? undefined
      : formatLabelSelector(options.labelSelector) || undefined,
    fieldSelector: options.fieldSelector === undefined
      ? undefined
      : formatFieldSelector(options.fieldSelector) || undefined,
    limit: options.limit,
    continue: options.continue,
    resourceVersion: options.resourceVersion,
    resourceVersionMatch: options.resourceVersionMatch,
  };
}

/** Query parameters of a write. */
export function writeQuery(
  options: WriteOptions & { force?: boolean },
): Record<string, QueryValue> {
  return {
    dryRun: options.dryRun ? "All" : undefined,
    fieldManager: options.fieldManager,
    fieldValidation: options.fieldValidation,
    force: options.force === undefined ? undefined : options.force,
  };
}

/** The `DeleteOptions` body of a delete, or `undefined` when nothing is set. */
export function deleteBody(options: DeleteOptions): Record<string, unknown> | undefined {
  const body: Record<string, unknown> = {};
  if (options.dryRun) body.dryRun = ["All"];
  if (options.gracePeriodSeconds !== undefined) {
    body.gracePeriodSeconds = options.gracePeriodSeconds;
  }
  if (options.propagationPolicy) body.propagationPolicy = options.propagationPolicy;
  if (options.preconditions) body.preconditions = options.preconditions;
  if (Object.keys(body).length === 0) return undefined;
  return { apiVersion: "v1", kind: "DeleteOptions", ...body };
}
