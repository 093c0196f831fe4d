// The rudder command line itself: help for every command, and usage errors (an unknown command
// or flag, a missing or stray argument, a bad value) that exit 2 and name what was wrong.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { tmpdir } from "node:os";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { COMMANDS } from "../../cli/main.ts";
import { VERSION } from "../../lib/version.ts";
import { type MainRun, runMain } from "../support/cli_main.ts";

/** Runs the CLI in-process and collects what it writes. */
function rudder(...args: string[]): Promise<MainRun> {
  return runMain(args, tmpdir());
}

describe("rudder", () => {
  it("lists its commands with --help and exits 0", async () => {
    const { code, out } = await rudder("--help");
    assert.equal(code, 0);
    for (const name of ["init", "manifests", "build", "dev", "envtest"]) {
      assert.match(out, new RegExp(`^  ${name} `, "m"), `${name} is listed`);
    }
    assert.match(out, /Examples:\n {2}rudder init /);
  });

  it("prints its help on stderr and exits 2 without a command", async () => {
    const { code, out, err } = await rudder();
    assert.equal(code, 2);
    assert.equal(out, "");
    assert.match(err, /Usage: rudder <command>/);
  });

  it("exits 2 on an unknown command, naming it", async () => {
    const { code, err } = await rudder("deploy", "--now");
    assert.equal(code, 2);
    assert.match(err, /unknown command "deploy"/);
    assert.match(err, /Commands: init, create, manifests, build, dev, envtest/);
  });

  it("exits 2 on an unknown flag before the command, naming it", async () => {
    const { code, err } = await rudder("--verbose", "build");
    assert.equal(code, 2);
    assert.match(err, /unknown flag --verbose/);
  });

  it("prints its version", async () => {
    assert.deepEqual(await rudder("--version"), { code: 0, out: `${VERSION}\n`, err: "" });
  });

  it("prints a command's help with `help <command>`", async () => {
    const { code, out } = await rudder("help", "build");
    assert.equal(code, 0);
    assert.match(out, /^rudder build: /);
    assert.equal((await rudder("help", "nope")).code, 2);
  });

  it("sets the process's exit code: 2 for an unknown command", () => {
    const cli = fileURLToPath(new URL("../../cli/main.ts", import.meta.url));
    const args = "Deno" in globalThis ? ["run", "-A", cli, "frobnicate"] : [cli, "frobnicate"];
    const result = spawnSync(process.execPath, args, { encoding: "utf8", cwd: tmpdir() });
    assert.equal(result.status, 2, result.stderr);
    assert.match(result.stderr, /unknown command "frobnicate"/);
  });
});

describe("every command", () => {
  for (const [name, { spec }] of Object.entries(COMMANDS)) {
    it(`${name}: --help shows its flags and an example, and exits 0`, async () => {
      const { code, out, err } = await rudder(name, "--help");
      assert.equal(code, 0, err);
      assert.ok(out.startsWith(`rudder ${name}: ${spec.summary}\n`), out);
      assert.match(out, new RegExp(`Usage: rudder ${name}`));
      for (const flag of Object.keys(spec.flags)) assert.match(out, new RegExp(`--${flag}\\b`));
      assert.match(out, new RegExp(`Examples:\\n  rudder ${name}`));
      assert.deepEqual(await rudder(name, "-h"), { code, out, err });
    });

    it(`${name}: an unknown flag exits 2 and names it`, async () => {
      const { code, out, err } = await rudder(name, "--frobnicate");
      assert.equal(code, 2);
      assert.equal(out, "");
      assert.match(err, new RegExp(`rudder ${name}: unknown flag --frobnicate`));
      assert.match(err, new RegExp(`Run "rudder ${name} --help"`));
    });
  }
});

describe("usage errors", () => {
  it("a flag without its value", async () => {
    const { code, err } = await rudder("build", "--out");
    assert.equal(code, 2);
    assert.match(err, /flag --out needs a value/);
  });

  it("a missing positional argument", async () => {
    const { code, err } = await rudder("init");
    assert.equal(code, 2);
    assert.match(err, /missing argument <dir>/);
  });

  it("a stray positional argument", async () => {
    const { code, err } = await rudder("manifests", "config/");
    assert.equal(code, 2);
    assert.match(err, /unexpected argument "config\/"/);
  });

  it("a value outside the choices", async () => {
    const { code, err } = await rudder("build", "--runtime", "python");
    assert.equal(code, 2);
    assert.match(err, /--runtime must be one of deno, bun, node \(got "python"\)/);
  });

  it("an unknown build target", async () => {
    const { code, err } = await rudder("build", "--target", "riscv64-unknown-linux-gnu");
    assert.equal(code, 2);
    assert.match(err, /unknown --target "riscv64-unknown-linux-gnu"/);
  });

  it("an unknown envtest action", async () => {
    const { code, err } = await rudder("envtest", "stop");
    assert.equal(code, 2);
    assert.match(err, /unknown action "stop"/);
  });

  it("names that Kubernetes would refuse", async () => {
    const cases: [string[], RegExp][] = [
      [["--kind", "memcached"], /--kind must be UpperCamelCase/],
      [["--group", "example"], /--group must be a DNS subdomain with a dot/],
      [["--version", "1.0"], /--version must be a Kubernetes API version/],
      [["--name", "My_Operator"], /--name must be a DNS label/],
    ];
    for (const [flags, message] of cases) {
      const { code, err } = await rudder("init", "new-operator", ...flags);
      assert.equal(code, 2, flags.join(" "));
      assert.match(err, message);
    }
  });

  it("a --local path that is not a Rudder checkout", async () => {
    const { code, err } = await rudder("init", "new-operator", "--local", tmpdir());
    assert.equal(code, 2);
    assert.match(err, /is not a Rudder checkout: it lacks mod\.ts/);
  });

  it("is told apart from a failure, which exits 1", async () => {
    const { code, err } = await rudder("manifests", "--dir", "/nonexistent/project");
    assert.equal(code, 1);
    assert.match(err, /rudder manifests: \/nonexistent\/project is not a directory/);
  });
});
