/**
 * A real control plane for the Kubernetes tier: etcd + kube-apiserver on free loopback ports,
 * with generated certificates, RBAC authorization, service-account token signing, and two
 * kubeconfigs (an admin in system:masters, and a restricted user with no permissions until a
 * test grants some). Binaries come from KUBEBUILDER_ASSETS or the versioned build cache
 * (build-control-plane.sh). Everything lives in one temp dir, removed by stop().
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { request } from 'node:https';
import { buildTool } from './build-tool.js';

export interface ControlPlaneOptions {
  /** Write an audit log of every request on leases (Metadata level) to `auditLog`. */
  audit?: boolean;
  /** Extra users (system:masters) to create kubeconfigs for, e.g. one per benchmark candidate. */
  extraUsers?: string[];
  /** kube-apiserver's --feature-gates, e.g. ['ShardedListAndWatch=true'] for an alpha feature a test needs. */
  featureGates?: string[];
}

export interface ControlPlane {
  dir: string;
  binDir: string;
  server: string;
  caFile: string;
  adminKubeconfig: string;
  restrictedKubeconfig: string;
  restrictedUser: string;
  /** Kubeconfig per extra user. */
  userKubeconfigs: Record<string, string>;
  /** The audit log (JSON lines), when audit was asked for. */
  auditLog: string | null;
  etcdUrl: string;
  /** The PIDs of kube-apiserver and etcd while they run (for the bench's CPU figures). */
  pids: () => { apiserver?: number; etcd?: number };
  /** Stops kube-apiserver only (etcd keeps the data), for outage tests. */
  stopApiServer: () => Promise<void>;
  startApiServer: () => Promise<void>;
  /** Stops etcd only (its data directory stays), for outage tests; the API server stays up and fails requests meanwhile. */
  stopEtcd: () => Promise<void>;
  /** Starts etcd again on the same port and data, and waits until the API server is ready on it again. */
  startEtcd: () => Promise<void>;
  stop(): Promise<void>;
}

function log(msg: string): void {
  process.stderr.write(`[control-plane] ${msg}\n`);
}

/** Runs build-control-plane.sh (a no-op when cached) and returns the binaries' folder. */
export function binaries(): string {
  return buildTool('build-control-plane.sh');
}

/** A loopback port nobody listens on now (the kernel's choice); shared with test/support/postgres.ts. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

function certificates(dir: string): void {
  openssl(dir, ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=leasehold-test-ca']);
  openssl(dir, ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'apiserver.key', '-out', 'apiserver.csr', '-subj', '/CN=kube-apiserver']);
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n');
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    'apiserver.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'apiserver.crt',
    '-days',
    '2',
    '-extfile',
    'san.ext',
  ]);
  openssl(dir, ['genrsa', '-out', 'sa.key', '2048']);
  openssl(dir, ['rsa', '-in', 'sa.key', '-pubout', '-out', 'sa.pub']);
}

/** A token user's kubeconfig for this control plane. */
export function kubeconfig(server: string, caFile: string, user: string, token: string): string {
  const ca = readFileSync(caFile).toString('base64');
  return kubeconfigYaml(server, [`certificate-authority-data: ${ca}`], user, [`token: ${token}`]);
}

/** A one-context kubeconfig (namespace default); `cluster` and `userLines` are YAML lines under each entry. */
export function kubeconfigYaml(server: string, cluster: string[], user: string, userLines: string[]): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: test',
    '  cluster:',
    `    server: ${server}`,
    ...cluster.map((l) => `    ${l}`),
    'users:',
    `- name: ${user}`,
    '  user:',
    ...userLines.map((l) => `    ${l}`),
    'contexts:',
    '- name: test',
    '  context:',
    '    cluster: test',
    `    user: ${user}`,
    '    namespace: default',
    'current-context: test',
    '',
  ].join('\n');
}

