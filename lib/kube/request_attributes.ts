/**
 * What an API request is about, read from its method and path as the API server's own request
 * info does (verb, group, resource, namespace, name, subresource), for the span of each request.
 *
 * @module
 */

import type { Attributes } from "@opentelemetry/api";

/** The Kubernetes view of one request. */
export interface KubeRequestInfo {
  /** `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`, or the
   * lower-case method for a path outside the resource API (`/version`). */
  verb: string;
  /** API group; `""` for the core group. */
  group?: string;
  /** Resource (plural), e.g. `configmaps`. */
  resource?: string;
  /** Namespace, for a namespaced request. */
  namespace?: string;
  /** Object name, for a request about one object. */
  name?: string;
  /** Subresource, e.g. `status`. */
  subresource?: string;
}

/** Reads verb, resource, namespace, name and subresource from a request. */
export function kubeRequestInfo(
  method: string,
  path: string,
  query?: Readonly<Record<string, unknown>>,
): KubeRequestInfo {
  const segments = path.split("?")[0].split("/").filter((segment) => segment.length > 0);
  let rest: string[];
  let group: string;
  if (segments[0] === "api" && segments.length >= 2) {
    group = "";
    rest = segments.slice(2);
  } else if (segments[0] === "apis" && segments.length >= 3) {
    group = segments[1];
    rest = segments.slice(3);
  } else {
    return { verb: method.toLowerCase() };
  }
  let namespace: string | undefined;
  if (rest[0] === "namespaces" && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const [resource, name, subresource] = rest;
  const watching = query?.watch === true || query?.watch === "true";
  const verb = watching ? "watch" : verbOf(method, name !== undefined);
  return { verb, group, resource, namespace, name, subresource };
}

function verbOf(method: string, named: boolean): string {
  switch (method.toUpperCase()) {
    case "GET":
      return named ? "get" : "list";
    case "POST":
      return "create";
    case "PUT":
      return "update";
    case "PATCH":
      return "patch";
    case "DELETE":
      return named ? "delete" : "deletecollection";
    default:
      return method.toLowerCase();
  }
}

/** The span name and attributes of a request (see the tracing guide for their meaning). */
export function requestSpanAttributes(info: KubeRequestInfo): Attributes {
  return {
    "rudder.k8s.verb": info.verb,
    "rudder.k8s.group": info.group,
    "rudder.k8s.resource": info.resource,
    "rudder.k8s.subresource": info.subresource,
    "k8s.namespace.name": info.namespace,
    "rudder.k8s.name": info.name,
  };
}

/** `verb resource[/subresource]`, a span name of few distinct values. */
export function requestSpanName(info: KubeRequestInfo): string {
  if (!info.resource) return info.verb;
  return `${info.verb} ${info.resource}${info.subresource ? `/${info.subresource}` : ""}`;
}
