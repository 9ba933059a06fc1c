/**
 * The settings `sidecar` and `run` share (`run` is a sidecar that also runs a command): their
 * flags, their validation, and opening the store. Commands import this, never each other.
 */
import { describeError } from '../src/errors.js';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { http } from '../src/util/node-http.js';
import { connectKubernetes, openStore, type StoreSettings } from '../src/backends/open-store.js';
import { checkStatusDir } from '../src/sidecar/status-publisher.js';
import { isInside, resolveThroughExisting } from './path-inside.js';
import { parseListen } from '../src/sidecar/http-server.js';
import { isReadyWhen } from '../src/sidecar/kubelet-probes.js';
import { ELECTION_OPTIONS, resolveElection } from './election-flags.js';
import { HEALTH_OPTIONS, resolveHealth } from './health-flags.js';
import { probesOwnListener } from './own-listener.js';
import type { ArgsOf, FlagTable, FlagValues } from './flag-table.js';
import { badFlag } from './cli-errors.js';
import type { Logger } from '../src/log.js';
import { formatDuration } from '../src/config/duration.js';
import { maxDrainMs } from '../src/sidecar/app-drain.js';
import { duration } from './election-flags.js';
import { probeEnvironment } from './run-environment.js';
import { SHARD_OPTIONS, resolveShards } from './shard-flags.js';
import type { ProbeOptions } from '../src/health/health-settings.js';

/**
 * The store, for `--pod-label` a PodLabeler for the pod named by --identity (labelled with
 * the lease it campaigns for), and for `--leader-endpoints` the writer of the leader Service's
 * EndpointSlice; all use one API connection (its credentials, its keep-alive sockets).
 */
export async function openStoreAndLabeler(
  settings: StoreSettings,
  podLabel: boolean,
  pod: string,
  lease: string,
  log: Logger,
  endpoints?: { slice: string; ip: string; verifyMs: number },
) {
  const kube = settings.backend === 'kubernetes' ? await connectKubernetes(settings) : undefined;
  const store = await openStore({ ...settings, kube, log });
  if (!kube) return { store, podLabeler: undefined, leaderEndpoints: undefined };
  const podLabeler = podLabel ? new (await import('../src/sidecar/pod-labeler.js')).PodLabeler(kube.client, kube.namespace, pod, lease, log) : undefined;
  const leaderEndpoints = endpoints
    ? new (await import('../src/sidecar/leader-endpoints.js')).LeaderEndpoints(
        kube.client,
        kube.namespace,
        endpoints.slice,
        { name: pod, ip: endpoints.ip },
        log,
        {
          verifyMs: endpoints.verifyMs,
        },
      )
    : undefined;
  return { store, podLabeler, leaderEndpoints };
}

/** The sidecar's flags: a campaign's, then its own (see cmd/flag-table.ts). */
export const SIDECAR_OPTIONS = {
  ...ELECTION_OPTIONS,
  'status-dir': { type: 'string', describe: 'Directory for status.json, is-leader, fencing-token, holder (/leader in a pod)' },
  listen: {
    type: 'string',
    default: '127.0.0.1:4040',
    describe: 'HTTP address for /healthz /readyz /leader /metrics; ":PORT" binds every interface; "off" disables',
  },
  'ready-when': { type: 'string', default: 'leader', describe: 'leader | elected-any: when /readyz answers 200' },
  'pod-label': {
    type: 'boolean',
    default: false,
    describe: 'kubernetes: keep leasehold.io/role=leader|follower on this pod (the pod named by --identity)',
  },
  ...HEALTH_OPTIONS,
} as const satisfies FlagTable;

/** `sidecar`'s own flags, after the shared ones: `run` has none of them (its command exiting is its drain). */
export const SIDECAR_COMMAND_OPTIONS = {
  ...SIDECAR_OPTIONS,
  'leader-endpoints': {
    type: 'string',
    describe:
      "kubernetes: while leading, make this pod (--pod-ip, --identity) the only endpoint of this EndpointSlice, the leader Service's (a Service without a selector)",
  },
  'pod-ip': { type: 'string', describe: "This pod's IP (the downward API's status.podIP), the address --leader-endpoints writes" },
  'drain-timeout': {
    type: 'string',
    default: '0s',
    describe:
      "After a graceful step-down, wait up to this for the app's POST /leader/stopped?token=N (with --shards, per shard: POST /shards/stopped?shard=S&token=T), with the key in --status-dir's drain-key, before releasing; 0s: do not wait. At most renew-deadline/2 − retry-period",
  },
  ...SHARD_OPTIONS,
} as const satisfies FlagTable;

