import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { durationRangeError, formatDuration, parseDuration } from '../src/config/duration.js';
import { BACKENDS, type BackendName, type StoreSettings } from '../src/backends/open-store.js';
import { DEFAULT_CONTENTION_WINDOW_MS } from '../src/election/elector-config.js';
import {
  DEFAULT_LEASE_DURATION_MS,
  DEFAULT_RENEW_DEADLINE_MS,
  DEFAULT_RETRY_PERIOD_MS,
  resolveElectionConfig,
  validateKubernetesLeaseDuration,
  validateLeaseName,
  validateTimings,
  type ElectionConfig,
  type Timings,
} from '../src/config/election-options.js';
import { describeError } from '../src/errors.js';
import { clientConfig, parseTableName } from '../src/backends/postgres/config.js';
import { badFlag, badTogether, checkFlag } from './cli-errors.js';
import { isGiven, type ArgsOf, type FlagTable, type FlagValues, type Origins } from './flag-table.js';

/**
 * The flags every command that touches a lease shares (cmd/flag-table.ts). Each is also
 * LEASEHOLD_<FLAG>.
 */
export const STORE_OPTIONS = {
  backend: { type: 'string', default: 'sqlite', describe: `Where leases live: ${BACKENDS.join(' | ')}` },
  lease: { type: 'string', default: 'leasehold', describe: 'Lease name (a DNS-1123 subdomain)' },
  db: { type: 'string', default: './.leasehold/leases.db', describe: 'sqlite: the shared database file' },
  namespace: {
    type: 'string',
    describe: "kubernetes: the Lease's namespace (default: the kubeconfig context's, in a pod the pod's own, else default)",
  },
  'postgres-url': {
    type: 'string',
    describe: 'postgres: postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=...] (default: the PG* variables and ~/.pgpass); never logged',
  },
  'postgres-table': {
    type: 'string',
    default: 'public.leases',
    describe: 'postgres: the lease table, schema.table (created on first use if the role may)',
  },
  kubeconfig: { type: 'string', describe: 'kubernetes: kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster)' },
} as const satisfies FlagTable;

/** The election's timings: the sidecar's, `run`'s and the operator's own election share them. */
export const TIMING_OPTIONS = {
  'lease-duration': {
    type: 'string',
    default: formatDuration(DEFAULT_LEASE_DURATION_MS),
    describe: 'How long others wait on an unchanged lease before taking it',
  },
  'renew-deadline': {
    type: 'string',
    default: formatDuration(DEFAULT_RENEW_DEADLINE_MS),
    describe: 'The leader steps down if it cannot renew within this',
  },
  'retry-period': {
    type: 'string',
    default: formatDuration(DEFAULT_RETRY_PERIOD_MS),
    describe: 'Interval between attempts (standbys add up to 120% jitter)',
  },
} as const satisfies FlagTable;

/** A campaign's flags: the store's, then the timings', in the order --help lists them. */
export const ELECTION_OPTIONS = {
  ...STORE_OPTIONS,
  'allow-network-filesystem': {
    type: 'boolean',
    default: false,
    describe: 'sqlite: accept a --db on NFS/SMB/FUSE (only if every candidate runs on this one machine)',
  },
  identity: { type: 'string', describe: 'This candidate\'s unique identity (default: "<hostname>_<random>")' },
  ...TIMING_OPTIONS,
  'contention-window': {
    type: 'string',
    default: formatDuration(DEFAULT_CONTENTION_WINDOW_MS),
    describe: 'When the lease expires, standbys try within this (5 × after a release), most near its end: few tries however many standbys',
  },
  'release-on-exit': { type: 'boolean', default: true, describe: 'Release the lease on SIGTERM/SIGINT/SIGHUP (--no-release-on-exit to keep it)' },
  'log-format': { type: 'string', default: 'json', describe: 'json | text (logs go to stderr)' },
  'log-level': { type: 'string', default: 'info', describe: 'debug | info | warn | error' },
} as const satisfies FlagTable;

export type StoreArgs = ArgsOf<typeof STORE_OPTIONS>;
export type TimingArgs = ArgsOf<typeof TIMING_OPTIONS>;
export type ElectionArgs = ArgsOf<typeof ELECTION_OPTIONS>;

/** The election's resolved options (lease, identity, timings, contention window), then the CLI's own. */
export interface ElectionSettings extends ElectionConfig {
  store: StoreSettings;
  releaseOnCancel: boolean;
  logFormat: 'json' | 'text';
  logLevel: 'debug' | 'info' | 'warn' | 'error';
}

/**
 * The store flags that only one backend reads. Given for another (on the command line or by its
 * variable) each is refused, never ignored: a --postgres-url without --backend postgres would
 * leave every machine on its own SQLite file, each leading with token 1.
 */
const BACKEND_OF_FLAG: Readonly<Record<string, BackendName>> = {
  db: 'sqlite',
  'allow-network-filesystem': 'sqlite',
  'postgres-url': 'postgres',
  'postgres-table': 'postgres',
  namespace: 'kubernetes',
  kubeconfig: 'kubernetes',
};

/** Refuses the first store flag given for a backend other than `backend` (see BACKEND_OF_FLAG). */
function checkStoreFlagsFit(backend: BackendName, values: Readonly<Record<string, unknown>>, origins: Origins): void {
  const stray = Object.keys(BACKEND_OF_FLAG).find((flag) => BACKEND_OF_FLAG[flag] !== backend && isGiven(origins, flag));
  if (stray === undefined) return;
  const wanted = BACKEND_OF_FLAG[stray]!;
  const how = origins.backend;
  const chosen = how?.from === 'default' ? `${backend} (the default)` : how?.from === 'variable' ? `${backend} (${how.variable})` : backend;
  const from = origins[stray];
  const leaveOut = from?.from === 'variable' ? `unset ${from.variable}` : `leave --${stray} out`;
  throw badFlag(stray, values[stray], `only --backend ${wanted} reads it, and the backend is ${chosen}: give --backend ${wanted}, or ${leaveOut}`);
}

