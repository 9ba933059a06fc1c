import type { Argv } from 'yargs';
import type { LeaseStore } from '../src/backends/lease-store.js';
import { openStore, type StoreSettings } from '../src/backends/open-store.js';
import { BackendUnavailableError, describeError, isLeaseholdError } from '../src/errors.js';
import { formatDuration } from '../src/config/duration.js';
import { resolveStore, storeFlags } from './election-flags.js';
import type { FlagsOf } from './env-flags.js';
import { escapeForTerminal, jsonForTerminal } from '../src/util/escape-control.js';
import { watchLease } from './status-watch.js';
import { formatCandidate, readCandidate, type CandidateView } from './status-candidate.js';

export type StatusArgs = FlagsOf<typeof statusFlags>;

export function statusFlags<T>(y: Argv<T>) {
  return storeFlags(y)
    .option('json', { type: 'boolean', default: false, describe: 'Print one JSON object (for scripts)' })
    .option('watch', {
      type: 'boolean',
      default: false,
      describe: 'Print one line per change of holder, token or state until interrupted (JSON lines with --json)',
    })
    .option('status-dir', {
      type: 'string',
      describe: "Also show the candidate whose sidecar writes this status directory: leader, campaigning, or standing aside (its app's health) and why",
    });
}

export interface LeaseReport {
  lease: string;
  backend: string;
  location: string;
  found: boolean;
  /** held: a holder renewed within its lease duration by this machine's clock; expired; released. */
  state?: 'held' | 'released' | 'expired';
  holder?: string;
  fencingToken?: number;
  leaseDurationSeconds?: number;
  acquiredAt?: string | null;
  renewedAt?: string | null;
  /** renewedAt + leaseDurationSeconds: an estimate on this machine's wall clock. */
  expiresAt?: string | null;
  /** With --status-dir: that candidate, as its sidecar sees itself. */
  candidate?: CandidateView;
}

/** The exit status when the store did not answer within its bound (an unreachable server, a locked table). */
export const EXIT_STORE_UNAVAILABLE = 3;
/** Bound on the one read, ms. */
const READ_TIMEOUT_MS = 10_000;

/**
 * Reads the lease once, writing nothing. Exit 0 when found, 1 when there is no such lease, 3
 * (with one line on stderr) when the store does not answer in time: every request is bounded,
 * so a locked table or a hung server never makes it hang.
 */
export async function runStatus(a: StatusArgs): Promise<number> {
  const { store: settings, lease } = resolveStore(a);
  try {
    return await readAndPrint(a, settings, lease);
  } catch (err) {
    if (!isLeaseholdError(err, 'LEASEHOLD_ERR_BACKEND_UNAVAILABLE')) throw printable(err);
    process.stderr.write(`leasehold: ${escapeForTerminal(describeError(err).replace(/\s*\n\s*/g, ' '))}\n`);
    return EXIT_STORE_UNAVAILABLE;
  }
}

/**
 * The error with its message (and its cause's) escaped for a terminal, class and code kept: a
 * message may quote a value read from the store (an invalid token), which any peer can write.
 */
function printable(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  err.message = escapeForTerminal(err.message);
  if (err.cause instanceof Error) err.cause.message = escapeForTerminal(err.cause.message);
  return err;
}

async function readAndPrint(a: StatusArgs, settings: StoreSettings, lease: string): Promise<number> {
  // A watch follows a replaced SQLite file: say so on stderr, as its other notices.
  const notice = (message: string) => void process.stderr.write(`leasehold: ${escapeForTerminal(message)}\n`);
  const log = { debug() {}, info() {}, warn: notice, error: notice };
  const store = await openStore({ ...settings, readonly: true, log });
  try {
    if (a.watch) return await watchUntilSignal(store, lease, a.json, a['status-dir']);
    const report = await readReport(store, lease, new Date(), a['status-dir']);
    process.stdout.write(a.json ? jsonForTerminal(report) + '\n' : formatReport(report, new Date()));
    return report.found ? 0 : 1;
  } finally {
    await store.close();
  }
}

