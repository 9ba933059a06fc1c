/**
 * One shard group of N shards through the member counts of the shard groups' bench
 * (bench/scenarios/shards.ts), as real `leasehold sidecar --shards N` processes with the default
 * timings. The group is started once (a new group waits a lease duration before it creates
 * shards never seen), and for each member count M, ascending, the chain:
 *   1. grows the group to M members and waits until it is balanced (every shard owned once,
 *      each member floor(N/M) or ceil(N/M)), then a few seconds more;
 *   2. idle: over a window, the store's count of the group's writes (on Kubernetes also the API
 *      server's count of every request for the group), each member's lists, whole-group reads and
 *      records read (its /metrics), CPU and RSS, and a plain leader sidecar's RSS at the same moments;
 *   3. join: one member added; from its first shards.json (its start-up done) until the M + 1
 *      are balanced; the shards that changed owner;
 *   4. graceful leave: SIGTERM to the oldest member; from the signal until each of its shards is
 *      listed by another member (every shard's time, and the last), then balanced among M;
 *   5. crash: SIGKILL to the next oldest; from the signal until its shards are listed by others.
 * The crash leaves M − 1 members, which the next M grows from. Every time is read from the
 * members' own `updatedAt` in their shards.json (bench/lib/shard-files.ts), the app's view.
 */
import { writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join as joinPath } from 'node:path';
import type { Proc } from '../../test/support/cli.js';
import { waitFor } from '../../test/support/cli.js';
import { cpuTicks, rssMB } from './proc-stats.js';
import { quantile } from './quantile.js';
import { countsBetween, requestCounts, type RequestCounts } from './member-metrics.js';
import type { GroupWriteCounter } from './group-writes.js';
import type { GroupRequestCounter, VerbCounts } from './group-requests.js';
import { ShardFiles, type FollowedMember } from './shard-files.js';
import { balanced, movedShards, ownedAgainAt, ownedAt, ownedSince, ownerMap, ownersOf } from './shard-settle.js';

/** The default timings, as a sidecar has them without flags. */
export const DEFAULT_T = { leaseMs: 15_000, deadlineMs: 10_000, retryMs: 2_000 };
/** Issue 38's goals (bench/report/shard-goals.ts judges them); a change past one keeps every member's log. */
export const GOALS = { joinMs: 2_000, leaveP95Ms: 250, crashMs: DEFAULT_T.leaseMs + 1_000 };

export interface ShardStore {
  name: string;
  /**
   * Starts `leasehold sidecar` listening on 127.0.0.1:0 with the default timings: a member of
   * `group` with `shards`, else a plain sidecar leading the lease `group`.
   */
  start(o: { id: string; statusDir: string; group: string; shards?: number }): Proc;
  /** The store's own count of the group's writes. */
  writes(group: string): GroupWriteCounter;
  /** Kubernetes: the API server's count of every request for the group, by verb (its audit log). */
  requests?(group: string): GroupRequestCounter;
  /** The store answers reads by change from a copy its watch keeps (Kubernetes): a whole-group answer costs no request. */
  readsFromWatch?: boolean;
}

export interface IdleFigures {
  seconds: number;
  /** The machine's 1-minute load average when the window opened (other work shares its cores). */
  load: number;
  /** The store's count, every member together. */
  writes: number;
  /** The members' own count of their writes that landed (create and update ok), for comparison. */
  ownWrites: number;
  /** Lists every member sent, together. */
  lists: number;
  /** The members' reads of the group that answered (their /metrics), together: whole-group ones, and reads of changes. */
  fullReads: number;
  changeReads: number;
  /** The records those reads brought, together. */
  recordsFull: number;
  recordsChanges: number;
  /** Kubernetes: the API server's requests for the group over the window, every member together, by verb. */
  apiRequests?: VerbCounts;
  /** The members' reads by change came from a copy their store's watch keeps: its whole-group answers sent no request. */
  fromWatch?: boolean;
  /** Writes that lost their compare-and-swap, every member together. */
  conflicts: number;
  /** Mean share of one core per member over the window, %. */
  cpuPct: number;
  /** Per member, the median of its RSS samples (MiB). */
  rssMB: number[];
  /** The plain leader sidecar's median RSS over the same samples (MiB). */
  plainRssMB: number;
}