export type SidecarArgs = ArgsOf<typeof SIDECAR_COMMAND_OPTIONS>;
/** The flags `sidecar` and `run` share: what resolveSidecar reads. */
export type CandidateArgs = ArgsOf<typeof SIDECAR_OPTIONS>;

/**
 * `sidecar`'s settings, resolved once for either mode: the shared ones (resolveSidecar), the
 * shard group's with --shards (`sharding`, undefined for a lease), then the drain, whose
 * messages name the endpoint the app posts to in that mode.
 */
export function resolveSidecarCommand(f: FlagValues<SidecarArgs>, env: NodeJS.ProcessEnv) {
  const a = f.values;
  const s = resolveSidecar(f, env);
  const sharding = resolveShards(f);
  const drain = sharding
    ? { released: "each shard's release", endpoint: "the app says a shard's work stopped with POST /shards/stopped" }
    : { released: 'the release', endpoint: 'the app says its work stopped with POST /leader/stopped' };
  const drainTimeoutMs = duration('drain-timeout', a['drain-timeout'], 0);
  const fits = maxDrainMs(s);
  if (drainTimeoutMs > 0 && drainTimeoutMs > fits) {
    throw badFlag(
      'drain-timeout',
      a['drain-timeout'],
      fits > 0
        ? `must be at most renew-deadline/2 − retry-period (${formatDuration(fits)}): ${drain.released} must still be sent before the renew deadline; raise --renew-deadline for a longer drain`
        : `no drain fits renew-deadline/2 − retry-period (${formatDuration(s.renewDeadlineMs / 2)} − ${formatDuration(s.retryPeriodMs)}): raise --renew-deadline or lower --retry-period`,
    );
  }
  if (drainTimeoutMs > 0 && s.listen === undefined) throw badFlag('drain-timeout', a['drain-timeout'], `needs --listen: ${drain.endpoint}`);
  if (drainTimeoutMs > 0 && s.statusDir === undefined)
    throw badFlag('drain-timeout', a['drain-timeout'], 'needs --status-dir: the app proves it is the app with the drain key written there');
  // A report only with the key in the status directory (src/sidecar/drain-key.ts).
  return { ...s, drainTimeoutMs, drainKey: true, leaderEndpoints: resolveLeaderEndpoints(a, s.store.backend), sharding };
}

/** DNS-1123 subdomain: an EndpointSlice's name. */
const OBJECT_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** `--leader-endpoints` and `--pod-ip`: both or neither, on the kubernetes backend. */
function resolveLeaderEndpoints(a: SidecarArgs, backend: string): { slice: string; ip: string } | undefined {
  const slice = a['leader-endpoints'];
  const ip = a['pod-ip'];
  if (slice === undefined) {
    if (ip !== undefined) throw badFlag('pod-ip', ip, 'is used only with --leader-endpoints (the address it writes)');
    return undefined;
  }
  if (backend !== 'kubernetes') throw badFlag('leader-endpoints', slice, 'needs --backend kubernetes (it writes an EndpointSlice)');
  if (slice.length > 253 || !OBJECT_NAME.test(slice)) {
    throw badFlag('leader-endpoints', slice, "must be an EndpointSlice's name, a DNS-1123 subdomain (lowercase letters, digits, '-' and '.')");
  }
  if (ip === undefined) throw badFlag('leader-endpoints', slice, "needs --pod-ip: this pod's address, from the downward API's status.podIP");
  if (isIP(ip) === 0) throw badFlag('pod-ip', ip, 'must be an IPv4 or IPv6 address');
  return { slice, ip };
}

/**
 * An exec check runs without the store's secrets (probeEnvironment): it would otherwise inherit
 * LEASEHOLD_POSTGRES_URL and PGPASSWORD, which `run` keeps from its own command too. Every flag
 * of the sidecar's table is leasehold's configuration, the store's among them.
 */