/** The store's flags and the lease's name; `checkLease` false: a campaign's election rules check it (resolveElection). */
export function resolveStore(f: FlagValues<StoreArgs>, checkLease = true): { store: StoreSettings; lease: string } {
  const a = f.values;
  if (!(BACKENDS as readonly string[]).includes(a.backend)) throw badFlag('backend', a.backend, `must be one of ${BACKENDS.join(', ')}`);
  checkStoreFlagsFit(a.backend as BackendName, a, f.origins);
  if (checkLease) checkFlag('lease', a.lease, () => validateLeaseName(a.lease));
  if (a.backend === 'sqlite' && a.db.trim() === '') throw badFlag('db', a.db, 'must be a file path');
  if (a.backend === 'postgres') {
    checkFlag('postgres-table', a['postgres-table'], () => parseTableName(a['postgres-table']));
    clientConfig(a['postgres-url'], 5_000); // refused as `--postgres-url: ...`, never with the URL (it may hold a password)
  }
  if (a.namespace !== undefined && !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(a.namespace)) {
    throw badFlag('namespace', a.namespace, 'must be a DNS-1123 label (lowercase letters, digits and -, at most 63 characters)');
  }
  return {
    lease: a.lease,
    store: {
      backend: a.backend as BackendName,
      db: a.db,
      namespace: a.namespace,
      kubeconfig: a.kubeconfig,
      postgresUrl: a['postgres-url'],
      postgresTable: a['postgres-table'],
    },
  };
}

/** A duration flag: parsed, whole milliseconds, and within what a timer can wait. */
export function duration(flag: string, text: string, min = 1): number {
  const ms = parseDuration(text);
  if (ms === null) throw badFlag(flag, text, 'expected a duration such as 15s, 500ms or 1m30s');
  const range = durationRangeError(ms, min);
  if (range) throw badFlag(flag, text, range);
  return ms;
}

/**
 * The three timing flags as validated Timings (validateTimings' rules: leaseDuration >
 * renewDeadline > 1.2 × retryPeriod > 0), or one InvalidConfigError naming the flags and the
 * rule. `kubernetes`: a Lease stores whole seconds, so --lease-duration must be whole seconds.
 */
export function resolveTimings(f: FlagValues<TimingArgs>, kubernetes: boolean): Timings {
  const a = f.values;
  const timings = timingFlags(a);
  try {
    validateTimings(timings);
  } catch (err) {
    throw timingsRefusal(a, err);
  }
  if (kubernetes) checkFlag('lease-duration', a['lease-duration'], () => validateKubernetesLeaseDuration(timings.leaseDurationMs));
  return timings;
}

/** The timing flags parsed, each a duration a timer can wait; their rules are checked by the caller. */
function timingFlags(a: TimingArgs): Timings {
  return {
    leaseDurationMs: duration('lease-duration', a['lease-duration']),
    renewDeadlineMs: duration('renew-deadline', a['renew-deadline']),
    retryPeriodMs: duration('retry-period', a['retry-period']),
  };
}

/** A timing rule broken, told with each value as the user set it: the CLI names a variable's as that variable. */
function timingsRefusal(a: TimingArgs, err: unknown): Error {
  const flags = ['lease-duration', 'renew-deadline', 'retry-period'] as const;
  return badTogether(
    'invalid timings',
    flags.map((flag) => [flag, a[flag]] as const),
    describeError(err),
  );
}

/**
 * Turns raw flags into validated settings, or throws one InvalidConfigError naming the flag and
 * rule. The election's rules are checked once, by resolveElectionConfig, each refusal told
 * against its flag.
 */
export function resolveElection(f: FlagValues<ElectionArgs>): ElectionSettings {
  const a = f.values;
  const { store: located, lease } = resolveStore(f, false);
  const store: StoreSettings = { ...located, allowNetworkFilesystem: a['allow-network-filesystem'] };
  const timings = timingFlags(a);
  const contentionWindowMs = duration('contention-window', a['contention-window'], 0);
  const identity = a.identity ?? `${hostname()}_${randomBytes(4).toString('hex')}`;
  const config = resolveElectionConfig({ lease, identity, ...timings, contentionWindowMs, backend: store.backend }, 'duration', (rule, err) => {
    const rejected = err.rule ?? err.message;
    if (rule === 'lease') return badFlag('lease', lease, rejected);
    if (rule === 'identity') return badFlag('identity', identity, rejected);
    if (rule === 'timings') return timingsRefusal(a, err);
    if (rule === 'kubernetesLeaseDuration') return badFlag('lease-duration', a['lease-duration'], rejected);
    // Told against the flag it is bounded by, as the user wrote it.
    return badFlag('contention-window', a['contention-window'], `must be at most --lease-duration (${a['lease-duration']})`);
  });
  if (a['log-format'] !== 'json' && a['log-format'] !== 'text') throw badFlag('log-format', a['log-format'], 'must be json or text');
  if (!['debug', 'info', 'warn', 'error'].includes(a['log-level'])) throw badFlag('log-level', a['log-level'], 'must be debug, info, warn or error');
  return {
    ...config,
    store,
    releaseOnCancel: a['release-on-exit'],
    logFormat: a['log-format'],
    logLevel: a['log-level'] as ElectionSettings['logLevel'],
  };
}
