/**
 * One read of a lease as `leasehold status` shows it (once, or on each change with --watch):
 * its holder, token and expiry by this machine's clock, and with --status-dir the candidate whose
 * sidecar writes that directory.
 */
import type { LeaseStore } from '../src/backends/lease-store.js';
import { BackendUnavailableError } from '../src/errors.js';
import { readCandidate, type CandidateView } from './status-candidate.js';

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

/** Bound on the one read, ms. */
const READ_TIMEOUT_MS = 10_000;

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
