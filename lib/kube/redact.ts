/**
 * Keeps credentials out of every message: the one place that strips user-info from URLs,
 * blanks known secrets and `Bearer`/`Basic` values in text, copies an error's `cause` chain
 * with its messages cleaned, and checks header values before a runtime can echo a bad one
 * (Deno's "Invalid header value" quotes it). Every error and log path in lib/kube goes through
 * it.
 *
 * @module
 */

import type { Credentials } from "./config/types.ts";

/** What a secret is replaced with. */
export const REDACTED = "[redacted]";

/** Secrets shorter than this are not searched for: they would blank ordinary words. */
const MIN_SECRET_LENGTH = 4;

/** How deep a `cause` chain is copied; deeper causes are dropped. */
const MAX_CAUSE_DEPTH = 8;

const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@"']*@/gi;
const AUTH_SCHEME_VALUE = /\b(Bearer|Basic)\s+[^\s"',;]+/gi;
/** A JSON Web Token (service account tokens, OIDC ID tokens): always a credential. */
const JWT = /\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g;

/**
 * `url` without its user-info: `https://user:pass@host:6443/x` becomes `https://host:6443/x`.
 * Text that is not a URL has anything before an `@` after `://` blanked instead.
 */
export function redactURL(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.username === "" && parsed.password === "") return url;
    parsed.username = "";
    parsed.password = "";
    return parsed.toString().replace(/\/$/, url.endsWith("/") ? "/" : "");
  } catch {
    return url.replace(URL_USERINFO, `$1${REDACTED}@`);
  }
}

/** The user name and password in `url`'s user-info, decoded; `undefined` without any. */
export function urlUserInfo(url: string): { username: string; password: string } | undefined {
  try {
    const parsed = new URL(url);
    if (parsed.username === "" && parsed.password === "") return undefined;
    return {
      username: decodeURIComponent(parsed.username),
      password: decodeURIComponent(parsed.password),
    };
  } catch {
    return undefined;
  }
}

/**
 * `text` with every secret of `secrets` replaced by `[redacted]`, URL user-info removed, the
 * value after `Bearer` or `Basic` blanked and anything shaped like a JSON Web Token blanked.
 */
export function redactText(text: string, secrets: Iterable<string> = []): string {
  let result = text;
  // Longest first, so a secret that contains another is blanked whole.
  const sorted = [...new Set(secrets)].filter((secret) => secret.length >= MIN_SECRET_LENGTH)
    .sort((a, b) => b.length - a.length);
  for (const secret of sorted) result = result.split(secret).join(REDACTED);
  return result.replace(URL_USERINFO, `$1${REDACTED}@`)
    .replace(AUTH_SCHEME_VALUE, `$1 ${REDACTED}`)
    .replace(JWT, REDACTED);
}

/**
 * The strings of `credentials` that must never appear in a message: each header value and
 * the part after its scheme (`Bearer <token>`), and the client key.
 */
export function secretsOf(credentials: Credentials | undefined): string[] {
  const secrets: string[] = [];
  for (const value of Object.values(credentials?.headers ?? {})) {
    secrets.push(value);
    const space = value.indexOf(" ");
    if (space > 0) secrets.push(value.slice(space + 1).trim());
  }
  const key = credentials?.clientCertificate?.key;
  if (key) {
    secrets.push(key);
    // A runtime may quote one line of the key's base64.
    for (const line of key.split("\n")) if (!line.startsWith("-----")) secrets.push(line.trim());
  }
  return secrets;
}

/**
 * The secrets in a URL's user-info (the password, and the user name with it), for
 * {@linkcode redactText}.
 */
export function secretsOfURL(url: string | undefined): string[] {
  if (!url) return [];
  const info = urlUserInfo(url);
  if (!info) return [];
  const secrets = [info.password, encodeURIComponent(info.password)];
  if (info.username) secrets.push(`${info.username}:${info.password}`);
  return secrets.filter((secret) => secret !== "");
}

/**
 * A copy of `err` and its `cause` chain whose messages went through {@linkcode redactText}.
 * Each copy keeps the original's `name` and `code`, and has no stack: a stack repeats the
 * message and would carry the secret along.
 */
export function redactError(err: unknown, secrets: Iterable<string> = [], depth = 0): unknown {
  const list = [...secrets];
  if (!(err instanceof Error)) {
    return typeof err === "string" ? redactText(err, list) : err;
  }
  const cause = depth < MAX_CAUSE_DEPTH && err.cause !== undefined
    ? redactError(err.cause, list, depth + 1)
    : undefined;
  const copy = new Error(
    redactText(err.message, list),
    cause === undefined ? undefined : { cause },
  );
  copy.name = err.name;
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string" || typeof code === "number") {
    (copy as { code?: unknown }).code = code;
  }
  copy.stack = `${copy.name}: ${copy.message}`;
  return copy;
}

/**
 * True when `value` may be sent as an HTTP header value: tab, visible ASCII, space and
 * Latin-1 only (no control characters, no line breaks), the rule runtimes enforce.
 */
export function isValidHeaderValue(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code === 0x09) continue;
    if (code < 0x20 || code === 0x7f || code > 0xff) return false;
  }
  return true;
}
