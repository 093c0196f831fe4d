/**
 * Registry credentials from the Docker config file, as `docker login` leaves them:
 * `$DOCKER_CONFIG/config.json` or `~/.docker/config.json`, its `auths` (a base64 `auth` or
 * `username`/`password`), and `credHelpers`/`credsStore` (the `docker-credential-<name> get`
 * programs). Credentials are only ever sent to the registry they belong to, and never logged.
 *
 * @module
 */

import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/** A user name and password (or token) for basic authentication. */
export interface Credentials {
  /** The user name (`<token>` for identity tokens). */
  username: string;
  /** The password or token. Never logged. */
  password: string;
}

/** Looks up the credentials of a registry host; undefined when there are none. */
export type CredentialSource = (registry: string) => Credentials | undefined;

/** The Docker config file: `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`. */
export function dockerConfigPath(env: Record<string, string | undefined>): string {
  return join(env.DOCKER_CONFIG ?? join(env.HOME ?? homedir(), ".docker"), "config.json");
}

/** The parts of the Docker config file that hold credentials. */
export interface DockerConfig {
  /** Credentials by registry: base64 `auth` (`user:password`), or `username` and `password`. */
  auths?: Record<string, { auth?: string; username?: string; password?: string }>;
  /** The credential helper (`docker-credential-<name>`) of each registry. */
  credHelpers?: Record<string, string>;
  /** The credential helper of every other registry. */
  credsStore?: string;
}

/** The registry host a key of `auths` names: `https://index.docker.io/v1/` → `docker.io`. */
export function normalizeRegistryKey(key: string): string {
  const host = key.replace(/^[a-z]+:\/\//, "").replace(/\/.*$/, "");
  return host === "index.docker.io" || host === "registry-1.docker.io" ? "docker.io" : host;
}

/** The key Docker uses for a registry in `auths` and when it asks a helper. */
function helperServerName(registry: string): string {
  return registry === "docker.io" ? "https://index.docker.io/v1/" : registry;
}

/** Runs `docker-credential-<helper> get`; undefined when it knows nothing of the registry. */
function fromHelper(helper: string, registry: string): Credentials | undefined {
  const result = spawnSync(`docker-credential-${helper}`, ["get"], {
    input: helperServerName(registry),
    encoding: "utf8",
    timeout: 30_000,
  });
  if (result.error || result.status !== 0) {
    // Its output may hold a secret; say only which helper failed.
    if (/credentials not found/i.test(result.stdout ?? "")) return undefined;
    throw new Error(
      `docker-credential-${helper} get failed for ${registry}` +
        (result.error ? `: ${result.error.message}` : ` (exit ${result.status})`),
    );
  }
  const parsed = JSON.parse(result.stdout) as { Username?: string; Secret?: string };
  if (!parsed.Secret) return undefined;
  return { username: parsed.Username ?? "", password: parsed.Secret };
}

/** Credentials of `registry` from a parsed Docker config. */
export function credentialsFromConfig(
  config: DockerConfig,
  registry: string,
  runHelper: (helper: string, registry: string) => Credentials | undefined = fromHelper,
): Credentials | undefined {
  const host = normalizeRegistryKey(registry);
  const helper = Object.entries(config.credHelpers ?? {})
    .find(([key]) => normalizeRegistryKey(key) === host)?.[1];
  if (helper) return runHelper(helper, host);
  const entry = Object.entries(config.auths ?? {})
    .find(([key]) => normalizeRegistryKey(key) === host)?.[1];
  if (entry?.auth) {
    const decoded = atob(entry.auth);
    const colon = decoded.indexOf(":");
    if (colon === -1) throw new Error(`the Docker config's auth for ${host} is not user:password`);
    return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  }
  if (entry?.username && entry.password) {
    return { username: entry.username, password: entry.password };
  }
  if (config.credsStore) return runHelper(config.credsStore, host);
  return undefined;
}

/** A {@linkcode CredentialSource} that reads the Docker config file (once) on first use. */
export function dockerConfigCredentials(
  env: Record<string, string | undefined>,
): CredentialSource {
  let config: DockerConfig | undefined;
  return (registry) => {
    if (!config) {
      const path = dockerConfigPath(env);
      try {
        config = existsSync(path) ? JSON.parse(readFileSync(path, "utf8")) : {};
      } catch {
        // The parser's message may quote the file, secrets and all.
        throw new Error(`${path} is not valid JSON`);
      }
    }
    return credentialsFromConfig(config!, registry);
  };
}
