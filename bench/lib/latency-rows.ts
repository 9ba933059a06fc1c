/**
 * The Kubernetes handoff and failover rows (bench/scenarios/kubernetes.ts): which implementation leads,
 * which stands by, how many candidates, which signal; their keys in the results, and the
 * `--only LEADER[/STANDBY]:SIGNAL[:CANDIDATES]` spelling that runs one of them.
 */
import type { Impl } from './candidates.js';

export type Signal = 'SIGTERM' | 'SIGKILL';

export interface LatencyRow {
  leader: Impl;
  standby: Impl;
  /** The leader and its standbys. */
  candidates: number;
  signal: Signal;
}

const IMPLS: readonly Impl[] = ['leasehold', 'leasehold-jitless', 'leasehold-jit', 'client-go'];
const SIGNALS: readonly Signal[] = ['SIGTERM', 'SIGKILL'];

/** The full run's rows, in the order they run. */
export const LATENCY_ROWS: readonly LatencyRow[] = [
  { leader: 'leasehold', standby: 'leasehold', candidates: 2, signal: 'SIGTERM' },
  { leader: 'leasehold', standby: 'leasehold', candidates: 2, signal: 'SIGKILL' },
  { leader: 'client-go', standby: 'client-go', candidates: 2, signal: 'SIGTERM' },
  { leader: 'client-go', standby: 'client-go', candidates: 2, signal: 'SIGKILL' },
  { leader: 'leasehold', standby: 'leasehold', candidates: 3, signal: 'SIGTERM' },
  // A rollout that replaces client-go replicas by leasehold ones, on a shared Lease.
  { leader: 'client-go', standby: 'leasehold', candidates: 2, signal: 'SIGTERM' },
];

/** "leasehold SIGTERM" for two of a kind (the keys the summary and the chart read), else with the rest spelled out. */
export function latencyKey(r: LatencyRow): string {
  const who = r.leader === r.standby ? r.leader : `${r.leader} to ${r.standby}`;
  return `${who} ${r.signal}${r.candidates === 2 ? '' : `, ${r.candidates} candidates`}`;
}

/** A DNS label for the row's namespace. */
export const latencyNamespace = (r: LatencyRow): string =>
  `lat-${r.leader}${r.leader === r.standby ? '' : `-${r.standby}`}-${r.candidates}-${r.signal.toLowerCase()}`;

/** Parses `LEADER[/STANDBY]:SIGNAL[:CANDIDATES]`, e.g. `leasehold:SIGTERM`, `leasehold:SIGTERM:3`, `client-go/leasehold:SIGTERM`. */
export function parseLatencyRow(spec: string): LatencyRow {
  const bad = (why: string) => new Error(`--only ${spec}: ${why}; expected LEADER[/STANDBY]:SIGNAL[:CANDIDATES], e.g. client-go/leasehold:SIGTERM`);
  const [impls = '', signal = '', count = '2', ...rest] = spec.split(':');
  if (rest.length > 0) throw bad('too many parts');
  const [leader = '', standby = leader, ...more] = impls.split('/');
  if (more.length > 0) throw bad('at most one STANDBY');
  for (const i of [leader, standby]) if (!IMPLS.includes(i as Impl)) throw bad(`unknown implementation ${JSON.stringify(i)} (${IMPLS.join(', ')})`);
  if (!SIGNALS.includes(signal as Signal)) throw bad(`SIGNAL must be ${SIGNALS.join(' or ')}`);
  const candidates = Number(count);
  if (!Number.isInteger(candidates) || candidates < 2 || candidates > 10) throw bad('CANDIDATES must be a whole number from 2 to 10');
  return { leader: leader as Impl, standby: standby as Impl, candidates, signal: signal as Signal };
}
