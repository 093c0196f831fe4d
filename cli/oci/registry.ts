/**
 * A client of the OCI distribution API (Docker registry v2): manifests and blobs, pulled and
 * pushed. Authentication follows the registry's challenge: a `WWW-Authenticate: Bearer`
 * challenge is answered with a token from its realm (with basic credentials when there are
 * some), a `Basic` one with the credentials. Blobs are uploaded in one PUT after a POST, and
 * skipped when a HEAD finds them. Secrets never appear in errors.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import type { Credentials, CredentialSource } from "./credentials.ts";
import { MANIFEST_ACCEPT, sha256Digest } from "./image.ts";
import { isLoopbackRegistry } from "./reference.ts";

/** Options of {@linkcode RegistryClient}. */
export interface RegistryClientOptions {
  /** Plain HTTP instead of HTTPS; allowed only for a registry on loopback. */
  insecure?: boolean;
  /** Where credentials come from; default none (anonymous). */
  credentials?: CredentialSource;
  /** The fetch to use; default the global one. */
  fetch?: typeof fetch;
}

/** A manifest or index as the registry serves it. */
export interface FetchedManifest {
  /** Its bytes, as served (the digest is of these). */
  bytes: Uint8Array;
  /** Its media type: a manifest or an index. */
  mediaType: string;
  /** `sha256:…` of the bytes. */
  digest: string;
}

/** A failed registry request: the method, URL path, status and the registry's error codes. */
export class RegistryError extends Error {
  /** `status` is the HTTP status. */
  constructor(message: string, readonly status: number) {
    super(message);
    this.name = "RegistryError";
  }
}

/** A parsed `WWW-Authenticate` challenge. */
export interface Challenge {
  /** `bearer` or `basic`, lower-cased. */
  scheme: string;
  /** Its parameters (`realm`, `service`, `scope`), keys lower-cased. */
  params: Record<string, string>;
}

/** Parses a `WWW-Authenticate` header (one challenge, `key="value"` parameters). */
export function parseChallenge(header: string): Challenge {
  const match = header.match(/^\s*(\S+)\s*(.*)$/s);
  const scheme = (match?.[1] ?? "").toLowerCase();
  const params: Record<string, string> = {};
  const re = /([A-Za-z_]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))/g;
  for (const m of (match?.[2] ?? "").matchAll(re)) {
    params[m[1].toLowerCase()] = m[2] !== undefined ? m[2].replace(/\\(.)/g, "$1") : m[3];
  }
  return { scheme, params };
}

function basicHeader(credentials: Credentials): string {
  return `Basic ${
    Buffer.from(`${credentials.username}:${credentials.password}`).toString("base64")
  }`;
}

/** A registry's API, for one host. */
export class RegistryClient {
  readonly #base: string;
  readonly #registry: string;
  readonly #credentials: CredentialSource;
  readonly #fetch: typeof fetch;
  /** Authorization headers by scope (`repository:<name>:<actions>`). */
  readonly #authorization = new Map<string, string>();

  /** `registry` is the host (and port) of the registry, as in an image reference. */
  constructor(registry: string, options: RegistryClientOptions = {}) {
    if (options.insecure && !isLoopbackRegistry(registry)) {
      throw new Error(
        `plain HTTP is allowed only for a registry on this machine (localhost, 127.0.0.1, ` +
          `[::1]); ${registry} is not one`,
      );
    }
    const host = registry === "docker.io" ? "registry-1.docker.io" : registry;
    this.#base = `${options.insecure ? "http" : "https"}://${host}`;
    this.#registry = registry;
    this.#credentials = options.credentials ?? (() => undefined);
    this.#fetch = options.fetch ?? fetch;
  }