export interface ChangeFigures {
  /** ms until the change's goal held (join: balanced; leave, crash: every shard of the one gone listed by another). */
  ms: number;
  /** Shards with another owner after than before. */
  moved: number;
  /** The fewest a change can move: the newcomer's share, or the shards of the one gone. */
  fewest: number;
  /** Leave and crash: each shard's ms until another member listed it. */
  perShardMs?: number[];
  /** Leave and crash: ms until the M − 1 (or M) were balanced again. */
  balancedMs?: number;
  /** Leave and crash: what the other members did from the signal until its shards were owned again. */
  work?: ChangeWork;
  /**
   * Leave and crash: how long before the signal the one gone last heartbeat, from its last
   * `shards.json` (validUntil less renewDeadline); null when it had none. A crash's time is the
   * lease less this, plus what the others take after the expiry.
   */
  heartbeatBeforeMs?: number | null;
}

/** The other members' work over a change, together: from their /metrics and /proc. */
export interface ChangeWork {
  /** CPU time, user and system. */
  cpuSeconds: number;
  /** Turns that planned, and turns that found nothing moved since a plan with nothing to do. */
  planned: number;
  quiet: number;
  /** Reads of the group: whole-group ones and reads of changes, and the records they brought. */
  fullReads: number;
  changeReads: number;
  records: number;
  /** Store writes that landed (create, update, batch), lost their compare-and-swap, or failed. */
  writes: number;
  conflicts: number;
  failed: number;
}

interface WorkMark {
  counts: RequestCounts[];
  ticks: number[];
}

export interface ShardCaseResult {
  shards: number;
  members: number;
  /** ms from starting the missing members to balanced (the first M: with the new group's wait). */
  growMs: number;
  idle: IdleFigures;
  join: ChangeFigures;
  leave: ChangeFigures & { exit: string };
  crash: ChangeFigures;
}

