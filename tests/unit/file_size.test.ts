// Files in lib/ stay small enough to read in one sitting: none over 900 lines, generated code
// aside. A file that grows past it is split along its seams (see lib/testing/fake_client/).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const MAX_LINES = 900;

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (name !== "generated") sourceFiles(path, out);
    } else if (path.endsWith(".ts")) out.push(path);
  }
  return out;
}

/** The files of `files` longer than `max` lines, as `path (N lines)`. */
function oversized(files: readonly string[], max: number): string[] {
  return files.flatMap((file) => {
    const lines = readFileSync(file, "utf8").split("\n").length - 1;
    return lines > max ? [`${relative(ROOT, file)} (${lines} lines)`] : [];
  });
}

describe("file size", () => {
  it(`keeps every file in lib/ outside generated code to ${MAX_LINES} lines`, () => {
    const files = sourceFiles(join(ROOT, "lib"));
    assert.ok(files.length > 50, `only ${files.length} files found under lib/`);
    assert.deepEqual(oversized(files, MAX_LINES), []);
  });

  it("counts lines as wc -l does, so a file one line over is caught", () => {
    const file = join(ROOT, "lib", "version.ts");
    const lines = readFileSync(file, "utf8").split("\n").length - 1;
    assert.deepEqual(oversized([file], lines), []);
    assert.equal(oversized([file], lines - 1).length, 1);
  });
});
