// An AdmissionReview as the API server posts it, for the webhook server's tests.

/** The JSON body of an AdmissionReview asking to create the ConfigMap `x`. */
export const CONFIGMAP_REVIEW = JSON.stringify({
  apiVersion: "admission.k8s.io/v1",
  kind: "AdmissionReview",
  request: {
    uid: "u-1",
    kind: { group: "", version: "v1", kind: "ConfigMap" },
    resource: { group: "", version: "v1", resource: "configmaps" },
    operation: "CREATE",
    userInfo: { username: "admin" },
    object: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x" } },
  },
});
