/**
 * Authentication and authorisation of scrapers by the API server, as controller-runtime's
 * `filters.WithAuthenticationAndAuthorization`: the bearer token of each request is checked with
 * a TokenReview, and the user it names with a SubjectAccessReview for the request's
 * non-resource URL and verb (`get` on `/metrics`). Decisions are remembered briefly so that
 * scrapes do not hammer the API server.
 *
 * The manager's client needs `create` on `tokenreviews` (authentication.k8s.io) and
 * `subjectaccessreviews` (authorization.k8s.io); a scraper needs a ClusterRole allowing `get` on
 * the non-resource URL `/metrics`.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import type { RestClient } from "../kube/rest.ts";
import { type Clock, realClock } from "../util/clock.ts";

const logger = getLogger(["rudder", "metrics", "auth"]);

/**
 * Default milliseconds a TokenReview or SubjectAccessReview answer is remembered: short, so a
 * revoked token or role stops working soon. (controller-runtime keeps a token 1 min, an allowed
 * access 5 min and a denied one 30 s.)
 *
 * @example
 * ```ts
 * import { DEFAULT_AUTH_CACHE_TTL_MS } from "./filters.ts";
 *
 * const cacheTTL = 3 * DEFAULT_AUTH_CACHE_TTL_MS; // 30 s
 * ```
 */
export const DEFAULT_AUTH_CACHE_TTL_MS = 10_000;
/** Decisions remembered at most, per kind; the oldest go first. */
const MAX_CACHE_ENTRIES = 4096;

/**
 * Options of {@linkcode withAuthenticationAndAuthorization}.
 *
 * @example
 * ```ts
 * import { type AuthenticationAndAuthorizationOptions } from "./filters.ts";
 * import { loadConfig } from "@rudder/operator";
 * import { RestClient } from "@rudder/operator/kube";
 *
 * const options: AuthenticationAndAuthorizationOptions = {
 *   rest: new RestClient(await loadConfig()),
 *   cacheTTL: 30_000,
 * };
 * ```
 */
export interface AuthenticationAndAuthorizationOptions {
  /** Client of the API server that reviews tokens and access (the manager's). */
  rest: RestClient;
  /**
   * Milliseconds an answer of the API server is remembered, for a token and for a user's access
   * alike; default {@linkcode DEFAULT_AUTH_CACHE_TTL_MS}, `0` asks every time. Failures to ask are
   * never remembered.
   */
  cacheTTL?: number;
  /** What `cacheTTL` is measured on (default the process's clock); tests pass a `FakeClock`. */
  clock?: Clock;
}

/**
 * Something that answers HTTP requests: what `Deno.serve`, `Bun.serve` and hono's `app.fetch`
 * and `app.mount` work with.
 *
 * @example
 * ```ts
 * import type { FetchHandler } from "./filters.ts";
 *
 * const hello: FetchHandler = () => new Response("hello");
 * ```
 */
export type FetchHandler = (request: Request) => Response | Promise<Response>;

/**
 * Wraps a handler with a check that runs before it (controller-runtime's `metricsserver.Filter`).
 *
 * @example
 * ```ts
 * import type { RequestFilter } from "./filters.ts";
 *
 * const onlyGet: RequestFilter = (next) => (request) =>
 *   request.method === "GET" ? next(request) : new Response("", { status: 405 });
 * ```
 */
export type RequestFilter = (handler: FetchHandler) => FetchHandler;

/** The user a TokenReview names. */
interface UserInfo {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

interface TokenReview {
  status?: { authenticated?: boolean; user?: UserInfo; error?: string };
}

interface SubjectAccessReview {
  status?: { allowed?: boolean; denied?: boolean; reason?: string; evaluationError?: string };
}

/**
 * Answers remembered for `ttl` milliseconds, at most `maxEntries` of them. Asking for a key
 * that is being computed waits for that computation instead of starting another; a computation
 * that fails is forgotten at once.
 */
export class DecisionCache<V> {
  readonly #entries = new Map<string, { value: Promise<V>; expires: number }>();

  readonly ttl: number;
  readonly maxEntries: number;
  readonly now: () => number;

  constructor(
    ttl: number,
    maxEntries: number = MAX_CACHE_ENTRIES,
    now: () => number = () => performance.now(),
  ) {
    this.ttl = ttl;
    this.maxEntries = maxEntries;
    this.now = now;
  }

