/**
 * The chaos driver: N candidates (a `leasehold sidecar` and an app writing through a fenced
 * resource with its token), and faults injected at random from a recorded seed: SIGKILL of a
 * sidecar (restarted later), a freeze of a whole candidate (sidecar and app SIGSTOPped) longer
 * than the lease, a graceful restart, and on Kubernetes a kube-apiserver outage longer than
 * renewDeadline. The same seed replays the same fault schedule.
 *
 * Checked at the end: the resource accepted tokens in non-decreasing order (no stale write
 * landed); no token was written by two identities (never two leaders in one term); every write
 * an app saw accepted is in the resource's history; a leader exists after the last fault.
 */
import { join } from 'node:path';
import { REPO, start, waitFor, type Proc } from '../helpers/cli.js';
import { startSidecar, validLeaders, type Candidate } from '../helpers/sidecars.js';
import { FencedSqliteResource } from '../../src/fencing/fenced-resource.js';

export interface ChaosOptions {
  backend: 'sqlite' | 'kubernetes';
  backendArgs: string[];
  dir: string;
  seed: number;
  seconds: number;
  candidates?: number;
  /** Kubernetes only: stop and start the API server. */
  apiServer?: { stop(): Promise<void>; start(): Promise<void> };
  log?: (line: string) => void;
}

export interface ChaosReport {
  backend: string;
  seed: number;
  faults: Record<string, number>;
  handoffs: number;
  accepted: number;
  rejected: number;
  violations: string[];
}

const T = { leaseDuration: '2s', renewDeadline: '1500ms', retryPeriod: '400ms' };
const LEASE_MS = 2_000;
const DEADLINE_MS = 1_500;
const APP = join(REPO, 'test/chaos/chaos-app.ts');

/** mulberry32: a small seeded PRNG, so a seed replays the same schedule. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Member {
  id: string;
  sidecar: Candidate;
  app: Proc;
  appLogs: string[];
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
  const startApp = (m: { id: string; sidecar: Candidate }) => start(process.execPath, ['--import', 'tsx', APP, m.sidecar.statusDir, resourcePath, m.id]);
  for (let i = 0; i < (o.candidates ?? 5); i++) {
    const id = `c${i}`;
    const sidecar = startSidecar(o.dir, id, o.backendArgs, T);
    const m: Member = { id, sidecar, app: null as unknown as Proc, appLogs: [] };
    m.app = startApp(m);
    members.push(m);
  }
  const restartSidecar = (m: Member) => {
    m.sidecar = startSidecar(o.dir, m.id, o.backendArgs, T);
  };
  const faults: Record<string, number> = {};
  const count = (k: string) => (faults[k] = (faults[k] ?? 0) + 1);
  const kinds = ['kill', 'freeze', 'restart', ...(o.apiServer ? ['apiserver'] : [])];
  const leaderOf = () => validLeaders(members.map((m) => m.sidecar))[0]?.c.id;

  await waitFor('a first leader', () => leaderOf(), 30_000);
  const deadline = Date.now() + o.seconds * 1000;
  try {
    while (Date.now() < deadline) {
      await sleep(between(1_000, 2_500));
      const kind = pick(kinds);
      const leader = members.find((m) => m.id === leaderOf());
      const victim = leader && rand() < 0.6 ? leader : pick(members);
      count(kind);
      say(`fault ${kind} on ${kind === 'apiserver' ? 'the API server' : victim.id}`);
      if (kind === 'kill') {
        victim.sidecar.proc.kill('SIGKILL');
        await victim.sidecar.proc.exited;
        await sleep(between(300, 1_500));
        restartSidecar(victim);
      } else if (kind === 'freeze') {
        victim.sidecar.proc.kill('SIGSTOP');
        victim.app.child.kill('SIGSTOP');
        await sleep(LEASE_MS + between(500, 1_500));
        victim.sidecar.proc.kill('SIGCONT');
        victim.app.child.kill('SIGCONT');
      } else if (kind === 'restart') {
        victim.sidecar.proc.kill('SIGTERM');
        await victim.sidecar.proc.exited;
        restartSidecar(victim);
      } else if (kind === 'apiserver') {
        await o.apiServer!.stop();
        await sleep(DEADLINE_MS + between(500, 1_500));
        await o.apiServer!.start();
      }
    }
    // After the last fault a leader must appear within a lease plus the jittered retry.
    await waitFor('a leader after the last fault', () => leaderOf(), LEASE_MS + 2.2 * 400 + 5_000);
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
  resource.close();
  const violations: string[] = [];
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
    accepted,
    rejected: writes.length - accepted,
    violations,
  };
}

export function formatReport(r: ChaosReport): string {
  const faults = Object.entries(r.faults).map(([k, n]) => `${k} ${n}`).join(', ') || 'none';
  return `chaos ${r.backend} seed=${r.seed}: faults ${faults}; handoffs ${r.handoffs}; writes accepted ${r.accepted}, rejected ${r.rejected} (stale tokens stopped by the fence); violations ${r.violations.length}${r.violations.length ? ': ' + r.violations.join('; ') : ''}`;
}
