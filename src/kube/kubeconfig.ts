import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import { load as parseYaml } from 'js-yaml';
import { StoreOpenError, describeError } from '../errors.js';
import { hideCredentials } from '../util/hide-credentials.js';
import { type CredentialSource, type ExecClusterInfo, basicAuth, execPlugin, staticToken, tokenFile } from './credentials.js';

/** Where the service account's files are mounted in every pod. */
const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** Everything needed to talk to one API server as one user; what a kubeconfig context resolves to. */
export interface ClusterConnection {
  /** https://host:port (or http:// for a local insecure port). */
  server: string;
  /** PEM CA bundle to trust; undefined = the system roots. */
  ca?: Buffer;
  insecureSkipTlsVerify?: boolean;
  /** SNI / certificate name override (kubeconfig `tls-server-name`). */
  tlsServerName?: string;
  /** Client certificate and key (PEM), for certificate users. */
  cert?: Buffer;
  key?: Buffer;
  /** Supplies the Authorization header, if the user has one. */
  credentials?: CredentialSource;
  /** The context's namespace, if set. */
  namespace?: string;
  /** Where this came from, for messages ("kubeconfig /x (context y)", "in-cluster service account"). */
  source: string;
}

interface NamedEntry<T> {
  name?: string;
  cluster?: T;
  user?: T;
  context?: T;
}
type Dict = Record<string, unknown>;

interface KubeconfigFile {
  path: string;
  doc: Dict;
}

/**
 * Resolves the connection the way kubectl and client-go do:
 * 1. `explicitPath` (the --kubeconfig flag) if given;
 * 2. else $KUBECONFIG, a list of files (":"-separated) merged with the first file winning for
 *    each cluster, user and context name and for current-context;
 * 3. else ~/.kube/config if it exists;
 * 4. else the pod's service account (KUBERNETES_SERVICE_HOST/PORT, token file, CA), the usual
 *    case for the sidecar.
 * File paths inside a kubeconfig are relative to the file that names them.
 * Supported users: token, tokenFile, client certificate/key (file or -data), username/password,
 * and exec credential plugins (client.authentication.k8s.io v1 and v1beta1). The legacy
 * `auth-provider` (gcp, azure, oidc) is refused with a message pointing at exec plugins.
 */
export function loadConnection(explicitPath?: string, env: NodeJS.ProcessEnv = process.env): ClusterConnection {
  if (explicitPath) return fromFiles([readKubeconfig(explicitPath)]);
  const fromEnv = (env.KUBECONFIG ?? '').split(delimiter).filter(Boolean);
  if (fromEnv.length > 0) {
    const files = fromEnv.filter((p) => existsSync(p)).map(readKubeconfig);
    if (files.length === 0) throw new StoreOpenError(`KUBECONFIG names no existing file (${fromEnv.join(delimiter)})`);
    return fromFiles(files);
  }
  const home = join(env.HOME ?? homedir(), '.kube', 'config');
  if (existsSync(home)) return fromFiles([readKubeconfig(home)]);
  if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT) return inCluster(env);
  throw new StoreOpenError(
    'no Kubernetes cluster configured: give a kubeconfig file, set KUBECONFIG, create ~/.kube/config, or run in a pod with a service account',
    { field: 'kubeconfig' },
  );
}

/** The pod's own service account; the token file is re-read as the kubelet rotates it. */
export function inCluster(env: NodeJS.ProcessEnv = process.env, dir = SERVICE_ACCOUNT_DIR): ClusterConnection {
  const host = env.KUBERNETES_SERVICE_HOST ?? '';
  const port = env.KUBERNETES_SERVICE_PORT ?? '';
  const tokenPath = join(dir, 'token');
  if (!existsSync(tokenPath)) {
    throw new StoreOpenError(`in-cluster configuration: ${tokenPath} does not exist (is automountServiceAccountToken disabled?)`);
  }
  return {
    server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    ca: readOptional(join(dir, 'ca.crt')),
    credentials: tokenFile(tokenPath),
    namespace: readOptional(join(dir, 'namespace'))?.toString('utf8').trim() || undefined,
    source: 'in-cluster service account',
  };
}

function readKubeconfig(path: string): KubeconfigFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new StoreOpenError(`cannot read kubeconfig ${path}: ${describeError(err)}`, { cause: err });
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new StoreOpenError(`kubeconfig ${path} is not valid YAML: ${describeError(err).split('\n')[0]}`, { cause: err });
  }
  if (doc === null || doc === undefined) doc = {};
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new StoreOpenError(`kubeconfig ${path} is not a mapping (kind: Config)`);
  return { path: resolve(path), doc: doc as Dict };
}

