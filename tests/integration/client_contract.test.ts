// The client contract against the real client on a real kube-apiserver: the reference the
// FakeClient is held to.
import { after, before } from "node:test";
import { type Client, newClient } from "../../lib/client/client.ts";
import { Namespace } from "../../lib/api/mod.ts";
import { Environment } from "../../lib/testing/envtest.ts";
import { clientContract } from "../contract/client_contract.ts";

const env = new Environment();
let client: Client;

before(async () => {
  client = newClient(await env.start());
});

after(async () => {
  await env.stop();
});

clientContract("newClient against kube-apiserver", async () => {
  const namespace = `contract-${Date.now().toString(36)}`;
  await client.create<Namespace>({
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name: namespace },
  });
  return {
    client,
    namespace,
    // Without a namespace controller the namespace stays Terminating; the control plane goes.
    teardown: () =>
      client.delete({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } }),
  };
});
