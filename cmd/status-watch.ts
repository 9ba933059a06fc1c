import type { LeaseStore } from '../src/backends/lease-store.js';
import { describeError } from '../src/errors.js';
import { escapeForTerminal, jsonForTerminal } from '../src/util/escape-control.js';
import { readReport, type LeaseReport } from './lease-report.js';
import { formatCandidate } from './status-candidate.js';

/** A re-read this often catches what a watch event can miss (events are hints) and what no write marks: an expiry. */
export const WATCH_REREAD_MS = 1_000;

/** What makes a new line: a renewal alone (a later expiresAt, same holder and token) does not. */
export function changeKey(r: LeaseReport): string {
  const c = r.candidate;
  const candidate = c && !('error' in c) ? [c.isLeader, c.standingAside?.reason ?? null, c.stoppedAt !== null] : (c?.error ?? null);
  return JSON.stringify([r.found, r.state, r.holder, r.fencingToken, candidate]);
}

/** One line per change: the time seen, then state, holder, token and expiry. */
export function formatWatchLine(r: LeaseReport, at: Date): string {
  const candidate = r.candidate ? `  sidecar ${formatCandidate(r.candidate)}` : '';
  if (!r.found) return `${at.toISOString()}  absent    lease ${r.lease} not found in ${r.backend} store ${r.location}${candidate}\n`;
  const holder = r.holder === '' ? '(none)' : escapeForTerminal(r.holder ?? '-');
  const expires = r.state === 'released' ? '-' : (r.expiresAt ?? '-');
  return `${at.toISOString()}  ${(r.state ?? '-').padEnd(8)}  holder ${holder}  token ${r.fencingToken}  expires ${expires}${candidate}\n`;
}

export interface WatchOptions {
  json: boolean;
  write: (line: string) => void;
  /** Where a store's failure is told (one line each, `leasehold: ...`): stderr. */
  notice: (line: string) => void;
  /** Ends the watch (SIGINT, SIGTERM). */
  signal: AbortSignal;
  /** --status-dir: the candidate to show with the lease; a change of its state makes a line too. */
  statusDir?: string;
}

/**
 * Prints the lease's state, then one line each time its holder, token or state changes
 * (released; expired, which no write announces), until `signal` aborts. The store's watch
 * (when it has one) makes a change show at once; a re-read every second covers the rest. A
 * store that stops answering gets one line on stderr and is tried again; the watch goes on.
 */
export async function watchLease(store: LeaseStore, lease: string, o: WatchOptions): Promise<void> {
  let lastKey: string | null = null;
  let lastError: string | null = null;
  let wake: (() => void) | null = null;
  let dirty = true;
  const poke = () => {
    dirty = true;
    wake?.();
  };
  const unwatch = store.watch?.(lease, poke);
  o.signal.addEventListener('abort', poke, { once: true });
  try {
    while (!o.signal.aborted) {
      let nextMs = WATCH_REREAD_MS;
      if (dirty) {
        dirty = false;
        try {
          const now = new Date();
          const r = await readReport(store, lease, now, o.statusDir);
          lastError = null;
          const key = changeKey(r);
          if (key !== lastKey && !o.signal.aborted) {
            lastKey = key;
            o.write(o.json ? jsonForTerminal({ observedAt: now.toISOString(), ...r }) + '\n' : formatWatchLine(r, now));
          }
          // Wake right after the expiry this machine's clock expects, so "expired" shows on time.
          const untilExpiry = r.state === 'held' && r.expiresAt ? Date.parse(r.expiresAt) - now.getTime() + 1 : Infinity;
          nextMs = Math.max(1, Math.min(WATCH_REREAD_MS, untilExpiry));
        } catch (err) {
          // A message may quote a value read from the store (an invalid token): escaped, it stays one line and inert.
          const message = escapeForTerminal(describeError(err).replace(/\s*\n\s*/g, ' '));
          if (message !== lastError) o.notice(`leasehold: ${message} (still watching)\n`);
          lastError = message;
        }
      }
      if (dirty) continue; // an event came during the read
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          dirty = true;
          resolve();
        }, nextMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = null;
    }
  } finally {
    unwatch?.();
  }
}
