// Preloaded by `bun test` (bunfig.toml), never by Deno (deno.json excludes it). Bun runs
// node:test's before and after hooks under bun test's default timeout, 5 s, whatever timeout a
// hook asks for, and a hook that starts a control plane takes longer on a busy machine. This
// makes the default of the suite ours rather than the runtime's: longer than Environment's own
// start timeout (2 min), so Environment reports a slow start itself instead of being cut off.
import { setDefaultTimeout } from "bun:test";

setDefaultTimeout(300_000);
