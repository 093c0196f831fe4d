/**
 * The shapes every part of the configuration shares: {@linkcode KubeConfig} (the counterpart of
 * client-go's `rest.Config`), the {@linkcode AuthProvider} that supplies its credentials, and
 * the {@linkcode Credentials} one request carries.
 *
 * @module
 */

/** Credentials to attach to one request. */
export interface Credentials {
  /** Extra request headers, e.g. `Authorization: Bearer …`. */
  headers?: Record<string, string>;
  /** A PEM client certificate and its PEM private key, for mutual TLS. */
  clientCertificate?: { cert: string; key: string };
}

/**
 * Supplies the credentials of a {@linkcode KubeConfig}. Implementations refresh what can
 * expire (a rotated token file, an exec plugin's token) and never log secrets.
 */
export interface AuthProvider {
  /** The credentials to use for the next request. */
  credentials(signal?: AbortSignal): Promise<Credentials>;
  /**
   * Called after the server answered 401 Unauthorized. Drops cached credentials and resolves
   * `true` when fetching them again may help, so the caller retries the request once.
   */
  invalidate?(): Promise<boolean>;
}

/**
 * Everything needed to reach one API server as one user: the counterpart of client-go's
 * `rest.Config`. Plain data plus an {@linkcode AuthProvider}.
 */
export interface KubeConfig {
  /**
   * Base URL of the API server without a trailing slash, e.g. `https://127.0.0.1:6443`. The
   * loaders never leave user-info (`user:password@`) in it: they turn it into basic auth.
   */
  server: string;
  /** The default namespace: from the context, the in-cluster namespace file, else `default`. */
  namespace: string;
  /** PEM bundle of CAs that verify the server; unset means the runtime's root store. */
  caData?: string;
  /** Skip verification of the server's certificate (kubeconfig `insecure-skip-tls-verify`). */
  insecureSkipTLSVerify?: boolean;
  /** Server name to verify the certificate against, when it differs from the URL's host. */
  tlsServerName?: string;
  /** HTTP(S) proxy URL from the kubeconfig's `proxy-url`; may carry the proxy's credentials. */
  proxyURL?: string;
  /** How requests authenticate. */
  auth: AuthProvider;
  /** Name of the kubeconfig context this came from; unset in-cluster. */
  contextName?: string;
  /** Where this came from, for messages: the kubeconfig file(s) or `in-cluster`. */
  source: string;
}

/** Options of `loadConfig`. */
export interface LoadConfigOptions {
  /** Path of a kubeconfig file; wins over `$KUBECONFIG`, in-cluster and `~/.kube/config`. */
  kubeconfig?: string;
  /** Context to use instead of the file's `current-context`. */
  context?: string;
  /**
   * Milliseconds an exec credential plugin may run before it is killed; default 30 s
   * (`DEFAULT_EXEC_TIMEOUT_MS`).
   */
  execTimeoutMs?: number;
}