  /**
   * Sends a request, answering an authentication challenge once. `scope` names the
   * repository and the actions the request needs (`pull` or `pull,push`).
   */
  async #send(
    path: string,
    init: RequestInit & { headers?: Record<string, string> },
    scope: string,
  ): Promise<Response> {
    const url = path.startsWith("http") ? path : `${this.#base}${path}`;
    const attempt = async () => {
      const authorization = this.#authorization.get(scope);
      return await this.#fetch(url, {
        ...init,
        redirect: "manual",
        headers: { ...init.headers, ...(authorization ? { authorization } : {}) },
      });
    };
    let response = await attempt();
    if (response.status === 401) {
      const header = response.headers.get("www-authenticate");
      await response.body?.cancel();
      if (!header) throw new RegistryError(`${this.#registry}: 401 without a challenge`, 401);
      this.#authorization.set(scope, await this.#answer(parseChallenge(header), scope));
      response = await attempt();
    }
    // A blob may live elsewhere (a CDN): follow without the registry's credentials.
    for (let hops = 0; response.status >= 300 && response.status < 400 && hops < 5; hops++) {
      const location = response.headers.get("location");
      await response.body?.cancel();
      if (!location) break;
      response = await this.#fetch(new URL(location, url), {
        method: init.method,
        redirect: "manual",
      });
    }
    return response;
  }

  /** The Authorization header that answers a challenge. */
  async #answer(challenge: Challenge, scope: string): Promise<string> {
    const credentials = this.#credentials(this.#registry);
    if (challenge.scheme === "basic") {
      if (!credentials) {
        throw new RegistryError(
          `${this.#registry} wants a user name and password; log in with docker login ` +
            `(or podman login --authfile ~/.docker/config.json)`,
          401,
        );
      }
      return basicHeader(credentials);
    }
    if (challenge.scheme !== "bearer" || !challenge.params.realm) {
      throw new RegistryError(
        `${this.#registry}: unsupported authentication challenge "${challenge.scheme}"`,
        401,
      );
    }
    const realm = new URL(challenge.params.realm);
    if (realm.protocol !== "https:" && !isLoopbackRegistry(realm.host)) {
      throw new RegistryError(`${this.#registry}: the token realm must use HTTPS`, 401);
    }
    if (challenge.params.service) realm.searchParams.set("service", challenge.params.service);
    for (const each of scope.split(" ")) realm.searchParams.append("scope", each);
    const response = await this.#fetch(realm, {
      headers: credentials ? { authorization: basicHeader(credentials) } : {},
    });
    if (!response.ok) {
      await response.body?.cancel();
      throw new RegistryError(
        `${this.#registry}: the token service refused ${scope} (${response.status})` +
          (credentials ? "" : "; no credentials for it in the Docker config"),
        response.status,
      );
    }
    const body = await response.json() as { token?: string; access_token?: string };
    const token = body.token ?? body.access_token;
    if (!token) throw new RegistryError(`${this.#registry}: the token service sent no token`, 500);
    return `Bearer ${token}`;
  }

  async #fail(response: Response, what: string): Promise<never> {
    let detail = "";
    try {
      const body = await response.json() as { errors?: { code?: string; message?: string }[] };
      detail = (body.errors ?? []).map((e) => [e.code, e.message].filter(Boolean).join(": "))
        .join("; ");
    } catch {
      // not a registry error body
    }
    throw new RegistryError(
      `${what} on ${this.#registry}: ${response.status}${detail ? ` ${detail}` : ""}`,
      response.status,
    );
  }

  /** Fetches a manifest or index by tag or digest; checks the digest when one was asked for. */
  async getManifest(repository: string, reference: string): Promise<FetchedManifest> {
    const response = await this.#send(`/v2/${repository}/manifests/${reference}`, {
      headers: { accept: MANIFEST_ACCEPT },
    }, `repository:${repository}:pull`);
    if (!response.ok) await this.#fail(response, `GET manifest ${repository}:${reference}`);
    const bytes = new Uint8Array(await response.arrayBuffer());
    const digest = sha256Digest(bytes);
    if (reference.startsWith("sha256:") && digest !== reference) {
      throw new Error(`the manifest of ${repository}@${reference} has the digest ${digest}`);
    }
    const parsed = JSON.parse(new TextDecoder().decode(bytes)) as {
      mediaType?: string;
      manifests?: unknown;
    };
    const mediaType = parsed.mediaType ??
      response.headers.get("content-type")?.split(";")[0] ??
      (parsed.manifests ? "application/vnd.oci.image.index.v1+json" : "");
    return { bytes, mediaType, digest };
  }

  /** Fetches a blob and checks its digest. */
  async getBlob(repository: string, digest: string): Promise<Uint8Array> {
    const response = await this.#send(
      `/v2/${repository}/blobs/${digest}`,
      {},
      `repository:${repository}:pull`,
    );
    if (!response.ok) await this.#fail(response, `GET blob ${repository}@${digest}`);
    const bytes = new Uint8Array(await response.arrayBuffer());
    const actual = sha256Digest(bytes);
    if (actual !== digest) throw new Error(`blob ${digest} of ${repository} has digest ${actual}`);
    return bytes;
  }

  /** Whether the repository has the blob (a HEAD request). */
  async hasBlob(repository: string, digest: string): Promise<boolean> {
    const response = await this.#send(`/v2/${repository}/blobs/${digest}`, {
      method: "HEAD",
    }, `repository:${repository}:pull,push`);
    await response.body?.cancel();
    if (response.status === 404) return false;
    if (!response.ok) await this.#fail(response, `HEAD blob ${repository}@${digest}`);
    return true;
  }

  /**
   * Puts a blob into a repository unless it has it (a HEAD): mounted from `mountFrom`, another
   * repository of this registry, when the registry can; else a POST opens an upload and one PUT
   * sends it. `content` may be a function, called only when the bytes must be sent.
   */
  async pushBlob(
    repository: string,
    digest: string,
    content: Uint8Array | (() => Promise<Uint8Array>),
    options: { mountFrom?: string } = {},
  ): Promise<"present" | "mounted" | "uploaded"> {
    if (await this.hasBlob(repository, digest)) return "present";
    const from = options.mountFrom !== repository ? options.mountFrom : undefined;
    const scope = `repository:${repository}:pull,push` +
      (from ? ` repository:${from}:pull` : "");
    const query = from
      ? `?mount=${encodeURIComponent(digest)}&from=${encodeURIComponent(from)}`
      : "";
    const opened = await this.#send(
      `/v2/${repository}/blobs/uploads/${query}`,
      { method: "POST" },
      scope,
    );
    await opened.body?.cancel();
    if (from && opened.status === 201) return "mounted";
    if (opened.status !== 202) await this.#fail(opened, `POST upload ${repository}`);
    const bytes = typeof content === "function" ? await content() : content;
    const location = opened.headers.get("location");
    if (!location) throw new RegistryError(`${this.#registry}: upload without a Location`, 502);
    const url = new URL(location, this.#base);
    url.searchParams.set("digest", digest);
    const put = await this.#send(url.href, {
      method: "PUT",
      headers: {
        "content-type": "application/octet-stream",
        "content-length": String(bytes.length),
      },
      body: bytes as Uint8Array<ArrayBuffer>,
    }, scope);
    if (put.status !== 201) await this.#fail(put, `PUT blob ${repository}@${digest}`);
    await put.body?.cancel();
    return "uploaded";
  }

  /** Pushes a manifest or index under a tag or its digest; resolves its digest. */
  async putManifest(
    repository: string,
    reference: string,
    bytes: Uint8Array,
    mediaType: string,
  ): Promise<string> {
    const response = await this.#send(`/v2/${repository}/manifests/${reference}`, {
      method: "PUT",
      headers: { "content-type": mediaType },
      body: bytes as Uint8Array<ArrayBuffer>,
    }, `repository:${repository}:pull,push`);
    if (response.status !== 201) await this.#fail(response, `PUT manifest ${repository}`);
    await response.body?.cancel();
    const digest = sha256Digest(bytes);
    const reported = response.headers.get("docker-content-digest");
    if (reported && reported !== digest) {
      throw new Error(`${this.#registry} stored the manifest as ${reported}, expected ${digest}`);
    }
    return digest;
  }
}
