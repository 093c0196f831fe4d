/**
 * Lists as the API server answers them: label and field selectors (a malformed one, or a
 * field the kind does not support, is a BadRequest), keys in order, and `continue` tokens.
 *
 * @module
 */

import type { KubeObject, ResourceType } from "../../api/resource.ts";
import { parseFieldSelector, parseLabelSelector, SelectorError } from "../../cache/selector.ts";
import type { ListOptions } from "../../client/options.ts";
import { isJsonObject, type JsonObject } from "../../util/json.ts";
import { badRequest, type Where } from "./errors.ts";
import { fieldValue, type KnownKinds } from "./kinds.ts";
import { base64 } from "./objects.ts";

/** Parses a selector as the API server would, refusing a malformed one with BadRequest. */
function selecting<S>(parse: () => S, where: Where): S {
  try {
    return parse();
  } catch (err) {
    if (err instanceof SelectorError) throw badRequest(err.message, where);
    throw err;
  }
}

/** A field's value as the API server's field sets hold it: missing is `""`. */
function fieldText(value: unknown): string {
  if (value === undefined || value === null) return "";
  return typeof value === "string" ? value : String(value);
}

/**
 * The entries of `type` that a list's namespace and selectors match, sorted by key, and
 * whether a selector filtered them (the server then cannot count what is left).
 */
export function selectEntries<E extends { object: JsonObject }>(
  type: ResourceType<KubeObject>,
  entries: Iterable<[string, E]>,
  options: ListOptions,
  kinds: KnownKinds,
  where: Where,
): { entries: [string, E][]; filtered: boolean } {
  const { labelSelector, fieldSelector } = options;
  const labels = labelSelector === undefined
    ? undefined
    : selecting(() => parseLabelSelector(labelSelector), where);
  const fields = fieldSelector === undefined
    ? undefined
    : selecting(() => parseFieldSelector(fieldSelector), where);
  const supported = kinds.selectableFields(type);
  for (const { field } of fields?.requirements ?? []) {
    if (!supported.includes(field)) {
      throw badRequest(`field label not supported: ${field}`, where);
    }
  }
  const namespace = type.scope === "Namespaced" ? options.namespace : undefined;
  const selected = [...entries]
    .filter(([, entry]) => {
      const meta = isJsonObject(entry.object.metadata) ? entry.object.metadata : {};
      if (namespace && meta.namespace !== namespace) return false;
      // ObjectMeta types label values as strings, and writes come from typed objects.
      if (labels && !labels.matches(meta.labels as Record<string, string> | undefined)) {
        return false;
      }
      return (fields?.requirements ?? []).every(({ field, operator, value }) => {
        const actual = fieldText(fieldValue(type, entry.object, field));
        return operator === "!=" ? actual !== value : actual === value;
      });
    })
    .sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
  return { entries: selected, filtered: !(labels?.empty ?? true) || !(fields?.empty ?? true) };
}

/** The `continue` token of a page that ended at `lastKey`, in the API server's format. */
export function encodeContinue(resourceVersion: number, lastKey: string): string {
  const token = { v: "meta.k8s.io/v1", rv: resourceVersion, start: `${lastKey}\u0000` };
  return base64(JSON.stringify(token));
}

/** The key a `continue` token starts from; BadRequest for a token that is not one. */
export function decodeContinue(token: string, where: Where): string {
  try {
    const decoded = JSON.parse(new TextDecoder().decode(
      Uint8Array.from(atob(token), (c) => c.charCodeAt(0)),
    ));
    if (decoded?.v === "meta.k8s.io/v1" && typeof decoded.start === "string") {
      return decoded.start;
    }
  } catch {
    // Reported below.
  }
  throw badRequest(
    `invalid continue token: ${JSON.stringify(token)} is not a continue token`,
    where,
  );
}
