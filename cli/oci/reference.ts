/**
 * Image references as Docker spells them: `[registry/]repository[:tag][@digest]`, with Docker
 * Hub's defaults (`docker.io`, `library/`) for short names.
 *
 * @module
 */

/** A parsed image reference. */
export interface ImageReference {
  /** The registry's host, with a port when one is given (`docker.io` for Docker Hub). */
  registry: string;
  /** The repository, e.g. `library/alpine` or `my-team/operator`. */
  repository: string;
  /** The tag; undefined when only a digest is given. */
  tag?: string;
  /** `sha256:…`, when given. */
  digest?: string;
}

const DOCKER_HUB = "docker.io";

/** Parses a reference; a missing tag and digest mean the tag `latest`. */
export function parseReference(text: string): ImageReference {
  let rest = text.trim();
  let digest: string | undefined;
  const at = rest.indexOf("@");
  if (at !== -1) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!/^sha256:[a-f0-9]{64}$/.test(digest)) {
      throw new Error(`image reference "${text}": the digest must be sha256:<64 hex digits>`);
    }
  }
  let tag: string | undefined;
  const lastSlash = rest.lastIndexOf("/");
  const colon = rest.lastIndexOf(":");
  if (colon > lastSlash) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/.test(tag)) {
      throw new Error(`image reference "${text}": invalid tag "${tag}"`);
    }
  }
  const slash = rest.indexOf("/");
  const first = slash === -1 ? "" : rest.slice(0, slash);
  const hasRegistry = first.includes(".") || first.includes(":") || first === "localhost";
  let registry = hasRegistry ? first : DOCKER_HUB;
  let repository = hasRegistry ? rest.slice(slash + 1) : rest;
  if (
    !/^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/.test(
      registry,
    )
  ) {
    throw new Error(`image reference "${text}": invalid registry "${registry}"`);
  }
  if (registry === "index.docker.io") registry = DOCKER_HUB;
  if (
    !/^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$/.test(
      repository,
    )
  ) {
    throw new Error(`image reference "${text}": invalid repository "${repository}"`);
  }
  if (registry === DOCKER_HUB && !repository.includes("/")) repository = `library/${repository}`;
  if (!tag && !digest) tag = "latest";
  return { registry, repository, tag, digest };
}

/** `registry/repository`, the name without tag or digest. */
export function repositoryName(ref: ImageReference): string {
  return `${ref.registry}/${ref.repository}`;
}

/** The reference as text: `registry/repository[:tag][@digest]`. */
export function formatReference(ref: ImageReference): string {
  return `${repositoryName(ref)}${ref.tag ? `:${ref.tag}` : ""}${
    ref.digest ? `@${ref.digest}` : ""
  }`;
}

/**
 * `repository@sha256:…` for a digest, `repository:tag` for a tag: how a manifest of a
 * repository is named in messages.
 */
export function manifestName(repository: string, reference: string): string {
  return `${repository}${reference.startsWith("sha256:") ? "@" : ":"}${reference}`;
}

/** The same repository pinned to `digest`, without the tag: `registry/repository@digest`. */
export function pinnedReference(ref: ImageReference, digest: string): string {
  return `${repositoryName(ref)}@${digest}`;
}

/** Whether a registry host is on this machine (`localhost`, `127.x.x.x`, `[::1]`). */
export function isLoopbackRegistry(registry: string): boolean {
  const host = registry.startsWith("[")
    ? registry.slice(1, registry.indexOf("]"))
    : registry.split(":")[0];
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}
