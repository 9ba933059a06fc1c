/**
 * The app-health flags of `sidecar` and `run` (docs/health.md, "In the sidecar and run"): one
 * source (--health-http, --health-tcp or --health-exec) and the kubelet's probe settings. Each
 * bad value is one line naming the flag and the rule. The tuning flags have no table default,
 * so that one given without a source is seen (and refused) rather than silently ignored.
 */
import { formatDuration } from '../src/config/duration.js';
import { HEALTH_DEFAULTS, resolveProbeOptions, type ProbeOptions, type ProbeTarget } from '../src/health/health-settings.js';
import { duration } from './election-flags.js';
import type { FlagTable } from './flag-table.js';
import { badFlag, checkFlag } from './cli-errors.js';

/** The shell --health-exec runs its command with: a command line, as Docker's HEALTHCHECK CMD-SHELL. */
export const HEALTH_EXEC_SHELL = '/bin/sh';

const SOURCES = ['health-http', 'health-tcp', 'health-exec'] as const;
const TUNING = ['health-period', 'health-timeout', 'health-initial-delay', 'health-failure-threshold', 'health-success-threshold', 'health-hold-down'] as const;

const d = formatDuration;
export const HEALTH_OPTIONS = {
  'health-http': {
    type: 'string',
    describe: "The app's health: GET this http:// URL (http://127.0.0.1:8080/healthz); healthy on 200-399. Without a health source, every candidate campaigns",
  },
  'health-tcp': { type: 'string', describe: "The app's health: connect to [HOST:]PORT (host default 127.0.0.1)" },
  'health-exec': { type: 'string', describe: `The app's health: run this command line with ${HEALTH_EXEC_SHELL} -c; healthy on exit 0` },
  'health-period': { type: 'string', describe: `How often the app is probed (default ${d(HEALTH_DEFAULTS.periodMs)})` },
  'health-timeout': { type: 'string', describe: `A probe not answered within this fails (default ${d(HEALTH_DEFAULTS.timeoutMs)}; at most --health-period)` },
  'health-initial-delay': { type: 'string', describe: `The first probe runs this long after the start (default ${d(HEALTH_DEFAULTS.initialDelayMs)})` },
  'health-failure-threshold': {
    type: 'string',
    describe: `Failed probes in a row that make the app unhealthy: the leader steps down (default ${HEALTH_DEFAULTS.failureThreshold})`,
  },
  'health-success-threshold': {
    type: 'string',
    describe: `Passed probes in a row that make the app healthy again (default ${HEALTH_DEFAULTS.successThreshold})`,
  },
  'health-hold-down': {
    type: 'string',
    describe: `After the app was unhealthy, how long it must stay healthy before this candidate campaigns again (default ${d(HEALTH_DEFAULTS.holdDownMs)}; 0s: off)`,
  },
} as const satisfies FlagTable;

export type HealthArgs = { [K in keyof typeof HEALTH_OPTIONS]?: string };

const COUNT_RULE = 'must be a whole number from 1 to 1000000';

function count(flag: string, text: string): number {
  if (!/^[0-9]{1,7}$/.test(text) || Number(text) < 1 || Number(text) > 1_000_000) throw badFlag(flag, text, COUNT_RULE);
  return Number(text);
}

/** `[HOST:]PORT`, `[::1]:PORT` for an IPv6 address; the host defaults to 127.0.0.1. */
function tcpTarget(text: string): ProbeTarget {
  const m = /^(?:(\[[0-9A-Fa-f:.]+\]|[^\s:/[\]]+):)?([0-9]{1,5})$/.exec(text);
  const port = m ? Number(m[2]) : NaN;
  if (!m || port < 1 || port > 65535) throw badFlag('health-tcp', text, 'must be [HOST:]PORT with a port from 1 to 65535 (5432, 127.0.0.1:5432, [::1]:5432)');
  const host = m[1]?.replace(/^\[(.*)\]$/, '$1');
  return { tcp: host === undefined ? { port } : { host, port } };
}

function target(a: HealthArgs): ProbeTarget | undefined {
  const given = SOURCES.filter((f) => a[f] !== undefined);
  if (given.length > 1) {
    throw badFlag(given[1]!, a[given[1]!], `give at most one health source: --${given[0]} is given too`);
  }
  if (a['health-http'] !== undefined) return { http: a['health-http'] };
  if (a['health-tcp'] !== undefined) return tcpTarget(a['health-tcp']);
  if (a['health-exec'] !== undefined) return { exec: [HEALTH_EXEC_SHELL, '-c', a['health-exec']] };
  return undefined;
}

/** The probe options the flags give, checked; undefined without a source (no health: today's behaviour). */
export function resolveHealth(a: HealthArgs): ProbeOptions | undefined {
  const probe = target(a);
  if (probe === undefined) {
    const stray = TUNING.find((f) => a[f] !== undefined);
    if (stray) throw badFlag(stray, a[stray], 'needs a health source: --health-http, --health-tcp or --health-exec');
    return undefined;
  }
  const periodMs = a['health-period'] === undefined ? HEALTH_DEFAULTS.periodMs : duration('health-period', a['health-period']);
  const timeoutMs = a['health-timeout'] === undefined ? HEALTH_DEFAULTS.timeoutMs : duration('health-timeout', a['health-timeout']);
  if (timeoutMs > periodMs) {
    // Told against the flag the user gave: a short period with the default timeout names the period.
    if (a['health-timeout'] === undefined) {
      throw badFlag('health-period', a['health-period'], `must be at least --health-timeout (${d(timeoutMs)}, its default): one probe at a time`);
    }
    throw badFlag('health-timeout', a['health-timeout'], `must be at most --health-period (${d(periodMs)}): one probe at a time`);
  }
  const options: ProbeOptions = {
    probe,
    periodMs,
    timeoutMs,
    initialDelayMs: a['health-initial-delay'] === undefined ? HEALTH_DEFAULTS.initialDelayMs : duration('health-initial-delay', a['health-initial-delay'], 0),
    failureThreshold:
      a['health-failure-threshold'] === undefined ? HEALTH_DEFAULTS.failureThreshold : count('health-failure-threshold', a['health-failure-threshold']),
    successThreshold:
      a['health-success-threshold'] === undefined ? HEALTH_DEFAULTS.successThreshold : count('health-success-threshold', a['health-success-threshold']),
    holdDownMs: a['health-hold-down'] === undefined ? HEALTH_DEFAULTS.holdDownMs : duration('health-hold-down', a['health-hold-down'], 0),
  };
  // The library's own rules (an http:// URL without credentials) are told against the flag.
  checkFlag('health-http', a['health-http'], () => resolveProbeOptions(options));
  return options;
}
