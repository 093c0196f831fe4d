/**
 * Bind addresses: what `host:port`, `:port` and `port` mean, and the URL a server on one is
 * reached at.
 *
 * @module
 */

/**
 * Splits `host:port`, `:port`, `port` or `[::1]:port`; an empty host is every interface
 * (`0.0.0.0`).
 *
 * @example
 * ```ts
 * import { parseAddress } from "./address.ts";
 *
 * console.log(parseAddress(":8080")); // { hostname: "0.0.0.0", port: 8080 }
 * ```
 */
export function parseAddress(address: string): { hostname: string; port: number } {
  const match = address.match(/^(?:(?:\[([^\]]+)\]|([^:\[\]]*)):)?(\d+)$/);
  if (!match) {
    throw new Error(
      `invalid bind address ${JSON.stringify(address)}: expected host:port, :port or port`,
    );
  }
  const hostname = match[1] ?? (match[2] || "0.0.0.0");
  const port = Number(match[3]);
  if (port > 65535) {
    throw new Error(`invalid bind address ${JSON.stringify(address)}: port too large`);
  }
  return { hostname, port };
}

/** Whether `address` names no host (`:port` or `port`): every interface, IPv4 and IPv6. */
export function namesNoHost(address: string): boolean {
  return /^:?\d+$/.test(address);
}

/** `http(s)://host:port`, with a loopback host for a server that listens on every interface. */
export function urlOf(hostname: string, port: number, tls: boolean): string {
  const host = hostname === "0.0.0.0" || hostname === "::" ? "127.0.0.1" : hostname;
  const shown = host.includes(":") ? `[${host}]` : host;
  return `${tls ? "https" : "http"}://${shown}:${port}`;
}
