// `rudder create webhook` on projects made by `rudder init` and `rudder create api`: the kind's
// webhook module and test, their registration in main.ts's setup, and a project without webhooks
// turned into what `rudder init --webhooks` writes.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import process from "node:process";
import { spawnSync } from "node:child_process";
import {
  registerWebhook,
  withReplicasField,
  withWebhookPermissions,
} from "../../cli/create_webhook.ts";
import { DEPENDENCY_VERSIONS } from "../../cli/init.ts";
import { runtimeExecutable } from "../../cli/project.ts";
import { scaffold, type ScaffoldOptions, webhookFiles } from "../../cli/templates.ts";
import { type MainRun, MEMCACHED, runMain, useScratch } from "../support/cli_main.ts";

const base = MEMCACHED;
const T = { timeout: 30_000 };
const scratch = useScratch("rudder-create-webhook-test-");

function rudder(cwd: string, ...args: string[]): Promise<MainRun> {
  return runMain(args, cwd, process.env);
}

/** A fresh scaffold on disk (nothing here runs it). */
function project(name: string, options: ScaffoldOptions = base): string {
  const dir = join(scratch(), name);
  for (const [path, content] of scaffold(options, DEPENDENCY_VERSIONS)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  return dir;
}

/** Every file under `dir`, by relative path. */
function tree(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (at: string) => {
    for (const entry of readdirSync(at).sort()) {
      const path = join(at, entry);
      if (statSync(path).isDirectory()) walk(path);
      else files.set(relative(dir, path), readFileSync(path, "utf8"));
    }
  };
  walk(dir);
  return files;
}

const read = (dir: string, path: string) => readFileSync(join(dir, path), "utf8");

describe("rudder create webhook", () => {
  it("is in create's help, with its flags and an example", T, async () => {
    const result = await rudder(scratch(), "create", "--help");
    assert.equal(result.code, 0);
    assert.match(result.out, /Usage: rudder create <api\|webhook> \[flags\]/);
    assert.match(result.out, /--defaulting +webhook: a defaulting \(mutating\) webhook/);
    assert.match(result.out, /--validation +webhook: a validating webhook/);
    assert.match(result.out, /rudder create webhook --kind MemcachedBackup/);
    assert.match((await rudder(scratch(), "--help")).out, /create +.*\(create webhook\)/);
  });

  it(
    "turns a project made without --webhooks into exactly what init --webhooks writes",
    T,
    async () => {
      for (const local of [undefined, "/src/rudder"]) {
        const options = { ...base, ...(local ? { local } : {}) };
        const dir = project(`equal-${local ? "local" : "published"}`, options);
        const result = await rudder(dir, "create", "webhook", "--kind", "Memcached");
        assert.equal(result.code, 0, result.err);
        const expected = scaffold({ ...options, webhooks: true }, DEPENDENCY_VERSIONS);
        const actual = tree(dir);
        assert.deepEqual([...actual.keys()].sort(), [...expected.keys()].sort());
        for (const [path, content] of expected) {
          assert.equal(actual.get(path), content, `${path} as init --webhooks writes it`);
        }
        assert.match(result.err, /Added defaulting and validating webhooks for Memcached/);
        assert.match(result.err, /deno task manifests/);
      }
    },
  );

  it("leaves a project made with --webhooks as it is, but for --force's rewrite", T, async () => {
    const options = { ...base, webhooks: true };
    const dir = project("init-webhooks", options);
    const again = await rudder(dir, "create", "webhook", "--kind", "Memcached");
    assert.equal(again.code, 1);
    assert.match(
      again.err,
      /webhooks\/memcached_webhook\.ts, webhooks\/memcached_webhook_test\.ts already exist\(s\); pass --force/,
    );
    writeFileSync(join(dir, "webhooks/memcached_webhook.ts"), "// edited\n");
    const forced = await rudder(dir, "create", "webhook", "--kind", "Memcached", "--force");
    assert.equal(forced.code, 0, forced.err);
    const expected = scaffold(options, DEPENDENCY_VERSIONS);
    const actual = tree(dir);
    for (const [path, content] of expected) assert.equal(actual.get(path), content, path);
    assert.doesNotMatch(forced.out, /main\.ts|rudder\.json|api\//, "nothing else rewritten");
  });

  it(
    "writes a defaulter only with --defaulting, a validator only with --validation",
    T,
    async () => {
      const dir = project("parts");
      assert.equal((await rudder(dir, "create", "api", "--kind", "Backup")).code, 0);
      const defaulting = await rudder(
        dir,
        "create",
        "webhook",
        "--kind",
        "Memcached",
        "--defaulting",
      );
      assert.equal(defaulting.code, 0, defaulting.err);
      assert.match(defaulting.err, /Added a defaulting webhook for Memcached/);
      const defaulter = read(dir, "webhooks/memcached_webhook.ts");
      assert.match(defaulter, /\.withDefaulter\(defaultMemcached\)\n {4}\.complete\(\);/);
      assert.doesNotMatch(defaulter, /withValidator|MAX_REPLICAS|AdmissionDeniedError/);
      assert.doesNotMatch(read(dir, "webhooks/memcached_webhook_test.ts"), /validateMemcached/);
      // The scaffold's resource has spec.replicas already: its api module is kept as it is.
      assert.match(read(dir, "api/memcached.ts"), /How many pods the Deployment runs\./);

      const validation = await rudder(dir, "create", "webhook", "--kind", "Backup", "--validation");
      assert.equal(validation.code, 0, validation.err);
      const validator = read(dir, "webhooks/backup_webhook.ts");
      assert.match(validator, /newWebhookManagedBy\(mgr, Backup\)\n {4}\.withValidator\(/);
      assert.doesNotMatch(validator, /withDefaulter|defaultBackup/);
      const test = read(dir, "webhooks/backup_webhook_test.ts");
      assert.match(
        test,
        /import \{ MAX_REPLICAS, validateBackup \} from "\.\/backup_webhook\.ts";/,
      );
      assert.match(read(dir, "api/backup.ts"), /How many pods the Deployment runs\./);

      const both = await rudder(
        dir,
        "create",
        "webhook",
        "--kind",
        "Backup",
        "--defaulting",
        "--validation",
        "--force",
      );
      assert.equal(both.code, 0, both.err);
      assert.match(read(dir, "webhooks/backup_webhook.ts"), /withDefaulter[^]*withValidator/);
    },
  );

  it("registers a second kind's webhook after the first's, once", T, async () => {
    const dir = project("second");
    assert.equal((await rudder(dir, "create", "api", "--kind", "Backup")).code, 0);
    assert.equal((await rudder(dir, "create", "webhook", "--kind", "Memcached")).code, 0);
    const result = await rudder(dir, "create", "webhook", "--kind", "Backup");
    assert.equal(result.code, 0, result.err);
    const mainModule = read(dir, "main.ts");
    assert.ok(
      mainModule.includes(
        'import { setupMemcachedWebhook } from "./webhooks/memcached_webhook.ts";\n' +
          'import { setupBackupWebhook } from "./webhooks/backup_webhook.ts";\n',
      ),
      mainModule,
    );
    assert.ok(
      mainModule.includes(
        "  setupMemcachedController(mgr);\n  setupBackupController(mgr);\n" +
          "  // +rudder:scaffold:controllers\n" +
          "  if (options.webhooks ?? true) setupMemcachedWebhook(mgr);\n" +
          "  if (options.webhooks ?? true) setupBackupWebhook(mgr);\n" +
          "  // +rudder:scaffold:webhooks\n}",
      ),
      mainModule,
    );
    assert.equal(mainModule.match(/webhookCertificatesFromEnv\(/g)?.length, 1);
    assert.equal(mainModule.match(/ENABLE_WEBHOOKS/g)?.length, 1);
    assert.match(read(dir, "api/backup.ts"), /replicas: z\.number\(\)\.int\(\)\.min\(0\)/);
    const permissions = JSON.parse(read(dir, "rudder.json")).permissions;
    assert.deepEqual(
      permissions,
      JSON.parse(scaffold({ ...base, webhooks: true }, DEPENDENCY_VERSIONS).get("rudder.json")!)
        .permissions,
    );
    // A later `create api` still puts its controller among the controllers.
    assert.equal((await rudder(dir, "create", "api", "--kind", "Cache")).code, 0);
    assert.match(
      read(dir, "main.ts"),
      /setupBackupController\(mgr\);\n {2}setupCacheController\(mgr\);\n {2}\/\/ \+rudder:scaffold:controllers\n {2}if \(options/,
    );
  });

  it("refuses a kind the project lacks, naming the kinds it has", T, async () => {
    const dir = project("unknown");
    assert.equal((await rudder(dir, "create", "api", "--kind", "Backup")).code, 0);
    const before = tree(dir);
    const result = await rudder(dir, "create", "webhook", "--kind", "Cache");
    assert.equal(result.code, 1);
    assert.match(
      result.err,
      /the project has no kind Cache; its kinds: Memcached \(cache\.example\.com\/v1alpha1, api\/memcached\.ts\), Backup \(cache\.example\.com\/v1alpha1, api\/backup\.ts\)/,
    );
    assert.match(result.err, /rudder create api --kind Cache/);
    const otherVersion = await rudder(
      dir,
      "create",
      "webhook",
      "--kind",
      "Backup",
      "--version",
      "v1",
    );
    assert.equal(otherVersion.code, 1);
    assert.match(otherVersion.err, /no kind Backup in v1/);
    assert.deepEqual(tree(dir), before, "nothing written");
  });

  it("refuses a main.ts it cannot change, naming it and what it lacks", T, async () => {
    const dir = project("custom-main");
    const custom = read(dir, "main.ts").replace(/\/\*\* The operator's manager[^]*$/, "");
    writeFileSync(join(dir, "main.ts"), custom);
    const result = await rudder(dir, "create", "webhook", "--kind", "Memcached");
    assert.equal(result.code, 1);
    assert.match(
      result.err,
      /main\.ts: cannot register the Memcached webhooks: no `export function createManager\(…\)`/,
    );
    assert.match(
      result.err,
      /setupMemcachedWebhook\(mgr\) from \.\/webhooks\/memcached_webhook\.ts/,
    );
    assert.equal(existsSync(join(dir, "webhooks")), false, "nothing written");
    assert.equal(read(dir, "main.ts"), custom);
  });

  it("refuses a main.ts without the webhooks marker, naming both", T, async () => {
    const dir = project("no-marker");
    const main = read(dir, "main.ts").replace("  // +rudder:scaffold:webhooks\n", "");
    writeFileSync(join(dir, "main.ts"), main);
    const result = await rudder(dir, "create", "webhook", "--kind", "Memcached");
    assert.equal(result.code, 1);
    assert.match(
      result.err,
      /main\.ts has no `\/\/ \+rudder:scaffold:webhooks` line, above which rudder create inserts its code; add it in setup\(mgr\), after the webhooks' set-up calls/,
    );
    assert.equal(existsSync(join(dir, "webhooks")), false, "nothing written");
    assert.equal(read(dir, "main.ts"), main);
  });

  it("is a usage error without --kind, and --defaulting is not for create api", T, async () => {
    const dir = project("usage");
    const missing = await rudder(dir, "create", "webhook");
    assert.equal(missing.code, 2);
    assert.match(missing.err, /--kind is required/);
    const misplaced = await rudder(dir, "create", "api", "--kind", "Backup", "--defaulting");
    assert.equal(misplaced.code, 2);
    assert.match(misplaced.err, /--defaulting is for create webhook/);
  });
});

describe("registerWebhook", () => {
  const plain = scaffold(base, DEPENDENCY_VERSIONS).get("main.ts")!;
  const withWebhooks = scaffold({ ...base, webhooks: true }, DEPENDENCY_VERSIONS).get("main.ts")!;

  it("is idempotent", T, () => {
    const once = registerWebhook(plain, "Memcached", "webhooks/memcached_webhook.ts");
    assert.equal(once, withWebhooks);
    assert.equal(registerWebhook(once, "Memcached", "webhooks/memcached_webhook.ts"), once);
    const second = registerWebhook(once, "Backup", "webhooks/backup_webhook.ts");
    assert.equal(registerWebhook(second, "Backup", "webhooks/backup_webhook.ts"), second);
    assert.equal(second.match(/setupBackupWebhook\(mgr\)/g)?.length, 1);
  });

  it("adds webhookCertificatesFromEnv to an import of the webhook module there is", T, () => {
    const main = plain.replace(
      'import { describeError, exitProcess, processEnv } from "@rudder/operator/manager";',
      '$&\nimport { AdmissionDeniedError } from "@rudder/operator/webhook";',
    );
    const registered = registerWebhook(main, "Memcached", "webhooks/memcached_webhook.ts");
    assert.match(
      registered,
      /^import \{ AdmissionDeniedError, webhookCertificatesFromEnv \} from "@rudder\/operator\/webhook";$/m,
    );
    assert.equal(registered.match(/from "@rudder\/operator\/webhook"/g)?.length, 1);
  });

  it("names the file and what it lacks", T, () => {
    assert.throws(
      () =>
        registerWebhook(
          plain.replace("setup(mgr);", "start(mgr);"),
          "A",
          "webhooks/a.ts",
          "src/main.ts",
        ),
      /^MainModuleError: src\/main\.ts: cannot register the A webhooks: createManager\(\) has no `setup\(mgr\);` line/,
    );
    assert.throws(
      () =>
        registerWebhook(
          plain.replace("setup(mgr: Manager)", "setup(mgr: Manager, x: number)"),
          "A",
          "w.ts",
        ),
      /main\.ts: .*setup\(mgr: Manager, x: number\) is not setup\(mgr: Manager\)/,
    );
  });
});

describe("withReplicasField and withWebhookPermissions", () => {
  it("leave what init --webhooks wrote unchanged", T, () => {
    const files = scaffold({ ...base, webhooks: true }, DEPENDENCY_VERSIONS);
    const api = files.get("api/memcached.ts")!;
    const both = { defaulting: true, validation: true };
    assert.equal(withReplicasField(api, "Memcached", both, "api/memcached.ts"), api);
    const permissions = JSON.parse(files.get("rudder.json")!).permissions;
    assert.deepEqual(withWebhookPermissions(permissions), permissions);
  });

  it("give a spec without replicas the field the webhooks need, described for them", T, () => {
    const files = scaffold(base, DEPENDENCY_VERSIONS);
    const api = files.get("api/memcached.ts")!.replace(/^ {4}replicas: .*\n/m, "");
    assert.doesNotMatch(api, /^\s*replicas:/m);
    assert.match(api, /jsonPath: "\.spec\.replicas"/); // a printer column is not the field
    const defaulting = withReplicasField(
      api,
      "Memcached",
      { defaulting: true, validation: false },
      "api/memcached.ts",
    );
    assert.match(
      defaulting,
      /\n {4}image: .*\n {4}replicas: z\.number\(\)\.int\(\)\.min\(0\)\.optional\(\)\n {6}\.describe/,
    );
    assert.match(defaulting, /defaulted to 1 by the webhook\./);
    const validating = withReplicasField(
      api,
      "Memcached",
      { defaulting: false, validation: true },
      "api/memcached.ts",
    );
    assert.match(validating, /capped at 10 by the webhook\./);
  });

  it("keep a user's permissions and their order", T, () => {
    assert.deepEqual(
      withWebhookPermissions({ net: ["db:5432"], env: ["ZED", "ALPHA"] }),
      {
        apiServers: [],
        net: ["db:5432", "0.0.0.0:9443", "127.0.0.1"],
        read: ["/tmp/k8s-webhook-server/serving-certs"],
        env: [
          "ZED",
          "ALPHA",
          "ENABLE_WEBHOOKS",
          "TMPDIR",
          "WEBHOOK_CERT_NAMESPACE",
          "WEBHOOK_CERT_SECRET",
          "WEBHOOK_CONVERSION_CRDS",
          "WEBHOOK_MUTATING_CONFIGURATIONS",
          "WEBHOOK_SERVICE",
          "WEBHOOK_VALIDATING_CONFIGURATIONS",
        ],
      },
    );
  });

  it("refuse a spec that is not a z.object literal, naming the file", T, () => {
    const api = 'export const A = defineResource({\n  kind: "A",\n  spec: aSpec,\n});\n';
    assert.throws(
      () => withReplicasField(api, "A", { defaulting: true, validation: false }, "api/a.ts"),
      /^Error: api\/a\.ts: A's spec is not a `spec: z\.object\(\{ … \}\),`/,
    );
  });
});

describe("the webhook files", () => {
  it(
    "are as deno fmt writes them, for short and long kinds and every choice of webhooks",
    { timeout: 120_000 },
    () => {
      const dir = join(scratch(), "fmt");
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, "deno.json"), JSON.stringify({ fmt: { lineWidth: 100 } }));
      const choices = [
        { defaulting: true, validation: true },
        { defaulting: true, validation: false },
        { defaulting: false, validation: true },
      ];
      let n = 0;
      for (const kind of ["Memcached", "CertificateSigningRequestPolicy", "A".repeat(40)]) {
        for (const parts of choices) {
          for (const [path, content] of webhookFiles({ ...base, kind }, parts)) {
            writeFileSync(join(dir, `${n++}_${path.replace(/\//g, "_")}`), content);
          }
        }
      }
      const plain = scaffold(base, DEPENDENCY_VERSIONS).get("main.ts")!;
      writeFileSync(
        join(dir, "main.ts"),
        registerWebhook(
          registerWebhook(plain, "Memcached", "webhooks/memcached_webhook.ts"),
          "MemcachedBackupScheduleWithAVeryLongName",
          "webhooks/memcachedbackupschedulewithaverylongname_webhook.ts",
        ),
      );
      const deno = runtimeExecutable("deno", process.env);
      const files = readdirSync(dir).filter((file) => file.endsWith(".ts"));
      assert.equal(files.length, 19);
      const result = spawnSync(deno, ["fmt", "--check", ...files], { cwd: dir, encoding: "utf8" });
      assert.equal(result.status, 0, `${result.stdout}\n${result.stderr}`);
      assert.match(
        readFileSync(join(dir, "main.ts"), "utf8"),
        /^import \{\n {2}setupMemcachedBackupScheduleWithAVeryLongNameWebhook,\n\} from /m,
      );
    },
  );
});
