/**
 * The failover loop the SQLite and PostgreSQL parts share (bench/scenarios/sqlite.ts, bench/scenarios/postgres.ts):
 * 2 or 3 `leasehold sidecar` processes on one lease, the leader signalled, timed from the signal
 * to a standby's status file saying leader (the app's view), polled every 2 ms. Each trial's
 * signalled leader is replaced by a fresh standby, so every trial has the same number of candidates.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { selfReportedSinceFree } from './lease-timeline.js';
import { waitFor } from '../../test/support/cli.js';
import { VOLUNTEER_WINDOW_MS } from '../../src/election/successor.js';
import { startSidecar, validLeaders, type Candidate } from '../../test/support/sidecars.js';

/** The timings of every SQLite and PostgreSQL failover row. */
export const SIDECAR_TIMING = { leaseDuration: '2s', renewDeadline: '1500ms', retryPeriod: '400ms' };

export interface SidecarFailoverOptions {
  dir: string;
  /** The backend's arguments, its lease included (one lease per row). */
  backend: string[];
  signal: 'SIGKILL' | 'SIGTERM';
  /** The leader and its standbys. */
  candidates: number;
  trials: number;
  /** Names the identities and the progress lines. */
  label: string;
  log: (m: string) => void;
}

export interface SidecarFailoverResult {
  /** ms from the signal to a standby's status file saying leader. */
  fromSignal: number[];
  /** After SIGKILL: each new leader's `sinceFreeMs` (from the expiry it observed to its takeover). */
  sinceFree: number[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The holder named in a sidecar's status.json, or undefined before it wrote one. */
function statusHolder(c: Candidate): string | null | undefined {
  try {
    return (JSON.parse(readFileSync(join(c.statusDir, 'status.json'), 'utf8')) as { holder: string | null }).holder;
  } catch {
    return undefined;
  }
}

export async function sidecarFailover({ dir, backend, signal, candidates, trials, label, log }: SidecarFailoverOptions): Promise<SidecarFailoverResult> {
  // A fresh identity (and status directory) for each replacement: no file left by a former process is read as the new one's.
  let gen = 0;
  const fresh = () => startSidecar(dir, `${label}-${gen++}`, backend, SIDECAR_TIMING);
  let cands: Candidate[] = Array.from({ length: candidates }, fresh);
  const fromSignal: number[] = [];
  const sinceFree: number[] = [];
  try {
    for (let i = 0; i < trials; i++) {
      const leader = await waitFor('a leader', () => validLeaders(cands)[0], 20_000);
      // Every standby is up and follows this leader (a replacement that has not read the lease yet
      // would time its own start-up), then observes its renewals for a moment, as in steady state.
      await waitFor('the standbys to see the leader', () => cands.every((c) => c === leader.c || statusHolder(c) === leader.c.id), 20_000);
      // Then as long as a standby may take to claim to be the successor (its volunteer window,
      // 1 s) and a little more, as a rollout's next step comes only after the replacement is
      // ready. A claim not written by then shows up here as a slow handoff, not as a skipped one.
      await sleep(VOLUNTEER_WINDOW_MS + 500);
      const t0 = performance.now();
      leader.c.proc.kill(signal);
      const next = await waitFor('a standby to lead', () => validLeaders(cands).find((l) => l.c !== leader.c), 20_000, 2);
      fromSignal.push(Math.round(performance.now() - t0));
      if (signal === 'SIGKILL') sinceFree.push(await waitFor('its "became leader" line', () => selfReportedSinceFree(next.c.proc.stderr()), 5_000, 5));
      await leader.c.proc.exited;
      cands = cands.map((c) => (c === leader.c ? fresh() : c));
      log(`${label} trial ${i + 1}/${trials}: ${fromSignal.at(-1)} ms${signal === 'SIGKILL' ? `, ${sinceFree.at(-1)} ms after the expiry it observed` : ''}`);
    }
  } finally {
    for (const c of cands) c.proc.kill('SIGKILL');
    await Promise.all(cands.map((c) => c.proc.exited));
  }
  return { fromSignal, sinceFree };
}
