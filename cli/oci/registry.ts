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
import { isLoopbackRegistry, manifestName } from "./reference.ts";

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
  /** The HTTP status. */
  readonly status: number;

  /** `status` is the HTTP status. */
  constructor(message: string, status: number) {
    super(message);
    this.status = status;
    this.name = "RegistryError";
  }
}

/**
 * A registry that gave no answer: refused, reset, cut off mid-upload, or a TLS failure. The
 * message names the registry, the request and the runtime's reason with its causes
 * (`fetch failed: Connection reset by peer`), which a bare `fetch failed` leaves in `cause`.
 */
export class RegistryConnectionError extends Error {
  /** The registry's host (and port). */
  readonly registry: string;

  /** `registry` is the host (and port); `cause` the runtime's error. */
  constructor(message: string, registry: string, options?: { cause?: unknown }) {
    super(message, options);
    this.registry = registry;
    this.name = "RegistryConnectionError";
  }
}

/** How long {@linkcode RegistryClient.check} waits for `/v2/`: a registry answers it at once. */
export const REGISTRY_CHECK_TIMEOUT_MS = 10_000;

/** A TLS failure that a plain-HTTP server answering an HTTPS client causes, on Deno and Bun. */
const PLAIN_HTTP_SYMPTOM =
  /EPROTO|InvalidContentType|corrupt message|wrong version number|TLS|SSL|handshake/i;

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
      return await this.#request(url, {
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
      response = await this.#request(new URL(location, url), {
        method: init.method,
        redirect: "manual",
      });
    }
    return response;
  }

  /** `fetch`, with a failure that got no answer turned into a {@linkcode RegistryConnectionError}. */
  async #request(url: string | URL, init: RequestInit): Promise<Response> {
    try {
      return await this.#fetch(url, init);
    } catch (err) {
      throw this.#unreachable(err, `${init.method ?? "GET"} ${new URL(url).pathname}`);
    }
  }

  /** The body of an answer; a connection cut while it arrives is named like one before it. */
  async #read(response: Response, what: string): Promise<Uint8Array> {
    try {
      return new Uint8Array(await response.arrayBuffer());
    } catch (err) {
      throw this.#unreachable(err, what);
    }
  }

  #unreachable(err: unknown, what: string): RegistryConnectionError {
    const timedOut = err instanceof Error && err.name === "TimeoutError";
    let message = `cannot reach the registry ${this.#registry} (${what}): ` +
      (timedOut ? "no answer in time" : messageWithCauses(err))
        // Deno's hyper layers repeat the URL, which the message already names.
        .replace(/error sending request for url \([^)]*\): (client error \(\w+\): )?/, "");
    if (this.#base.startsWith("https:") && isLoopbackRegistry(this.#registry)) {
      if (PLAIN_HTTP_SYMPTOM.test(message)) {
        message += `; a registry on this machine that speaks plain HTTP needs --insecure-registry`;
      }
    }
    return new RegistryConnectionError(message, this.#registry, { cause: err });
  }

  /**
   * Checks, before anything is built, that the registry answers `GET /v2/` within `timeoutMs`
   * and that the credentials (if the registry asks for any) are accepted for `actions` on
   * `repository`. A registry on loopback that answers plain HTTP where HTTPS was tried fails
   * with a message that says to add `--insecure-registry`.
   */
  async check(
    repository: string,
    actions: "pull" | "pull,push",
    timeoutMs = REGISTRY_CHECK_TIMEOUT_MS,
  ): Promise<void> {
    const scope = `repository:${repository}:${actions}`;
    let response: Response;
    try {
      response = await this.#fetch(`${this.#base}/v2/`, {
        redirect: "manual",
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      if (this.#base.startsWith("https:") && isLoopbackRegistry(this.#registry)) {
        if (await this.#answersPlainHttp(timeoutMs)) {
          throw new RegistryConnectionError(
            `the registry ${this.#registry} speaks plain HTTP, not HTTPS; add ` +
              `--insecure-registry (allowed for registries on this machine)`,
            this.#registry,
            { cause: err },
          );
        }
      }
      const unreachable = this.#unreachable(err, "GET /v2/");
      if (err instanceof Error && err.name === "TimeoutError") {
        unreachable.message = `cannot reach the registry ${this.#registry} (GET /v2/): ` +
          `no answer within ${timeoutMs / 1000} s`;
      }
      throw unreachable;
    }
    await response.body?.cancel();
    if (response.status === 401) {
      const header = response.headers.get("www-authenticate");
      if (!header) throw new RegistryError(`${this.#registry}: 401 without a challenge`, 401);
      const challenge = parseChallenge(header);
      const authorization = await this.#answer(challenge, scope);
      this.#authorization.set(scope, authorization);
      if (challenge.scheme === "basic") {
        // A token service refuses bad credentials itself; basic ones are tried on /v2/.
        const again = await this.#request(`${this.#base}/v2/`, {
          headers: { authorization },
          signal: AbortSignal.timeout(timeoutMs),
        });
        await again.body?.cancel();
        if (again.status === 401) {
          throw new RegistryError(
            `${this.#registry} refused the user name and password of the Docker config`,
            401,
          );
        }
      }
      return;
    }
    if (!response.ok) {
      throw new RegistryError(
        `${this.#registry} is not an OCI registry or is failing: GET /v2/ answered ` +
          `${response.status}`,
        response.status,
      );
    }
  }

  /** Whether `http://<registry>/v2/` answers at all. */
  async #answersPlainHttp(timeoutMs: number): Promise<boolean> {
    try {
      const response = await this.#fetch(`http://${this.#registry}/v2/`, {
        redirect: "manual",
        signal: AbortSignal.timeout(timeoutMs),
      });
      await response.body?.cancel();
      return true;
    } catch {
      return false;
    }
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
    const response = await this.#request(realm, {
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
    if (!response.ok) {
      await this.#fail(response, `GET manifest ${manifestName(repository, reference)}`);
    }
    const bytes = await this.#read(response, `GET manifest ${manifestName(repository, reference)}`);
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
    const bytes = await this.#read(response, `GET blob ${repository}@${digest}`);
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
    if (response.status !== 201) {
      await this.#fail(response, `PUT manifest ${manifestName(repository, reference)}`);
    }
    await response.body?.cancel();
    const digest = sha256Digest(bytes);
    const reported = response.headers.get("docker-content-digest");
    if (reported && reported !== digest) {
      throw new Error(`${this.#registry} stored the manifest as ${reported}, expected ${digest}`);
    }
    return digest;
  }
}

/** How many causes deep messageWithCauses reads. */
const MAX_CAUSES = 8;

/**
 * The messages of an error and its causes joined with ": ", each said once, e.g. `fetch failed:
 * connect ECONNREFUSED 127.0.0.1:5000`: for a runtime's error whose message alone (`fetch
 * failed`) leaves the reason in its cause.
 */
function messageWithCauses(err: unknown): string {
  const parts: string[] = [];
  let current: unknown = err;
  for (let depth = 0; current !== undefined && current !== null; depth++) {
    const message = current instanceof Error ? current.message : String(current);
    // A cause's message often repeats its wrapper's ("fetch failed: x" caused by "x").
    if (message !== "" && !parts.some((part) => part.includes(message))) parts.push(message);
    if (!(current instanceof Error) || depth >= MAX_CAUSES) break;
    current = current.cause;
  }
  return parts.join(": ");
}
