/**
 * Names and labels, validated as apimachinery validates them: the checks every create and
 * update passes through, with the API server's own messages.
 *
 * @module
 */

import type { KubeObject, ResourceType } from "../../api/resource.ts";
import type { StatusCause } from "../../kube/errors.ts";
import { isJsonObject } from "../../util/json.ts";
import { invalidValue } from "./errors.ts";

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED_NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

const SUBDOMAIN_MESSAGE =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric " +
  "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. " +
  "'example.com', regex used for validation is " +
  "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MESSAGE = "a lowercase RFC 1123 label must consist of lower case alphanumeric " +
  "characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  " +
  "or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035_MESSAGE = "a DNS-1035 label must consist of lower case alphanumeric characters or " +
  "'-', start with an alphabetic character, and end with an alphanumeric character (e.g. " +
  "'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const NAME_PART_MESSAGE = "name part must consist of alphanumeric characters, '-', '_' or '.', " +
  "and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or " +
  "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MESSAGE = "a valid label must be an empty string or consist of alphanumeric " +
  "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. " +
  "'MyValue',  or 'my_value',  or '12345', regex used for validation is " +
  "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/** What is wrong with `name` as the name of a `type` object, if anything. */
export function nameProblems(type: ResourceType<KubeObject>, name: string): string[] {
  if (type.group === "rbac.authorization.k8s.io") {
    // RBAC names are path segments, so `system:controller:x` is valid.
    if (name === "." || name === "..") return [`may not be '${name}'`];
    const bad = ["/", "%"].filter((c) => name.includes(c));
    return bad.map((c) => `may not contain '${c}'`);
  }
  if (type.group === "" && type.kind === "Namespace") {
    const problems = name.length > 63 ? ["must be no more than 63 characters"] : [];
    return DNS1123_LABEL.test(name) ? problems : [...problems, LABEL_MESSAGE];
  }
  if (type.group === "" && type.kind === "Service") {
    const problems = name.length > 63 ? ["must be no more than 63 characters"] : [];
    return DNS1035_LABEL.test(name) ? problems : [...problems, DNS1035_MESSAGE];
  }
  const problems = name.length > 253 ? ["must be no more than 253 characters"] : [];
  return DNS1123_SUBDOMAIN.test(name) ? problems : [...problems, SUBDOMAIN_MESSAGE];
}

/** The causes of a 422 Invalid for malformed label keys and values, if any. */
export function labelCauses(labels: unknown): StatusCause[] {
  if (!isJsonObject(labels)) return [];
  const causes: StatusCause[] = [];
  const field = "metadata.labels";
  for (const [key, value] of Object.entries(labels)) {
    const slash = key.indexOf("/");
    const prefix = slash === -1 ? undefined : key.slice(0, slash);
    const namePart = slash === -1 ? key : key.slice(slash + 1);
    if (prefix !== undefined && (prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix))) {
      causes.push(invalidValue(field, key, `prefix part ${SUBDOMAIN_MESSAGE}`));
    }
    if (namePart.length === 0) causes.push(invalidValue(field, key, "name part must be non-empty"));
    else if (namePart.length > 63) {
      causes.push(invalidValue(field, key, "name part must be no more than 63 bytes"));
    } else if (!QUALIFIED_NAME_PART.test(namePart)) {
      causes.push(invalidValue(field, key, NAME_PART_MESSAGE));
    }
    if (typeof value !== "string") continue;
    if (value.length > 63) causes.push(invalidValue(field, value, "must be no more than 63 bytes"));
    else if (!LABEL_VALUE.test(value)) causes.push(invalidValue(field, value, LABEL_VALUE_MESSAGE));
  }
  return causes;
}
