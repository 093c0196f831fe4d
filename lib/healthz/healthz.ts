/**
 * Health and readiness probes, served like kube-apiserver's own: `/healthz`,
 * `/readyz`, `/healthz/<check>`, `/readyz/<check>`, and `?verbose` to list every check.
 * Failing probes answer 500 and name the failing checks, but never say why: the probe server
 * is unauthenticated, and a reason can quote a server address or a configuration. As
 * controller-runtime's healthz does, the page reads `[-]<check> failed: reason withheld` and
 * the reason goes to the log.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import type { InformerHealth } from "../cache/informer.ts";

const logger = getLogger(["rudder", "healthz"]);

/** A check: resolves when healthy, throws (or rejects) with the reason when not. */
export type Checker = (request?: Request) => void | Promise<void>;

/** A named set of checks. */
export class Checks {
  readonly #checks = new Map<string, Checker>();
  readonly #kind: string;

  /** A set of checks called `kind` (`healthz` or `readyz`) in messages. */
  constructor(kind: string) {
    this.#kind = kind;
  }

  /** Adds a check; names are unique and may not contain `/`. */
  add(name: string, check: Checker): void {
    if (!name || name.includes("/")) {
      throw new Error(`invalid ${this.#kind} check name ${JSON.stringify(name)}`);
    }
    if (this.#checks.has(name)) {
      throw new Error(`a ${this.#kind} check named ${name} already exists`);
    }
    this.#checks.set(name, check);
  }

  /** Runs every check (or one) and reports each result. */
  async run(request?: Request, only?: string): Promise<{ name: string; error?: string }[]> {
    const names = only === undefined ? [...this.#checks.keys()] : [only];
    return await Promise.all(names.map(async (name) => {
      const check = this.#checks.get(name);
      if (!check) return { name, error: "no such check" };
      try {
        await check(request);
        return { name };
      } catch (err) {
        return { name, error: err instanceof Error ? err.message : String(err) };
      }
    }));
  }

  /** True when a check of this name exists. */
  has(name: string): boolean {
    return this.#checks.has(name);
  }
}

/** A check that always passes, like controller-runtime's `healthz.Ping`. */
export const ping: Checker = () => {};

/**
 * A readiness check over informers: every one has listed, and none is stuck. An informer is
 * stuck when its watch has kept failing for longer than its `unhealthyAfter` (it reports
 * {@linkcode InformerHealth.stuck}); a short backoff after one dropped connection does not make
 * a pod unready. Without a `stuck` report (health from elsewhere), any Backoff counts.
 *
 * @example
 * ```ts
 * import { informersReady } from "./healthz.ts";
 *
 * const check = informersReady(() => [
 *   { description: "ConfigMap in default", state: "Backoff", synced: true, stuck: true,
 *     lastError: "400 BadRequest", failingSince: Date.now() - 90_000, lists: 1, watches: 9 },
 * ]);
 * try {
 *   check();
 * } catch (err) {
 *   console.log(String(err)); // Error: ConfigMap in default: watch failing (400 BadRequest) for 90 s
 * }
 * ```
 */
export function informersReady(health: () => InformerHealth[]): Checker {
  return () => {
    const problems: string[] = [];
    for (const informer of health()) {
      if (!informer.synced) {
        const why = informer.lastError === undefined ? "" : ` (${informer.lastError})`;
        problems.push(`${informer.description} has not synced${why}`);
      } else if (informer.stuck ?? informer.state === "Backoff") {
        const since = informer.failingSince === undefined
          ? ""
          : ` for ${Math.round((Date.now() - informer.failingSince) / 1000)} s`;
        problems.push(
          `${informer.description}: watch failing (${informer.lastError ?? "unknown"})${since}`,
        );
      }
    }
    if (problems.length > 0) throw new Error(problems.join("; "));
  };
}

async function answer(
  checks: Checks,
  request: Request,
  only: string | undefined,
  verbose: boolean,
) {
  if (only !== undefined && !checks.has(only)) {
    return new Response(`no check named ${only}\n`, { status: 404 });
  }
  const results = await checks.run(request, only);
  const failed = results.filter((r) => r.error !== undefined);
  for (const { name, error } of failed) {
    logger.debug("Check {check} failed: {error}", { check: name, error });
  }
  const lines = results
    .filter((r) => verbose || r.error !== undefined)
    .map((r) => r.error === undefined ? `[+]${r.name} ok` : `[-]${r.name} failed: reason withheld`);
  if (failed.length === 0) {
    const body = verbose ? `${lines.join("\n")}\nok\n` : "ok\n";
    return new Response(body, { status: 200, headers: { "Content-Type": "text/plain" } });
  }
  return new Response(`${lines.join("\n")}\nhealth check failed\n`, {
    status: 500,
    headers: { "Content-Type": "text/plain" },
  });
}

/**
 * The probe endpoints as a web handler (`GET` and `HEAD`; anything else is 404). Failing checks
 * are named with `reason withheld`; their errors are logged (category `rudder.healthz`, debug)
 * instead of served. A plain handler, not a hono app: an operator that serves only its probes
 * and metrics then never loads hono (1.7–2.4 MiB resident, bench/README.md).
 *
 * @example
 * ```ts
 * import { Checks, healthApp } from "./healthz.ts";
 * import { ping } from "@rudder/operator/healthz";
 *
 * const healthz = new Checks("healthz");
 * healthz.add("ping", ping);
 * const app = healthApp(healthz, new Checks("readyz"));
 * const response = await app.request("/healthz");
 * console.log(response.status); // 200
 * ```
 */
export function healthApp(
  healthz: Checks,
  readyz: Checks,
): {
  fetch(request: Request): Response | Promise<Response>;
  request(path: string): Response | Promise<Response>;
} {
  const byPath = new Map([["/healthz", healthz], ["/readyz", readyz]]);
  const fetch = async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    const answered = request.method === "GET" || request.method === "HEAD"
      ? await route(byPath, request, url)
      : undefined;
    const response = answered ?? new Response("404 Not Found", {
      status: 404,
      headers: { "Content-Type": "text/plain; charset=UTF-8" },
    });
    return request.method === "HEAD" ? withoutBody(response) : response;
  };
  return {
    fetch,
    request: (path) =>
      fetch(new Request(/^https?:\/\//.test(path) ? path : new URL(path, "http://localhost"))),
  };
}

/** `/<probe>` and `/<probe>/<check>` (one path segment, URL-decoded); else undefined. */
function route(
  byPath: ReadonlyMap<string, Checks>,
  request: Request,
  url: URL,
): Promise<Response> | undefined {
  const path = url.pathname;
  const whole = byPath.get(path);
  if (whole) return answer(whole, request, undefined, url.searchParams.has("verbose"));
  const slash = path.indexOf("/", 1);
  const checks = slash > 0 ? byPath.get(path.slice(0, slash)) : undefined;
  const check = path.slice(slash + 1);
  if (!checks || !check || check.includes("/")) return undefined;
  let name: string;
  try {
    name = decodeURIComponent(check);
  } catch {
    name = check;
  }
  return answer(checks, request, name, true);
}

/** The answer to a `HEAD`: the `GET`'s status and headers. */
function withoutBody(response: Response): Response {
  void response.body?.cancel();
  return new Response(null, { status: response.status, headers: response.headers });
}