function get(url: string, token: string, ca: Buffer): Promise<number> {
  return new Promise((resolve) => {
    const req = request(url, { headers: { authorization: `Bearer ${token}` }, ca, timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

async function waitUntil(what: string, ok: () => Promise<boolean>, timeoutMs: number, proc?: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc && proc.exitCode !== null) throw new Error(`${what}: the process exited with ${proc.exitCode}`);
    if (await ok()) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what}: not ready after ${timeoutMs} ms`);
}

function launch(bin: string, args: string[], logFile: string): ChildProcess {
  const out = openSync(logFile, 'a');
  return spawn(bin, args, { stdio: ['ignore', out, out] });
}

async function kill(p: ChildProcess | null): Promise<void> {
  if (!p || p.exitCode !== null || p.signalCode !== null) return;
  const exited = new Promise((r) => p.once('exit', r));
  p.kill('SIGTERM');
  const t = setTimeout(() => p.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(t);
}

export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const binDir = binaries();
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-cp-'));
  const started = Date.now();
  certificates(dir);
  const adminToken = randomBytes(16).toString('hex');
  const restrictedToken = randomBytes(16).toString('hex');
  const restrictedUser = 'restricted-user';
  const extra = (opts.extraUsers ?? []).map((user) => ({ user, token: randomBytes(16).toString('hex') }));
  writeFileSync(
    join(dir, 'tokens.csv'),
    `${adminToken},admin,admin-uid,"system:masters"\n${restrictedToken},${restrictedUser},restricted-uid\n` +
      extra.map((e) => `${e.token},${e.user},${e.user}-uid,"system:masters"\n`).join(''),
    { mode: 0o600 },
  );

  const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
  const etcdUrl = `http://127.0.0.1:${etcdPort}`;
  const etcdArgs = [
    '--data-dir',
    join(dir, 'etcd'),
    '--listen-client-urls',
    etcdUrl,
    '--advertise-client-urls',
    etcdUrl,
    '--listen-peer-urls',
    `http://127.0.0.1:${peerPort}`,
    '--initial-advertise-peer-urls',
    `http://127.0.0.1:${peerPort}`,
    '--initial-cluster',
    `default=http://127.0.0.1:${peerPort}`,
    '--unsafe-no-fsync',
    '--log-level',
    'warn',
  ];
  let etcd: ChildProcess | null = null;
  const startEtcdOnly = async () => {
    etcd = launch(join(binDir, 'etcd'), etcdArgs, join(dir, 'etcd.log'));
    await waitUntil(
      'etcd',
      async () => {
        try {
          return (await fetch(`${etcdUrl}/health`)).ok;
        } catch {
          return false;
        }
      },
      30_000,
      etcd,
    );
  };
  await startEtcdOnly();

  const server = `https://127.0.0.1:${apiPort}`;
  const ca = readFileSync(join(dir, 'ca.crt'));
  const apiArgs = [
    '--etcd-servers',
    etcdUrl,
    '--bind-address',
    '127.0.0.1',
    '--advertise-address',
    '127.0.0.1',
    '--secure-port',
    String(apiPort),
    '--cert-dir',
    join(dir, 'certs'),
    '--tls-cert-file',
    join(dir, 'apiserver.crt'),
    '--tls-private-key-file',
    join(dir, 'apiserver.key'),
    '--client-ca-file',
    join(dir, 'ca.crt'),
    '--token-auth-file',
    join(dir, 'tokens.csv'),
    '--authorization-mode',
    'RBAC',
    '--service-account-issuer',
    'https://kubernetes.default.svc',
    '--service-account-key-file',
    join(dir, 'sa.pub'),
    '--service-account-signing-key-file',
    join(dir, 'sa.key'),
    '--service-cluster-ip-range',
    '10.96.0.0/24',
    '--allow-privileged',
    // The kubernetes Service endpoint may not be a loopback address; nothing here needs it.
    '--endpoint-reconciler-type',
    'none',
    '--v',
    '1',
  ];
  if (opts.featureGates?.length) apiArgs.push('--feature-gates', opts.featureGates.join(','));
  const auditLog = opts.audit ? join(dir, 'audit.log') : null;
  if (auditLog) {
    writeFileSync(
      join(dir, 'audit-policy.yaml'),
      [
        'apiVersion: audit.k8s.io/v1',
        'kind: Policy',
        'omitStages: ["RequestReceived"]',
        'rules:',
        '  - level: Metadata',
        '    resources: [{ group: "coordination.k8s.io", resources: ["leases"] }]',
        '  - level: None',
        '',
      ].join('\n'),
    );
    apiArgs.push(
      '--audit-policy-file',
      join(dir, 'audit-policy.yaml'),
      '--audit-log-path',
      auditLog,
      '--audit-log-format',
      'json',
      '--audit-log-mode',
      'blocking',
    );
  }
  let apiserver: ChildProcess | null = null;
  const startApiServer = async () => {
    apiserver = launch(join(binDir, 'kube-apiserver'), apiArgs, join(dir, 'kube-apiserver.log'));
    await waitUntil('kube-apiserver', async () => (await get(`${server}/readyz`, adminToken, ca)) === 200, 120_000, apiserver);
  };
  try {
    await startApiServer();
  } catch (err) {
    await kill(apiserver);
    await kill(etcd);
    const tail = readFileSync(join(dir, 'kube-apiserver.log'), 'utf8').split('\n').slice(-15).join('\n');
    throw new Error(`${(err as Error).message}\n${tail}`, { cause: err });
  }
  const adminKubeconfig = join(dir, 'admin.kubeconfig');
  const restrictedKubeconfig = join(dir, 'restricted.kubeconfig');
  writeFileSync(adminKubeconfig, kubeconfig(server, join(dir, 'ca.crt'), 'admin', adminToken), { mode: 0o600 });
  writeFileSync(restrictedKubeconfig, kubeconfig(server, join(dir, 'ca.crt'), restrictedUser, restrictedToken), { mode: 0o600 });
  const userKubeconfigs: Record<string, string> = {};
  for (const e of extra) {
    userKubeconfigs[e.user] = join(dir, `${e.user}.kubeconfig`);
    writeFileSync(userKubeconfigs[e.user]!, kubeconfig(server, join(dir, 'ca.crt'), e.user, e.token), { mode: 0o600 });
  }
  log(`ready in ${((Date.now() - started) / 1000).toFixed(1)}s: ${server} (etcd ${etcdUrl}, files in ${dir})`);

  return {
    dir,
    binDir,
    server,
    caFile: join(dir, 'ca.crt'),
    adminKubeconfig,
    restrictedKubeconfig,
    restrictedUser,
    userKubeconfigs,
    auditLog,
    etcdUrl,
    pids: () => ({ apiserver: apiserver?.pid, etcd: etcd?.pid }),
    stopApiServer: () => kill(apiserver),
    startApiServer,
    stopEtcd: () => kill(etcd),
    async startEtcd() {
      await startEtcdOnly();
      await waitUntil('kube-apiserver on etcd again', async () => (await get(`${server}/readyz`, adminToken, ca)) === 200, 60_000, apiserver ?? undefined);
    },
    async stop() {
      await kill(apiserver);
      await kill(etcd);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