  /** The remembered answer for `key`, or the one `compute` gives (then remembered). */
  get(key: string, compute: () => Promise<V>): Promise<V> {
    const now = this.now();
    const hit = this.#entries.get(key);
    if (hit && hit.expires > now) return hit.value;
    if (hit) this.#entries.delete(key);
    const value = compute();
    if (this.ttl <= 0) return value;
    while (this.#entries.size >= this.maxEntries) {
      this.#entries.delete(this.#entries.keys().next().value!);
    }
    const entry = { value, expires: now + this.ttl };
    this.#entries.set(key, entry);
    value.catch(() => {
      if (this.#entries.get(key) === entry) this.#entries.delete(key);
    });
    return value;
  }

  /** How many answers are remembered (or being computed). */
  get size(): number {
    return this.#entries.size;
  }
}

/** The token of an `Authorization: Bearer <token>` header, as Kubernetes reads it. */
function bearerToken(header: string | undefined): string | undefined {
  const [scheme, token] = (header ?? "").trim().split(/\s+/);
  return scheme?.toLowerCase() === "bearer" && token ? token : undefined;
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** A plain-text answer, as Go's `http.Error` writes one. */
function httpError(message: string, status: number): Response {
  return new Response(`${message}\n`, {
    status,
    headers: {
      "Content-Type": "text/plain; charset=utf-8",
      "X-Content-Type-Options": "nosniff",
    },
  });
}

/**
 * A {@linkcode RequestFilter} that passes a request on only when the API server authenticates its
 * bearer token (TokenReview) and authorises the user for the request's path and lower-cased
 * method as a non-resource URL (SubjectAccessReview): 401 without a token or with one the API
 * server does not accept, 403 when the user may not, 500 when the API server cannot be asked.
 *
 * @example Protect a handler of your own
 * ```ts
 * import { withAuthenticationAndAuthorization } from "./filters.ts";
 * import { loadConfig } from "@rudder/operator";
 * import { RestClient } from "@rudder/operator/kube";
 *
 * const secure = withAuthenticationAndAuthorization({ rest: new RestClient(await loadConfig()) });
 * const handler = secure(() => new Response("debug data"));
 * Deno.serve({ port: 8443 }, handler);
 * ```
 */
export function withAuthenticationAndAuthorization(
  options: AuthenticationAndAuthorizationOptions,
): RequestFilter {
  const ttl = options.cacheTTL ?? DEFAULT_AUTH_CACHE_TTL_MS;
  const clock = options.clock ?? realClock;
  const now = () => clock.now();
  const tokens = new DecisionCache<UserInfo | undefined>(ttl, MAX_CACHE_ENTRIES, now);
  const access = new DecisionCache<boolean>(ttl, MAX_CACHE_ENTRIES, now);
  const { rest } = options;

  const authenticate = async (token: string) =>
    tokens.get(await sha256(token), async () => {
      const review = await rest.request<TokenReview>({
        method: "POST",
        path: "/apis/authentication.k8s.io/v1/tokenreviews",
        body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token } },
      });
      const status = review?.status;
      return status?.authenticated && status.user?.username ? status.user : undefined;
    });

  const authorize = (user: UserInfo, verb: string, path: string) =>
    access.get(
      JSON.stringify([user.username, user.uid, user.groups, user.extra, verb, path]),
      async () => {
        const review = await rest.request<SubjectAccessReview>({
          method: "POST",
          path: "/apis/authorization.k8s.io/v1/subjectaccessreviews",
          body: {
            apiVersion: "authorization.k8s.io/v1",
            kind: "SubjectAccessReview",
            spec: {
              user: user.username,
              uid: user.uid,
              groups: user.groups,
              extra: user.extra,
              nonResourceAttributes: { path, verb },
            },
          },
        });
        return review?.status?.allowed === true && review.status.denied !== true;
      },
    );

  return (handler) => async (request) => {
    const path = new URL(request.url).pathname;
    const token = bearerToken(request.headers.get("Authorization") ?? undefined);
    let user: UserInfo | undefined;
    if (token) {
      try {
        user = await authenticate(token);
      } catch (err) {
        logger.error("Authentication failed: {error}", { error: err });
        return httpError("Authentication failed", 500);
      }
    }
    if (!user) {
      logger.debug("Unauthenticated request to {path}", { path });
      return httpError("Unauthorized", 401);
    }
    const verb = request.method.toLowerCase();
    let allowed: boolean;
    try {
      allowed = await authorize(user, verb, path);
    } catch (err) {
      logger.error("Authorization for user {user} failed: {error}", {
        user: user.username,
        error: err,
      });
      return httpError(`Authorization for user ${user.username} failed`, 500);
    }
    if (!allowed) {
      logger.debug("Authorization denied for user {user}: {verb} {path}", {
        user: user.username,
        verb,
        path,
      });
      return httpError(`Authorization denied for user ${user.username}`, 403);
    }
    return await handler(request);
  };
}
