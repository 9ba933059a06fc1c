/**
 * The chaos driver: N candidates (a `leasehold sidecar` and an app writing through a fenced
 * resource with its token), and faults injected at random from a recorded seed: SIGKILL of a
 * sidecar (restarted later), a freeze of a whole candidate (sidecar and app SIGSTOPped) longer
 * than the lease, a graceful restart, and on Kubernetes a kube-apiserver restart or an etcd
 * stop, each longer than renewDeadline; on PostgreSQL a database restart, and a neighbour's
 * faults: a SIGKILL under forged notifications, and the table locked past renewDeadline; on
 * Kubernetes a neighbour churning the Lease's metadata while the leader is killed. The same seed replays the same fault schedule (the
 * timing of the processes themselves is not replayable; the sequence of faults is).
 *
 * Checked:
 * - after every fault, a leader again within RECOVERY_BOUND_MS (from the fault for a killed,
 *   frozen or restarted candidate; from the end of the outage for the API server and etcd);
 * - the resource accepted tokens in non-decreasing order (no stale write landed);
 * - no token was written by two identities (never two leaders in one term);
 * - the sidecars' own leadership terms [became leader, last validUntil or step-down] never
 *   overlap across candidates, and their tokens strictly increase (test/support/leadership-terms.ts);
 * - every write an app saw accepted is in the resource's history;
 * - with `history`, by an independent checker (test/porcupine, docs/testing.md "Recorded
 *   histories"): every store call on the lease record is linearizable against the LeaseStore
 *   contract's compare-and-swap register, and every write to the fenced resource against a fenced
 *   register. On Kubernetes the metadata-churn neighbour is left out then: its writes to the
 *   Lease are not recorded, and would look like versions changed by nobody.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO, start, waitFor, type Proc } from '../support/cli.js';
import { startSidecar, validLeaders, type Candidate } from '../support/sidecars.js';
import { termViolations, termsFromLog, type Term } from '../support/leadership-terms.js';
import { FencedSqliteResource } from '../../src/fencing/fenced-resource.js';
import { prng } from '../support/prng.js';
import { checkHistory, historyFiles } from './check-history.js';
import { openHistory } from './history-recorder.mjs';

export interface ChaosOptions {
  backend: 'sqlite' | 'kubernetes' | 'postgres';
  backendArgs: string[];
  dir: string;
  seed: number;
  seconds: number;
  candidates?: number;
  /** Kubernetes only: stop and start the API server. */
  apiServer?: { stop(): Promise<void>; start(): Promise<void> };
  /** Kubernetes only: stop and start etcd under a running API server. */
  etcd?: { stop(): Promise<void>; start(): Promise<void> };
  /** PostgreSQL only: stop the database server (every connection cut) and start it again. */
  database?: { stop(): Promise<void>; start(): Promise<void> };
  /**
   * Another writer on the same store (metadata churn on the Lease, say): started, then the
   * leader is SIGKILLed while it runs, and a standby must still take over within the bound.
   */
  neighbour?: { name: string; start(): void; stop(): Promise<unknown> };
  /** PostgreSQL only: another role on the same database (test/postgres/chaos.test.ts). */
  postgresNeighbour?: PostgresNeighbour;
  /** Record the store calls and the fenced writes, and check them at the end (docs/testing.md). */
  history?: boolean;
  log?: (line: string) => void;
}

/**
 * What another role may do to leasehold's table: flood its channel with forged notifications
 * (each "released" or "deleted" with a huge token) for `ms`, and hold an ACCESS EXCLUSIVE lock
 * on the table for `ms`. Each resolves when it has stopped.
 */
export interface PostgresNeighbour {
  forge(ms: number): Promise<void>;
  lock(ms: number): Promise<void>;
}

export interface ChaosReport {
  backend: string;
  seed: number;
  faults: Record<string, number>;
  handoffs: number;
  /** Leadership terms seen in the sidecars' logs. */
  terms: number;
  /** The longest time to a leader again after a fault, ms. */
  slowestRecoveryMs: number;
  accepted: number;
  rejected: number;
  /** With `history`: the checker's verdict lines and where the history is. */
  history?: { operations: number; verdict: string; dir: string };
  violations: string[];
}

const T = { leaseDuration: '2s', renewDeadline: '1500ms', retryPeriod: '400ms' };
const LEASE_MS = 2_000;
const DEADLINE_MS = 1_500;
const RETRY_MS = 400;
/**
 * A leader again within leaseDuration + 2.2 × retryPeriod (an expired lease taken by a standby
 * on its jittered retry) plus 5 s of slack for process start-up and the API server's reconnect
 * to etcd on a loaded 2-core machine.
 */
const RECOVERY_BOUND_MS = LEASE_MS + 2.2 * RETRY_MS + 5_000;
const APP = join(REPO, 'test/chaos/chaos-app.ts');

interface Member {
  id: string;
  sidecar: Candidate;
  /** Every incarnation of this member's sidecar, for their logs. */
  incarnations: Candidate[];
  app: Proc;
}