function withProbeEnvironment(health: ProbeOptions | undefined, backend: string, env: NodeJS.ProcessEnv): ProbeOptions | undefined {
  if (!health || !('exec' in health.probe)) return health;
  return { ...health, probe: { ...health.probe, env: probeEnvironment(env, Object.keys(SIDECAR_COMMAND_OPTIONS), backend) } };
}

/**
 * The database must not be in the status directory: the sidecar replaces the files there
 * (status.json, is-leader, drain-key, ...), and the first status write over the database
 * would end every candidate's election on it; its journal files would sit beside what the app
 * reads. Both paths are compared as the system reaches them (resolveThroughExisting).
 */
function checkDbOutsideStatusDir(db: string, statusDir: string): void {
  if (!isInside(resolveThroughExisting(db), resolveThroughExisting(statusDir))) return;
  throw badFlag(
    'db',
    db,
    `must not be in the status directory ${statusDir}: the sidecar replaces the files there (status.json, is-leader, drain-key, ...), which would overwrite the database; put it elsewhere`,
  );
}

/**
 * Validates every sidecar flag and path before anything is created; throws one clear error.
 * `env` is main()'s: an exec check's environment is made from it.
 */
export function resolveSidecar(f: FlagValues<CandidateArgs>, env: NodeJS.ProcessEnv) {
  const a = f.values;
  const election = resolveElection(f);
  let listen: { host: string; port: number } | undefined;
  if (a.listen !== 'off') {
    try {
      listen = parseListen(a.listen);
    } catch (err) {
      throw badFlag('listen', a.listen, describeError(err));
    }
  }
  const readyWhen = a['ready-when'];
  if (!isReadyWhen(readyWhen)) throw badFlag('ready-when', readyWhen, 'must be leader or elected-any');
  if (a['pod-label'] && election.store.backend !== 'kubernetes') {
    throw badFlag('pod-label', true, 'needs --backend kubernetes (it labels the pod named by --identity)');
  }
  const health = withProbeEnvironment(resolveHealth(a), election.store.backend, env);
  if (health && listen && probesOwnListener(listen, health.probe)) {
    const flag = a['health-http'] !== undefined ? 'health-http' : 'health-tcp';
    throw badFlag(
      flag,
      a[flag],
      `must reach the app, not this sidecar's own --listen address (${a.listen}): leasehold's /readyz answers 503 until it leads, so this candidate would never lead, and its /healthz says nothing of the app`,
    );
  }
  if (a['status-dir'] !== undefined) {
    checkStatusDir(a['status-dir']);
    if (election.store.backend === 'sqlite') checkDbOutsideStatusDir(a.db, a['status-dir']);
  }
  // The --db file's checks (an SQLite file, on a local filesystem) run once, as the store opens:
  // before anything is written.
  return { ...election, listen, statusDir: a['status-dir'], readyWhen, podLabel: a['pod-label'], health };
}

/**
 * A --listen address that cannot be used is bad input, found before anything is written (the
 * --db file, the status files): a host that does not resolve, or an address nobody may bind
 * (in use by another process, not on this machine, a privileged port). Bound once and closed
 * at once; another process could take it in between, and then the sidecar's own bind fails as
 * before, only later.
 */
export async function checkListenAddress(listen: { host: string; port: number } | undefined, raw: string): Promise<void> {
  if (!listen) return;
  try {
    await lookup(listen.host);
  } catch (err) {
    throw badFlag('listen', raw, `the host ${JSON.stringify(listen.host)} does not resolve (${(err as NodeJS.ErrnoException).code ?? 'lookup failed'})`);
  }
  // node:http's server (loaded already, see node-http.ts) binds as a plain one would.
  const server = http.createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: listen.host, port: listen.port, exclusive: true }, resolve);
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = BIND_REFUSALS[code ?? ''] ?? describeError(err);
    throw badFlag('listen', raw, `cannot listen there: ${why}`);
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

const BIND_REFUSALS: Record<string, string> = {
  EADDRINUSE: 'the address is in use by another process (choose another port, or --listen off)',
  EADDRNOTAVAIL: "the address is not one of this machine's",
  EACCES: 'a port under 1024 needs privileges this process lacks (choose a port of 1024 or above)',
};
