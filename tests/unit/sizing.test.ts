// cli/sizing.ts: the generated Deployment's memory from the measured figures, and the sizing guide
// that must state the same figures.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import type { Discovery } from "../../cli/discover.ts";
import { generateManifests, type ManifestSettings } from "../../cli/manifests.ts";
import {
  imageRuntimes,
  LIMIT_OBJECTS,
  managerResources,
  MEASURED_MEMORY,
  memoryMiB,
  operatorMemoryMiB,
  REQUEST_OBJECTS,
  type SizedRuntime,
} from "../../cli/sizing.ts";

const GUIDE = readFileSync(
  fileURLToPath(new URL("../../docs/guides/sizing.md", import.meta.url)),
  "utf8",
);

/** The rows of the guide's table whose header starts with `header`, as cells. */
function table(header: string): string[][] {
  const lines = GUIDE.split("\n");
  const start = lines.findIndex((line) => line.startsWith(`| ${header}`));
  assert.ok(start >= 0, `the guide has a table headed "${header}"`);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith("|")) break;
    rows.push(line.split("|").slice(1, -1).map((cell) => cell.trim()));
  }
  return rows;
}

/** "2,398 B" → 2398, "74.8 MiB" → 74.8. */
function number(cell: string): number {
  return Number(cell.replace(/,/g, "").replace(/ ?(MiB|B)$/, ""));
}

describe("sizing", () => {
  it("adds idle, objects and a relist's in-flight list, in MiB", () => {
    const deno = MEASURED_MEMORY.deno;
    assert.equal(operatorMemoryMiB("deno", 0), deno.idleMiB);
    assert.equal(
      operatorMemoryMiB("deno", 2 ** 20),
      deno.idleMiB + deno.bytesPerObject,
    );
    assert.equal(
      operatorMemoryMiB("deno", 2 ** 20, true),
      deno.idleMiB + deno.bytesPerObject + deno.relistBytesPerObject,
    );
  });

  it("sizes the request for 1,000 objects +20 % and the limit for a relist of 10,000 +50 %, by the heaviest runtime, in steps of 32 MiB", () => {
    for (
      const runtimes of [["deno"], ["bun"], ["node"], ["deno", "bun"], [
        "node",
        "bun",
      ]] as SizedRuntime[][]
    ) {
      const { request, limit } = memoryMiB(runtimes);
      const steady = Math.max(...runtimes.map((r) => operatorMemoryMiB(r, REQUEST_OBJECTS)));
      const peak = Math.max(...runtimes.map((r) => operatorMemoryMiB(r, LIMIT_OBJECTS, true)));
      assert.equal(request % 32, 0);
      assert.equal(limit % 32, 0);
      assert.ok(request >= steady * 1.2 && request < steady * 1.2 + 32, `${runtimes}: ${request}`);
      assert.ok(limit >= peak * 1.5 && limit < peak * 1.5 + 32, `${runtimes}: ${limit}`);
    }
    // The heavier runtime decides, whichever comes first.
    assert.deepEqual(memoryMiB(["bun", "node"]), memoryMiB(["node"]));
    assert.deepEqual(memoryMiB(), memoryMiB(["deno", "bun"]));
    assert.throws(() => memoryMiB([]), /no runtime/);
  });

  it("sizes a Deno project's image for Deno or Bun and a Node project's for Node or Bun", () => {
    assert.deepEqual(imageRuntimes("deno"), ["deno", "bun"]);
    assert.deepEqual(imageRuntimes("node"), ["node", "bun"]);
    assert.deepEqual(managerResources({ request: 64, limit: 128 }), {
      requests: { cpu: "10m", memory: "64Mi" },
      limits: { cpu: "500m", memory: "128Mi" },
    });
  });

  it("writes those into the Deployment and the dashboard's memory threshold", () => {
    const settings: ManifestSettings = {
      name: "widget-operator",
      namespace: "widget-system",
      image: "registry.example.com/widget-operator:1.2.3",
      metricsBindAddress: ":8443",
      healthProbeBindAddress: ":8081",
      rbac: [],
    };
    const discovery: Discovery = { crds: [], controllers: [], webhooks: false };
    for (const memory of [undefined, { request: 64, limit: 160 }]) {
      const { request, limit } = memory ?? memoryMiB();
      const files = generateManifests(settings, discovery, { memory });
      const deployment = parse(files.get("manager/deployment.yaml")!);
      assert.deepEqual(deployment.spec.template.spec.containers[0].resources, {
        requests: { cpu: "10m", memory: `${request}Mi` },
        limits: { cpu: "500m", memory: `${limit}Mi` },
      });
      const dashboard = JSON.parse(files.get("grafana/widget-operator.json")!);
      const panel = dashboard.panels.find((p: { title: string }) => p.title === "Memory");
      const steps = panel.fieldConfig.defaults.thresholds.steps;
      assert.equal(steps.at(-1).value, 0.9 * limit * 2 ** 20);
      assert.match(panel.description, new RegExp(`Deployment's ${limit} MiB limit`));
    }
  });
});

describe("the sizing guide", () => {
  const RUNTIMES: Record<string, SizedRuntime | "go"> = {
    "Deno": "deno",
    "Bun": "bun",
    "Node (single executable)": "node",
    "Go controller-runtime (peer)": "go",
  };

  it("states the measured figures cli/sizing.ts sizes by", () => {
    const rows = table("runtime ");
    assert.deepEqual(rows.map((r) => r[0]), Object.keys(RUNTIMES));
    for (const [name, idle, perObject, relist] of rows) {
      assert.deepEqual(
        {
          idleMiB: number(idle),
          bytesPerObject: number(perObject),
          relistBytesPerObject: number(relist),
        },
        MEASURED_MEMORY[RUNTIMES[name]],
        name,
      );
    }
  });

  it("states the steady and peak memory they give", () => {
    const rows = table("cached objects");
    assert.ok(rows.length >= 3);
    for (const [objects, ...cells] of rows) {
      const n = number(objects);
      cells.forEach((cell, i) => {
        const runtime = (["deno", "bun", "node"] as const)[i];
        const [steady, peak] = cell.replace(" MiB", "").split("/").map((v) => Number(v.trim()));
        assert.equal(steady, Math.round(operatorMemoryMiB(runtime, n)), `${runtime} ${n}`);
        assert.equal(peak, Math.round(operatorMemoryMiB(runtime, n, true)), `${runtime} ${n}`);
      });
    }
  });

  it("states the request and limit rudder manifests writes", () => {
    const rows = table("image's runtime");
    const cases: SizedRuntime[][] = [imageRuntimes("deno").slice(), imageRuntimes("node").slice()];
    assert.equal(rows.length, cases.length);
    rows.forEach(([, request, limit], i) => {
      const memory = memoryMiB(cases[i]);
      assert.equal(request, `${memory.request}Mi`);
      assert.equal(limit, `${memory.limit}Mi`);
    });
  });
});