interface Member extends FollowedMember {
  proc: Proc;
  address?: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const HZ = 100; // USER_HZ
/** After a change settles: the writes it caused (a slot released, kept shards) land before the next step starts. */
const QUIET_MS = 3_000;
const RSS_EVERY_MS = 5_000;
const CHANGE_TIMEOUT_MS = 60_000;

export interface ShardChainOptions {
  store: ShardStore;
  shards: number;
  /** Ascending member counts, each at least 2. */
  memberCounts: readonly number[];
  idleSeconds: number;
  dir: string;
  /** The plain leader sidecar whose RSS is read beside the members'. */
  plain: Proc;
  log: (m: string) => void;
}

export async function shardChain(o: ShardChainOptions): Promise<ShardCaseResult[]> {
  const { store, shards: N, dir } = o;
  const group = `shards-${N}`;
  const members: Member[] = [];
  const files = new ShardFiles(() => members);
  const writes = store.writes(group);
  const requests = store.requests?.(group);
  let seq = 0;
  const label = `${store.name} N=${N}`;

  const add = (): Member => {
    const id = `m${seq++}`;
    const statusDir = `${dir}/${store.name}-${group}-${id}`; // one per store: a stale shards.json of another store would be read as this member's
    const m: Member = { id, statusDir, proc: store.start({ id, statusDir, group, shards: N }) };
    members.push(m);
    return m;
  };
  const ids = () => members.map((m) => m.id);
  const isBalanced = () => {
    files.poll();
    return balanced(files.latest(), ids(), N, Date.now());
  };
  const ownersNow = () => ownerMap(ownersOf(files.latest(), Date.now()));
  const addressOf = async (m: Member) => {
    if (m.address) return m.address;
    // A member that exits before it listens fails the case with what it said, not a wait of minutes;
    // one that never listens, with what it said by then.
    let gone: { code: number | null; signal: NodeJS.Signals | null } | null = null;
    void m.proc.exited.then((e) => (gone = e));
    const said = () => m.proc.stderr().slice(-2000);
    try {
      m.address = await waitFor(
        `${m.id}'s address`,
        () => {
          const at = /"listen":"([^"]+)"/.exec(m.proc.stderr())?.[1];
          if (!at && gone) throw new Error(`${label}: ${m.id} exited (${gone.signal ?? `exit ${gone.code}`}) before it listened; it said:\n${said()}`);
          return at;
        },
        180_000,
        50,
      );
    } catch (err) {
      if (gone) throw err;
      throw new Error(`${label}: ${(err as Error).message}; ${m.id} (pid ${m.proc.pid}) said:\n${said()}`, { cause: err });
    }
    return m.address;
  };

  /** Starts members until there are `count`, in batches so that start-up does not starve the members already running. */
  const grow = async (count: number): Promise<number> => {
    const t0 = Date.now();
    while (members.length < count) {
      const batch = Array.from({ length: Math.min(8, count - members.length) }, add);
      await Promise.all(batch.map(addressOf));
    }
    await waitFor(`${label}: ${count} members balanced`, isBalanced, 120_000, 20);
    return Date.now() - t0;
  };

  const idle = async (): Promise<IdleFigures> => {
    const procs = [...members.map((m) => m.proc), o.plain];
    await Promise.all(members.map(addressOf));
    // The members' own counts are read inside the store's window, so theirs is the narrower one.
    // Both counts' windows open and close together: one waiting on the other would widen it.
    const [win, requestWin] = await Promise.all([writes.open(), requests?.open()]);
    const w0 = performance.now();
    const load = loadavg()[0]!;
    const before = await Promise.all(members.map(async (m) => (await requestCounts(m.address!)) ?? new Map<string, number>()));
    const cpu0 = members.map((m) => cpuTicks(m.proc.pid));
    const c0 = performance.now();
    const rss: number[][] = procs.map(() => []);
    const sample = () => procs.forEach((p, i) => rss[i]!.push(rssMB(p.pid)));
    while (performance.now() - w0 < o.idleSeconds * 1000) {
      await sleep(Math.min(RSS_EVERY_MS, o.idleSeconds * 1000 - (performance.now() - w0)));
      sample();
    }
    // A window that the members' slow /metrics answers used up still gets one sample.
    if (rss[0]!.length === 0) sample();
    const cpuSeconds = (performance.now() - c0) / 1000;
    const cpu = members.map((m, i) => (cpuTicks(m.proc.pid) - cpu0[i]!) / HZ / cpuSeconds);
    const after = await Promise.all(members.map(async (m) => (await requestCounts(m.address!)) ?? new Map<string, number>()));
    const seconds = (performance.now() - w0) / 1000;
    const [counted, apiRequests] = await Promise.all([win.close(), requestWin?.close()]);
    const sum = (want: (k: string) => boolean) => after.reduce((a: number, c: RequestCounts, i) => a + countsBetween(before[i]!, c, want), 0);
    const median = (xs: number[]) => quantile(xs, 0.5);
    return {
      seconds,
      load,
      writes: counted,
      ownWrites: sum((k) => k === 'update ok' || k === 'create ok'),
      lists: sum((k) => k.startsWith('list ')),
      fullReads: sum((k) => k === 'reads full'),
      changeReads: sum((k) => k === 'reads changes'),
      recordsFull: sum((k) => k === 'records full'),
      recordsChanges: sum((k) => k === 'records changes'),
      ...(apiRequests ? { apiRequests } : {}),
      ...(store.readsFromWatch ? { fromWatch: true } : {}),
      conflicts: sum((k) => k.endsWith(' conflict')),
      cpuPct: (cpu.reduce((a, b) => a + b, 0) / members.length) * 100,
      rssMB: rss.slice(0, members.length).map(median),
      plainRssMB: median(rss.at(-1)!),
    };
  };

  const join = async (): Promise<ChangeFigures> => {
    files.forget();
    const before = ownersNow();
    const m = add();
    // From its first shards.json (written once it is up, before it joins): its start-up is not the group's.
    const t0 = await waitFor(`${m.id}'s first shards.json`, () => (files.poll(), files.history.get(m.id)?.[0]?.at), 60_000, 5);
    await waitFor(`${label}: balanced after ${m.id} joined`, isBalanced, CHANGE_TIMEOUT_MS, 5);
    const settled = Math.max(...members.map((x) => ownedSince(files.history.get(x.id) ?? []) ?? 0));
    void addressOf(m);
    return { ms: Math.max(0, settled - t0), moved: movedShards(before, ownersNow(), N), fewest: ownedAt(files.latest([m.id]).get(m.id), Date.now()).length };
  };

  const markWork = async (of: readonly Member[]): Promise<WorkMark> => ({
    counts: await Promise.all(of.map(async (m) => (await requestCounts(await addressOf(m))) ?? new Map<string, number>())),
    ticks: of.map((m) => cpuTicks(m.proc.pid)),
  });
  const workSince = async (of: readonly Member[], from: WorkMark): Promise<ChangeWork> => {
    const to = await markWork(of);
    const sum = (want: (k: string) => boolean) => to.counts.reduce((a, c, i) => a + countsBetween(from.counts[i]!, c, want), 0);
    return {
      cpuSeconds: to.ticks.reduce((a, t, i) => a + t - from.ticks[i]!, 0) / HZ,
      planned: sum((k) => k === 'turns planned'),
      quiet: sum((k) => k === 'turns quiet'),
      fullReads: sum((k) => k === 'reads full'),
      changeReads: sum((k) => k === 'reads changes'),
      records: sum((k) => k.startsWith('records ')),
      writes: sum((k) => /^(create|update|batch|take) ok$/.test(k)),
      conflicts: sum((k) => k.endsWith(' conflict')),
      failed: sum((k) => k.endsWith(' error')),
    };
  };

  /** SIGTERM or SIGKILL to `victim`: until every shard it owned is listed by another member, then balanced. */
  const leaveOrCrash = async (victim: Member, signal: 'SIGTERM' | 'SIGKILL'): Promise<ChangeFigures & { exit: string }> => {
    files.forget();
    files.poll();
    const before = ownersNow();
    const last = files.latest([victim.id]).get(victim.id);
    const had = [...ownedAt(last, Date.now())];
    const others = () => members.filter((x) => x !== victim);
    const mark = await markWork(others());
    const t0 = Date.now();
    victim.proc.kill(signal);
    const timeout = signal === 'SIGKILL' ? DEFAULT_T.leaseMs + CHANGE_TIMEOUT_MS : CHANGE_TIMEOUT_MS;
    const again = await waitFor(
      `${label}: ${victim.id}'s shards owned by others after ${signal}`,
      () => {
        files.poll();
        const at = ownedAgainAt(files.history, had, victim.id, t0);
        return [...at.values()].every((t) => t !== undefined) ? at : undefined;
      },
      timeout,
      5,
    );
    const work = await workSince(others(), mark);
    const exited = await victim.proc.exited;
    members.splice(members.indexOf(victim), 1);
    await waitFor(`${label}: balanced after ${victim.id} left`, isBalanced, CHANGE_TIMEOUT_MS, 5);
    const settled = Math.max(...others().map((x) => ownedSince(files.history.get(x.id) ?? []) ?? 0));
    const perShardMs = [...again.values()].map((t) => Math.max(0, t! - t0));
    return {
      ms: perShardMs.length ? Math.max(...perShardMs) : 0,
      perShardMs,
      balancedMs: Math.max(0, settled - t0),
      moved: movedShards(before, ownersNow(), N),
      fewest: had.length,
      work,
      heartbeatBeforeMs: last?.validUntil == null ? null : t0 - (last.validUntil - DEFAULT_T.deadlineMs),
      exit: exited.signal ?? `exit ${exited.code}`,
    };
  };

  /** An outlier worth reading: every member's log (the one gone included) to a file outside the bench's temp dir. */
  const keepLogs = (what: string, gone?: Member) => {
    const file = joinPath(tmpdir(), `leasehold-bench-shards-${store.name}-${N}-${members.length}-${what}-${Date.now()}.log`);
    writeFileSync(file, [...members, ...(gone ? [gone] : [])].map((m) => `=== ${m.id}\n${m.proc.stderr()}`).join('\n'));
    o.log(`${label}: ${what} past its goal: logs in ${file}`);
  };

  const results: ShardCaseResult[] = [];
  try {
    for (const M of o.memberCounts) {
      o.log(`${label}: growing to ${M} members${members.length === 0 ? ' (a new group: a lease duration before its shards are created)' : ''}`);
      const growMs = await grow(M);
      await sleep(QUIET_MS);
      o.log(`${label} M=${M}: balanced in ${(growMs / 1000).toFixed(1)} s; idle window of ${o.idleSeconds} s`);
      const idleFigures = await idle();
      const perMemberMin = (n: number) => ((n / M) * (60 / idleFigures.seconds)).toFixed(1);
      o.log(
        `${label} M=${M}: per member per minute ${perMemberMin(idleFigures.writes)} writes at the store, ${perMemberMin(idleFigures.lists)} lists, ${perMemberMin(idleFigures.fullReads)} whole-group reads, ${perMemberMin(idleFigures.recordsFull + idleFigures.recordsChanges)} records read${idleFigures.apiRequests ? `, ${perMemberMin(Object.values(idleFigures.apiRequests).reduce((a, b) => a + b, 0))} API requests` : ''}; join`,
      );
      const joined = await join();
      if (joined.ms > GOALS.joinMs) keepLogs('join');
      await sleep(QUIET_MS);
      o.log(`${label} M=${M}: join balanced in ${joined.ms} ms, ${joined.moved} moved; graceful leave`);
      const leaver = members[0]!;
      const left = await leaveOrCrash(leaver, 'SIGTERM');
      if (quantile(left.perShardMs!.length ? left.perShardMs! : [0], 0.95) > GOALS.leaveP95Ms) keepLogs('leave', leaver);
      await sleep(QUIET_MS);
      o.log(
        `${label} M=${M}: leave: the last of ${left.fewest} shards owned again after ${left.ms} ms, ${left.moved} moved; the others meanwhile: ${describeWork(left.work!)}; crash`,
      );
      const crashing = members[0]!;
      const crashed = await leaveOrCrash(crashing, 'SIGKILL');
      if (crashed.ms > GOALS.crashMs) keepLogs('crash', crashing);
      o.log(
        `${label} M=${M}: crash: its ${crashed.fewest} shards owned again after ${crashed.ms} ms${afterExpiry(crashed)}; the others meanwhile: ${describeWork(crashed.work!)}`,
      );
      results.push({ shards: N, members: M, growMs, idle: idleFigures, join: joined, leave: left, crash: crashed });
    }
  } finally {
    files.stop();
    for (const m of members) m.proc.kill('SIGTERM');
    const all = Promise.all(members.map((m) => m.proc.exited));
    const late = setTimeout(() => members.forEach((m) => m.proc.kill('SIGKILL')), 20_000);
    await all;
    clearTimeout(late);
  }
  return results;
}

/**
 * Where a crash's time went: the first shard owned again, and the last counted from the expiry
 * (the victim's last heartbeat + the lease), which the kill's place in the retry period does not move.
 */
function afterExpiry(c: ChangeFigures): string {
  const first = c.perShardMs?.length ? Math.min(...c.perShardMs) : null;
  if (c.heartbeatBeforeMs == null || first === null) return '';
  const expiry = DEFAULT_T.leaseMs - c.heartbeatBeforeMs;
  return ` (its last heartbeat ${c.heartbeatBeforeMs} ms before the kill: the first after ${first} ms, the last ${c.ms - expiry} ms after the expiry)`;
}

/** One line of a change's work, for the bench's log. */
export function describeWork(w: ChangeWork): string {
  return `${w.cpuSeconds.toFixed(2)} s of CPU, ${w.planned} planned and ${w.quiet} quiet turns, ${w.fullReads} whole-group reads and ${w.changeReads} of changes (${w.records} records), ${w.writes} writes, ${w.conflicts} conflicts, ${w.failed} failed`;
}
