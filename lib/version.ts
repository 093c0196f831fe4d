/**
 * The version of this package. A unit test keeps it equal to `version` in deno.json and
 * package.json, so it can be used without reading either file at run time.
 *
 * @module
 */

/** Rudder's own version, sent in the `User-Agent` header as `rudder/<version>`. */
export const VERSION = "0.1.0";