function fromFiles(files: KubeconfigFile[]): ClusterConnection {
  const names = files.map((f) => f.path).join(delimiter);
  const currentContext = files.map((f) => f.doc['current-context']).find((c): c is string => typeof c === 'string' && c !== '');
  if (!currentContext) throw new StoreOpenError(`kubeconfig ${names} has no current-context`);
  const context = lookup(files, 'contexts', 'context', currentContext);
  if (!context) throw new StoreOpenError(`kubeconfig ${names}: current-context "${currentContext}" is not among its contexts`);
  const clusterName = str(context.value.cluster);
  const cluster = clusterName ? lookup(files, 'clusters', 'cluster', clusterName) : undefined;
  if (!cluster) throw new StoreOpenError(`kubeconfig ${names}: context "${currentContext}" names cluster "${clusterName ?? ''}", which is not defined`);
  const server = str(cluster.value.server);
  if (!server || !/^https?:\/\//.test(server)) {
    throw new StoreOpenError(
      `kubeconfig ${names}: cluster "${clusterName}" needs a server URL starting with https:// (got ${JSON.stringify(hideCredentials(server ?? ''))})`,
    );
  }
  if (cluster.value['proxy-url']) {
    throw new StoreOpenError(`kubeconfig ${names}: cluster "${clusterName}" sets proxy-url, which leasehold does not support: reach the API server directly`);
  }
  const userName = str(context.value.user);
  const user = userName ? lookup(files, 'users', 'user', userName) : undefined;
  if (userName && !user) throw new StoreOpenError(`kubeconfig ${names}: context "${currentContext}" names user "${userName}", which is not defined`);
  const conn: ClusterConnection = {
    server: server.replace(/\/+$/, ''),
    ca: dataOrFile(cluster, 'certificate-authority'),
    insecureSkipTlsVerify: cluster.value['insecure-skip-tls-verify'] === true,
    tlsServerName: str(cluster.value['tls-server-name']),
    namespace: str(context.value.namespace),
    source: `kubeconfig ${names} (context ${currentContext})`,
  };
  if (user) {
    const extensions = Array.isArray(cluster.value.extensions) ? (cluster.value.extensions as NamedEntry<Dict>[]) : [];
    const execConfig = extensions.find((e) => e?.name === 'client.authentication.k8s.io/exec') as { extension?: unknown } | undefined;
    Object.assign(
      conn,
      userAuth(user, userName!, {
        server: conn.server,
        ...(conn.tlsServerName ? { 'tls-server-name': conn.tlsServerName } : {}),
        ...(conn.insecureSkipTlsVerify ? { 'insecure-skip-tls-verify': true } : {}),
        ...(conn.ca ? { 'certificate-authority-data': Buffer.from(conn.ca).toString('base64') } : {}),
        ...(execConfig?.extension !== undefined ? { config: execConfig.extension } : {}),
      }),
    );
  }
  if (conn.credentials && conn.server.startsWith('http://')) {
    throw new StoreOpenError(
      `kubeconfig ${names}: cluster "${clusterName}" is plain http:// but user "${userName}" has credentials, which would cross the network unencrypted: use https://`,
    );
  }
  return conn;
}

interface Found {
  value: Dict;
  file: KubeconfigFile;
}

/** The first file's entry of that name wins, as in client-go's merge. */
function lookup(files: KubeconfigFile[], list: string, field: 'cluster' | 'user' | 'context', name: string): Found | undefined {
  for (const file of files) {
    const entries = file.doc[list];
    if (!Array.isArray(entries)) continue;
    const hit = (entries as NamedEntry<Dict>[]).find((e) => e?.name === name);
    if (hit) return { value: hit[field] ?? {}, file };
  }
  return undefined;
}

/** Impersonation fields: leasehold does not send Impersonate-* headers, so it refuses them rather than act as another user. */
const IMPERSONATION = ['as', 'as-uid', 'as-groups', 'as-user-extra'];

function userAuth(user: Found, name: string, cluster: ExecClusterInfo): Partial<ClusterConnection> {
  const u = user.value;
  const where = `kubeconfig ${user.file.path}: user "${name}"`;
  const impersonating = IMPERSONATION.filter((f) => u[f] !== undefined && u[f] !== null && u[f] !== '');
  if (impersonating.length > 0) {
    throw new StoreOpenError(
      `${where} sets ${impersonating.join(', ')} (impersonation), which leasehold does not support: it would act as the un-impersonated user. Give the sidecar its own user with the Lease RBAC instead`,
    );
  }
  if (u['auth-provider']) {
    const provider = str((u['auth-provider'] as Dict)?.name) ?? 'unknown';
    throw new StoreOpenError(`${where} uses auth-provider "${provider}", which leasehold does not support: use an exec credential plugin (users[].user.exec)`);
  }
  const out: Partial<ClusterConnection> = { cert: dataOrFile(user, 'client-certificate'), key: dataOrFile(user, 'client-key') };
  if (Boolean(out.cert) !== Boolean(out.key)) throw new StoreOpenError(`${where} has a client certificate without its key or a key without its certificate`);
  const token = str(u.token);
  const tokenPath = str(u.tokenFile);
  const username = str(u.username);
  if (token) out.credentials = staticToken(token);
  else if (tokenPath) out.credentials = tokenFile(relativeTo(user.file, tokenPath));
  else if (u.exec) out.credentials = execPlugin(u.exec as Dict, dirname(user.file.path), where, Date.now, cluster);
  else if (username !== undefined) out.credentials = basicAuth(username, str(u.password) ?? '');
  return out;
}

/** `<field>-data` (base64) wins over `<field>` (a path relative to the kubeconfig). */
function dataOrFile(entry: Found, field: string): Buffer | undefined {
  const data = str(entry.value[`${field}-data`]);
  if (data) return Buffer.from(data, 'base64');
  const path = str(entry.value[field]);
  if (!path) return undefined;
  const full = relativeTo(entry.file, path);
  try {
    return readFileSync(full);
  } catch (err) {
    throw new StoreOpenError(`kubeconfig ${entry.file.path}: cannot read ${field} ${full}: ${describeError(err)}`, { cause: err });
  }
}

function relativeTo(file: KubeconfigFile, path: string): string {
  return isAbsolute(path) ? path : join(dirname(file.path), path);
}

function readOptional(path: string): Buffer | undefined {
  try {
    return readFileSync(path);
  } catch {
    return undefined;
  }
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}
