/**
 * The kinds a project already declares, read from its api modules: what `rudder create api`
 * must not add twice and what `rudder create webhook` gives webhooks to.
 *
 * @module
 */

import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** A kind the project already has: its name, api module, group and version. */
export interface ExistingKind {
  kind: string;
  file: string;
  group: string;
  version: string;
}

/** The kinds declared with `defineResource({...})` in the project's api modules. */
export function existingKinds(dir: string, apiModules: string[]): ExistingKind[] {
  const kinds: ExistingKind[] = [];
  for (const file of apiModules) {
    const path = join(dir, file);
    if (!existsSync(path)) continue;
    const source = readFileSync(path, "utf8");
    for (const match of source.matchAll(/defineResource\(\{([^]*?)\n\}\)/g)) {
      const field = (name: string) => match[1].match(new RegExp(`\\b${name}:\\s*"([^"]+)"`))?.[1];
      const kind = field("kind");
      const group = field("group");
      const version = field("version");
      if (kind && group && version) kinds.push({ kind, file, group, version });
    }
  }
  return kinds;
}
