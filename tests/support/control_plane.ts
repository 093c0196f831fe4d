// A real control plane for the tests of one file or describe block: started in `before`,
// stopped in `after`, with an admin client and REST client ready, and namespaces created.
import { after, before } from "node:test";
import { type Client, newClient } from "../../lib/client/client.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import { RestClient } from "../../lib/kube/rest.ts";
import { Environment, type EnvironmentOptions } from "../../lib/testing/envtest.ts";

/** What the tests use; each field is set once the control plane has started. */
export interface ControlPlane {
  env: Environment;
  config: KubeConfig;
  client: Client;
  rest: RestClient;
}

/**
 * Registers `before` and `after` hooks in the calling scope that start an Environment (with
 * `options`) and create `namespaces`, and stop it all again.
 */
export function useControlPlane(
  options: EnvironmentOptions = {},
  namespaces: string[] = [],
): ControlPlane {
  const plane = { env: new Environment(options) } as ControlPlane;
  before(async () => {
    plane.config = await plane.env.start();
    plane.client = newClient(plane.config);
    plane.rest = new RestClient(plane.config);
    for (const name of namespaces) {
      await plane.client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
    }
  });
  after(async () => {
    plane.rest?.close();
    await plane.env.stop();
  });
  return plane;
}