/** `--watch`: until SIGINT, SIGTERM or SIGHUP, then exit 0. */
async function watchUntilSignal(store: LeaseStore, lease: string, json: boolean, statusDir: string | undefined): Promise<number> {
  const stop = new AbortController();
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  const onSignal = () => stop.abort();
  for (const s of signals) process.once(s, onSignal);
  try {
    await watchLease(store, lease, { json, write: (line) => process.stdout.write(line), signal: stop.signal, statusDir });
  } finally {
    for (const s of signals) process.off(s, onSignal);
  }
  return 0;
}

export async function readReport(store: LeaseStore, lease: string, now: Date, statusDir?: string): Promise<LeaseReport> {
  const base = { lease, backend: store.backend, location: store.location, ...(statusDir === undefined ? {} : { candidate: readCandidate(statusDir) }) };
  // Bounded on our side too, for a server that accepts the request and never answers.
  const bound = new AbortController();
  const timer = setTimeout(
    () => bound.abort(new BackendUnavailableError(`${store.backend} store ${store.location} did not answer within ${READ_TIMEOUT_MS} ms`)),
    READ_TIMEOUT_MS,
  );
  const got = await store.get(lease, { signal: bound.signal }).finally(() => clearTimeout(timer));
  if (!got) return { ...base, found: false };
  const r = got.record;
  // Any peer can store any number: an expiry past what a Date holds (1e308 s) or not a number is unknown.
  const expiresMs = r.renewTime ? r.renewTime.getTime() + r.leaseDurationSeconds * 1000 : NaN;
  const expires = Number.isNaN(new Date(expiresMs).getTime()) ? null : new Date(expiresMs);
  const state = r.holderIdentity === '' ? 'released' : expires && expires.getTime() <= now.getTime() ? 'expired' : 'held';
  return {
    ...base,
    found: true,
    state,
    holder: r.holderIdentity,
    fencingToken: r.leaseTransitions,
    leaseDurationSeconds: r.leaseDurationSeconds,
    acquiredAt: r.acquireTime?.toISOString() ?? null,
    renewedAt: r.renewTime?.toISOString() ?? null,
    expiresAt: expires?.toISOString() ?? null,
  };
}

export function formatReport(r: LeaseReport, now: Date): string {
  if (!r.found) {
    const candidate = r.candidate ? `sidecar  ${formatCandidate(r.candidate)}\n` : '';
    return `lease ${r.lease} not found in ${r.backend} store ${r.location}\n${candidate}`;
  }
  const rel = (iso: string | null | undefined) => {
    if (!iso) return '-';
    const d = new Date(iso).getTime() - now.getTime();
    const amount = formatDuration(Math.round(Math.abs(d) / 100) * 100);
    return `${iso} (${d >= 0 ? `in ${amount}` : `${amount} ago`})`;
  };
  const rows: [string, string][] = [
    ['lease', `${r.lease} (${r.backend}: ${r.location})`],
    ['state', r.state ?? '-'],
    // The holder comes from the store, written by any peer: escaped, it cannot move the cursor, forge a line or reorder the screen.
    ['holder', r.holder === '' ? '(none: released)' : r.holder === undefined ? '-' : escapeForTerminal(r.holder)],
    ['token', String(r.fencingToken)],
    ['acquired', rel(r.acquiredAt)],
    ['renewed', rel(r.renewedAt)],
    ['expires', r.state === 'released' || !r.expiresAt ? '-' : `${rel(r.expiresAt)}, by this machine's clock`],
    ...(r.candidate ? [['sidecar', formatCandidate(r.candidate)] as [string, string]] : []),
  ];
  return rows.map(([k, v]) => `${k.padEnd(9)}${v}`).join('\n') + '\n';
}
