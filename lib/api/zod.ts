/**
 * The zod that Rudder's resource schemas are built with. A project made by `rudder init --local`
 * maps its `zod` import here, so it declares its schemas with the very copy that
 * `defineResource` introspects and needs no node_modules of its own. (Not a subpath of the
 * package: a published project gets the same zod from npm, at the version Rudder pins.)
 *
 * @module
 */

export { z } from "zod";