export async function runChaos(o: ChaosOptions): Promise<ChaosReport> {
  const rand = prng(o.seed);
  const pick = <X>(xs: X[]) => xs[Math.floor(rand() * xs.length)]!;
  const between = (lo: number, hi: number) => lo + rand() * (hi - lo);
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const say = o.log ?? (() => {});
  const resourcePath = join(o.dir, 'resource.db');
  new FencedSqliteResource(resourcePath).close();
  const members: Member[] = [];
  const historyDir = join(o.dir, 'history');
  if (o.history) mkdirSync(historyDir);
  const historyEnv: NodeJS.ProcessEnv = o.history ? { LEASEHOLD_TEST_HISTORY_DIR: historyDir } : {};
  const sidecarEnv: NodeJS.ProcessEnv = o.history
    ? {
        ...historyEnv,
        LEASEHOLD_TEST_HISTORY_BACKEND: o.backend,
        NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${join(REPO, 'test/chaos/record-store-calls.mjs')}`.trim(),
      }
    : {};
  const startApp = (m: { id: string; sidecar: Candidate }) =>
    start(process.execPath, ['--import', 'tsx', APP, m.sidecar.statusDir, resourcePath, m.id], historyEnv);
  // Debug logs carry each renewal's validUntil, for the term check.
  const launchSidecar = (id: string) => startSidecar(o.dir, id, o.backendArgs, T, ['--log-level', 'debug'], sidecarEnv);
  for (let i = 0; i < (o.candidates ?? 5); i++) {
    const id = `c${i}`;
    const sidecar = launchSidecar(id);
    const m: Member = { id, sidecar, incarnations: [sidecar], app: null as unknown as Proc };
    m.app = startApp(m);
    members.push(m);
  }
  const restartSidecar = (m: Member) => {
    m.sidecar = launchSidecar(m.id);
    m.incarnations.push(m.sidecar);
  };
  const faults: Record<string, number> = {};
  const count = (k: string) => (faults[k] = (faults[k] ?? 0) + 1);
  const kinds = [
    'kill',
    'freeze',
    'restart',
    ...(o.apiServer ? ['apiserver'] : []),
    ...(o.etcd ? ['etcd'] : []),
    ...(o.database ? ['database'] : []),
    ...(o.neighbour && !o.history ? [o.neighbour.name] : []),
  ];
  if (o.postgresNeighbour) kinds.push('forged-notify', 'table-lock');
  const firstRound = [...kinds].sort(() => rand() - 0.5);
  const leaderAmong = (ms: Member[]) => ms.find((m) => validLeaders([m.sidecar]).length > 0);
  const violations: string[] = [];
  let slowestRecoveryMs = 0;
  /** Waits for a leader among `ms`; a violation if none within the bound counted from `since`. */
  const leaderAgain = async (what: string, ms: Member[], since: number) => {
    while (!leaderAmong(ms)) {
      if (Date.now() - since > RECOVERY_BOUND_MS) {
        violations.push(`no leader within ${RECOVERY_BOUND_MS} ms after ${what}`);
        return;
      }
      await sleep(20);
    }
    slowestRecoveryMs = Math.max(slowestRecoveryMs, Date.now() - since);
  };

  await waitFor('a first leader', () => leaderAmong(members), 30_000); // processes start slowly under load
  const deadline = Date.now() + o.seconds * 1000;
  try {
    while (Date.now() < deadline) {
      await sleep(between(1_000, 2_500));
      // Every kind once first, in a seeded order, so even a short run has each fault; then at random.
      const kind = firstRound.length > 0 ? firstRound.shift()! : pick(kinds);
      const leader = leaderAmong(members);
      const victim = leader && rand() < 0.6 ? leader : pick(members);
      const others = members.filter((m) => m !== victim);
      const what = ['apiserver', 'etcd', 'database', 'table-lock'].includes(kind) ? `${kind} outage` : `${kind} of ${victim.id}`;
      count(kind);
      say(`fault ${what}`);
      const t0 = Date.now();
      if (kind === 'kill') {
        victim.sidecar.proc.kill('SIGKILL');
        await victim.sidecar.proc.exited;
        const restartAt = t0 + between(300, 1_500);
        await leaderAgain(what, others, t0);
        await sleep(restartAt - Date.now());
        restartSidecar(victim);
      } else if (kind === 'freeze') {
        victim.sidecar.proc.kill('SIGSTOP');
        victim.app.child.kill('SIGSTOP');
        const thawAt = t0 + LEASE_MS + between(500, 1_500);
        await leaderAgain(what, others, t0);
        await sleep(thawAt - Date.now());
        victim.sidecar.proc.kill('SIGCONT');
        victim.app.child.kill('SIGCONT');
      } else if (kind === 'restart') {
        victim.sidecar.proc.kill('SIGTERM');
        await victim.sidecar.proc.exited;
        await leaderAgain(what, others, t0);
        restartSidecar(victim);
      } else if (kind === o.neighbour?.name) {
        // The neighbour keeps writing through the failover: the dead leader's lease must still expire.
        o.neighbour.start();
        try {
          victim.sidecar.proc.kill('SIGKILL');
          await victim.sidecar.proc.exited;
          await leaderAgain(what, others, t0);
        } finally {
          await o.neighbour.stop();
        }
        restartSidecar(victim);
      } else if (kind === 'forged-notify') {
        // The victim is killed under a flood of forged notifications: a failover within the
        // bound all the same, and no token the flood claimed.
        const flood = o.postgresNeighbour!.forge(LEASE_MS + 2_000);
        victim.sidecar.proc.kill('SIGKILL');
        await victim.sidecar.proc.exited;
        await leaderAgain(what, others, t0);
        await flood;
        restartSidecar(victim);
      } else if (kind === 'table-lock') {
        // Nobody can renew while another session holds the table: as an outage, a leader again
        // within the bound from the moment the lock is released.
        await o.postgresNeighbour!.lock(DEADLINE_MS + between(500, 1_500));
        await leaderAgain(`the end of the ${what}`, members, Date.now());
      } else {
        const part = kind === 'apiserver' ? o.apiServer! : kind === 'etcd' ? o.etcd! : o.database!;
        await part.stop();
        await sleep(DEADLINE_MS + between(500, 1_500));
        await part.start();
        await leaderAgain(`the end of the ${what}`, members, Date.now());
      }
    }
  } finally {
    for (const m of members) {
      m.sidecar.proc.kill('SIGCONT');
      m.app.child.kill('SIGCONT');
    }
    for (const m of members) {
      m.app.kill('SIGTERM');
      m.sidecar.proc.kill('SIGTERM');
    }
    await Promise.all(members.flatMap((m) => [m.app.exited, m.sidecar.proc.exited]));
  }

  const writes = members.flatMap((m) =>
    m.app
      .stdout()
      .split('\n')
      .filter(Boolean)
      .map((l) => ({ id: m.id, ...(JSON.parse(l) as { token: number; accepted: boolean }) })),
  );
  const resource = new FencedSqliteResource(resourcePath);
  const history = resource.history();
  let checked: ChaosReport['history'];
  if (o.history) {
    // The final read, recorded like the apps' writes: the last accepted value must be there.
    const driver = openHistory(historyDir, 'driver');
    const called = driver.stamp();
    const now = resource.read();
    driver.whole('fenced', 'resource', 'read', {}, called, { value: now.value ?? '', token: now.fencingToken });
    driver.close();
    const files = historyFiles(historyDir);
    const verdict = await checkHistory(files);
    const operations = files.reduce(
      (n, f) =>
        n +
        readFileSync(f, 'utf8')
          .split('\n')
          .filter((l) => l.includes('"call"')).length,
      0,
    );
    checked = { operations, verdict: verdict.output, dir: historyDir };
    if (verdict.code !== 0) violations.push(`the history checker (exit ${verdict.code}): ${verdict.output.split('\n').join(' | ')}`);
  }
  resource.close();
  const terms: Term[] = members.flatMap((m) => m.incarnations.flatMap((c) => termsFromLog(m.id, c.proc.stderr())));
  violations.push(...termViolations(terms));
  for (let i = 1; i < history.length; i++) {
    if (history[i]!.fencingToken < history[i - 1]!.fencingToken) {
      violations.push(`stale write landed: token ${history[i]!.fencingToken} after ${history[i - 1]!.fencingToken}`);
    }
  }
  const writerOf = new Map<number, string>();
  for (const h of history) {
    const prev = writerOf.get(h.fencingToken);
    if (prev && prev !== h.writtenBy) violations.push(`token ${h.fencingToken} written by ${prev} and ${h.writtenBy}: two leaders in one term`);
    writerOf.set(h.fencingToken, h.writtenBy!);
  }
  const accepted = writes.filter((w) => w.accepted).length;
  if (accepted !== history.length) violations.push(`apps saw ${accepted} writes accepted, the resource holds ${history.length}`);
  return {
    backend: o.backend,
    seed: o.seed,
    faults,
    handoffs: Math.max(0, writerOf.size - 1),
    terms: terms.length,
    slowestRecoveryMs,
    accepted,
    rejected: writes.length - accepted,
    ...(checked ? { history: checked } : {}),
    violations,
  };
}

export function formatReport(r: ChaosReport): string {
  const faults =
    Object.entries(r.faults)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ') || 'none';
  const history = r.history ? `; history: ${r.history.operations} operations recorded, checked: ${r.history.verdict.split('\n').join('; ')}` : '';
  return `chaos ${r.backend} seed=${r.seed}: faults ${faults}; handoffs ${r.handoffs}; leadership terms ${r.terms}, slowest recovery ${r.slowestRecoveryMs} ms (bound ${RECOVERY_BOUND_MS}); writes accepted ${r.accepted}, rejected ${r.rejected} (stale tokens stopped by the fence); violations ${r.violations.length}${r.violations.length ? ': ' + r.violations.join('; ') : ''}${history}`;
}
