/**
 * The sidecar in shard mode on the fake clock and the in-memory group store, with real status
 * directories and a real HTTP server: shards.json and its order against each shard's drain, a
 * loss that cannot be written, the app's post per shard and its key, the probes, the metrics.
 * The CLI and real processes: test/sqlite/shard-sidecar.test.ts.
 */
import { describe, it, after, mock } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryGroupStore } from '../testing/memory-group-store.js';
import { ManualHealth } from '../health/manual-health.js';
import { InvalidConfigError } from '../errors.js';
import type { Logger } from '../log.js';
import type { ShardsStatus } from '../status/shards-status.js';
import { ownedShardsSelector, shardBounds, shardSelector } from '../shards/key-to-shard.js';
import { ShardSidecar, type ShardSidecarOptions } from './shard-sidecar.js';
import { ShardDrains } from './shard-drain.js';
import { DrainKey } from './drain-key.js';
import { ShardsPublisher } from './shards-publisher.js';
import { shardLiveness, shardReadiness } from './kubelet-probes.js';

const T = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
const G = 'workers';

class Store extends MemoryGroupStore {
  async close(): Promise<void> {}
}

const root = mkdtempSync(join(tmpdir(), 'leasehold-shard-sidecar-'));
after(() => rmSync(root, { recursive: true, force: true }));
let worlds = 0;

function world(shards: number) {
  const clock = new FakeClock();
  const store = new Store();
  const dir = join(root, `w${worlds++}`);
  const sidecars: { id: string; s: ShardSidecar; lines: string[] }[] = [];
  const add = async (id: string, over: Partial<ShardSidecarOptions> = {}) => {
    const lines: string[] = [];
    const line = (msg: string, f?: Record<string, unknown>) => lines.push(`${msg} ${JSON.stringify(f ?? {})}`);
    const log: Logger = { debug() {}, info: line, warn: line, error: line };
    const s = new ShardSidecar({ ...T, store, group: G, shards, identity: id, statusDir: join(dir, id), log, clock, ...over });
    await s.start();
    const entry = { id, s, lines };
    sidecars.push(entry);
    return entry;
  };
  const file = (id: string) => JSON.parse(readFileSync(join(dir, id, 'shards.json'), 'utf8')) as ShardsStatus;
  const fileShards = (id: string) => file(id).owned.map((o) => o.shard);
  const advanceUntil = async (cond: () => boolean, maxMs: number, stepMs = 100) => {
    for (let t = 0; !cond() && t < maxMs; t += stepMs) await clock.advance(stepMs);
    return cond();
  };
  const record = (s: number) => {
    const r = store.peek(G).find((v) => v.record.kind === 'shard' && v.record.index === s)?.record;
    return r?.kind === 'shard' ? r : undefined;
  };
  const stopAll = async () => {
    const stopping = Promise.all(sidecars.map(({ s }) => s.stop()));
    await clock.advance(T.renewDeadlineMs);
    await stopping;
  };
  return { clock, store, dir, add, file, fileShards, advanceUntil, record, stopAll };
}

describe('the sidecar in shard mode', () => {
  it('shards.json says what the member owns, each shard with its token, the members and validUntil; the last write says it stopped', async () => {
    const w = world(4);
    const a = await w.add('a');
    assert.deepEqual(w.file('a').owned, [], 'written at start, owning nothing');
    assert.ok(await w.advanceUntil(() => w.fileShards('a').length === 4, 20_000));
    const f = w.file('a');
    assert.deepEqual(
      f.owned,
      [0, 1, 2, 3].map((shard) => ({ shard, fencingToken: f.owned[shard]!.fencingToken, ...shardBounds(shard, 4) })),
    );
    // One block raised on the group's highWater: tokens 1 to 4, one per shard.
    assert.deepEqual(f.owned.map((o) => o.fencingToken).sort(), [1, 2, 3, 4]);
    assert.deepEqual(
      f.owned.map((o) => [o.start, o.end]),
      [
        ['0x0000000000000000', '0x4000000000000000'],
        ['0x4000000000000000', '0x8000000000000000'],
        ['0x8000000000000000', '0xc000000000000000'],
        ['0xc000000000000000', '0x10000000000000000'],
      ],
    );
    assert.equal(f.ownedSelector, "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')", 'all four shards: one range');
    assert.equal(f.group, G);
    assert.equal(f.shards, 4);
    assert.equal(f.members, 1);
    assert.equal(f.identity, 'a');
    assert.equal(f.standingAside, null);
    assert.equal(f.stoppedAt, null);
    assert.equal(f.validUntil, a.s.member.snapshot().validUntil!.toISOString());
    assert.ok(Date.parse(f.validUntil ?? '') > w.clock.now().getTime());
    assert.deepEqual(
      readdirSync(join(w.dir, 'a')).filter((n) => !/^\.leasehold-claim\.[0-9a-f]{16}\.sock$/.test(n)),
      ['shards.json'],
      'no temp file left, no key without drainKey (the claim’s socket aside)',
    );
    const b = await w.add('b');
    assert.ok(await w.advanceUntil(() => w.fileShards('a').length === 2 && w.fileShards('b').length === 2, 20_000));
    assert.deepEqual([...w.fileShards('a'), ...w.fileShards('b')].sort(), [0, 1, 2, 3]);
    assert.ok(
      w.file('b').owned.every((o) => o.fencingToken > 4),
      'a shard that moved has a token past every token the group issued',
    );
    assert.equal(w.file('a').members, 2);
    for (const id of ['a', 'b']) {
      const g = w.file(id);
      assert.equal(g.ownedSelector, ownedShardsSelector(w.fileShards(id), 4), `${id}'s selector is its own shards'`);
      assert.ok(g.owned.every((o) => o.selector === shardSelector(o.shard, 4)));
    }
    const stopping = b.s.stop();
    assert.ok(await w.advanceUntil(() => w.fileShards('a').length === 4, 5_000, 50));
    await stopping;
    assert.deepEqual(w.file('b').owned, []);
    const stoppedAt = Date.parse(w.file('b').stoppedAt ?? '');
    assert.ok(stoppedAt > Date.parse(f.updatedAt) && stoppedAt <= w.clock.now().getTime(), 'its last write says when it stopped');
    await w.stopAll();
  });

  it('a pass of takes in several batches writes shards.json once, at its end, not once per batch', async () => {
    // At N = 4096 each write of shards.json (1 MB, fsynced) cost more than the batch of takes
    // it followed, and a pass of 2,048 takes wrote it 8 times (docs/benchmarks.md).
    const N = 600; // 3 batches of takes (256 rows each at most)
    const w = world(N);
    const written = mock.method(ShardsPublisher.prototype, 'publish');
    try {
      await w.add('a');
      assert.ok(await w.advanceUntil(() => w.fileShards('a').length === N, 20_000));
      const partial = written.mock.calls.map((c) => c.arguments[0].owned.length).filter((n) => n > 0 && n < N);
      assert.deepEqual(partial, [], 'no write of shards.json holds part of the pass');
      await w.stopAll();
    } finally {
      written.mock.restore();
    }
  });

  it('a leave of many shards builds shards.json a few times, not once per shard', async () => {
    // Each lost shard's gate checks that the file holds its loss; the pass's one publish already
    // wrote every loss, so the gates do not build the file again: a leave of 2,048 shards at
    // N = 4096 built it 2,048 times (docs/benchmarks.md, "Shard writes at N = 4096").
    const N = 64;
    const w = world(N);
    const a = await w.add('a');
    assert.ok(await w.advanceUntil(() => w.fileShards('a').length === N, 20_000));
    // Counts the builds of shards.json, each passed on to the real publish.
    const built = mock.method(ShardsPublisher.prototype, 'publish');
    try {
      const stopping = a.s.stop();
      await w.clock.advance(T.renewDeadlineMs);
      await stopping;
    } finally {
      built.mock.restore();
    }
    assert.deepEqual(w.file('a').owned, [], 'every shard given up');
    assert.equal(w.record(0)?.owner ?? null, null, 'released, not left to expire');
    const builds = built.mock.callCount();
    assert.ok(builds <= 8, `shards.json built ${builds} times for a leave of ${N} shards`);
  });

  it('a leave of many shards with --drain-timeout sets one bound for the pass, not a timer per shard in the member and another in the drain', async () => {
    const N = 64;
    const DRAIN_MS = 3_333; // the bound's timers are the ones set for exactly this long
    const w = world(N);
    let bounds = 0;
    const setTimer = w.clock.setTimer.bind(w.clock);
    w.clock.setTimer = (fn, ms) => {
      if (ms === DRAIN_MS) bounds++;
      return setTimer(fn, ms);
    };
    const a = await w.add('a', { drainTimeoutMs: DRAIN_MS });
    assert.ok(await w.advanceUntil(() => w.fileShards('a').length === N, 20_000));
    bounds = 0;
    const stopping = a.s.stop();
    await w.clock.advance(DRAIN_MS + T.retryPeriodMs);
    await stopping;
    assert.deepEqual(w.file('a').owned, [], 'every shard given up');
    assert.equal(bounds, 1, `drain bounds set for a leave of ${N} shards: ${bounds}`);
  });

  it("a lost shard is written as not owned before its drain begins, and released only once the app posts that shard's token", async () => {
    const w = world(2);
    const seenAtDrain: number[][] = [];
    const a = await w.add('a', { drainTimeoutMs: 3_000 });
    // When the sidecar starts waiting for the app, what does the app read?
    const info = a.lines.push.bind(a.lines);
    a.lines.push = (l: string) => {
      if (l.startsWith('draining: waiting')) seenAtDrain.push(w.fileShards('a'));
      return info(l);
    };
    assert.ok(await w.advanceUntil(() => w.fileShards('a').length === 2, 20_000));
    await w.add('b');
    assert.ok(await w.advanceUntil(() => seenAtDrain.length === 1, 10_000));
    assert.equal(seenAtDrain[0]!.length, 1, 'shards.json lists only the shard a keeps');
    const kept = seenAtDrain[0]![0]!;
    const moving = 1 - kept;
    assert.equal(w.record(moving)?.holderIdentity, 'a', 'not released while the app works on it');
    await w.clock.advance(2_500);
    assert.equal(w.record(moving)?.holderIdentity, 'a', 'still not released');
    const drains = a.s['drains'];
    const keptToken = w.record(kept)!.token;
    const movingToken = w.record(moving)!.token;
    assert.equal(drains.report([String(kept)], [String(keptToken)]).code, 409, 'a shard still owned cannot be reported');
    assert.equal(drains.report([String(moving)], [String(movingToken + 10)]).code, 409, 'nor another token');
    assert.equal(drains.report([String(moving)], [String(movingToken)]).code, 200);
    assert.ok(await w.advanceUntil(() => w.fileShards('b').length === 1, 1_000, 10));
    const taken = w.file('b').owned[0]!.fencingToken;
    assert.ok(taken > Math.max(keptToken, movingToken), `b's token ${taken} is past every token the group issued`);
    assert.deepEqual(w.file('b').owned, [{ shard: moving, fencingToken: taken, ...shardBounds(moving, 2) }]);
    await w.stopAll();
  });

  it('a leave of many shards writes shards.json once for them all, and each is unlisted before its release', async () => {
    const w = world(64);
    const a = await w.add('a');
    assert.ok(await w.advanceUntil(() => w.fileShards('a').length === 64, 20_000));
    await w.add('b');
    assert.ok(await w.advanceUntil(() => w.fileShards('a').length === 32 && w.fileShards('b').length === 32, 20_000));
    const aDir = join(w.dir, 'a');
    let writes = 0;
    const listedAtRelease: number[] = [];
    // eslint-disable-next-line @typescript-eslint/unbound-method -- put back as it was, and called with its this
    const publish = ShardsPublisher.prototype.publish;
    const update = w.store.updateGroupRecord.bind(w.store);
    // Every write of a's file, and what the file lists as a's releases reach the store.
    ShardsPublisher.prototype.publish = function (this: ShardsPublisher, status) {
      const wrote = publish.call(this, status);
      if (wrote && this.dir === aDir) writes++;
      return wrote;
    };
    w.store.updateGroupRecord = (group, record, version, opts) => {
      if (record.kind === 'shard' && record.owner === null) listedAtRelease.push(...w.fileShards('a').filter((s) => s === record.index));
      return update(group, record, version, opts);
    };
    try {
      const stopping = a.s.stop();
      assert.ok(await w.advanceUntil(() => w.fileShards('b').length === 64, 10_000, 10));
      await w.clock.advance(T.renewDeadlineMs);
      await stopping;
    } finally {
      ShardsPublisher.prototype.publish = publish;
      w.store.updateGroupRecord = update;
    }
    assert.deepEqual(listedAtRelease, [], 'no shard is released while shards.json still lists it');
    // The pass that ends the 32 shards, the members' count, the slot given up, the last write that
    // says it stopped: 35 writes before, one per shard lost.
    assert.ok(writes <= 4, `shards.json written ${writes} times for a leave of 32 shards`);
    await w.stopAll();
  });

  it('a loss that cannot be written to shards.json is not released: the shard is kept until it could have expired', async () => {
    for (const broken of [false, true]) {
      const w = world(2);
      const a = await w.add('a');
      assert.ok(await w.advanceUntil(() => w.fileShards('a').length === 2, 20_000));
      if (broken) {
        // The status directory is moved away and a file stands in its place: every write fails
        // (as root too). Moved, not removed: a new directory must not take its inode, which
        // names a's claim.
        renameSync(join(w.dir, 'a'), join(w.dir, 'a-moved'));
        writeFileSync(join(w.dir, 'a'), '');
      }
      const b = await w.add('b');
      const joined = w.clock.monotonic();
      assert.ok(await w.advanceUntil(() => b.s.member.snapshot().owned.length === 1, 30_000, 100));
      const waited = w.clock.monotonic() - joined;
      if (broken) {
        assert.ok(waited >= T.leaseDurationMs - T.retryPeriodMs, `moved after ${waited} ms: kept until it could have expired`);
        assert.ok(
          a.lines.some((l) => l.startsWith('a lost shard could not be written to shards.json: it is left to expire, not released')),
          a.lines.join('\n'),
        );
      } else assert.ok(waited <= 2 * T.retryPeriodMs, `moved after ${waited} ms: released at once`);
      await w.stopAll();
    }
  });

  it('a member that cannot write shards.json gives its shards up, is not ready, and says why; it takes again once a write succeeds', async () => {
    const w = world(4);
    const a = await w.add('a');
    const b = await w.add('b');
    assert.ok(await w.advanceUntil(() => w.fileShards('a').length === 2 && w.fileShards('b').length === 2, 30_000));
    // shards.json cannot be replaced: a directory with an entry stands in its place (EISDIR, as root too).
    rmSync(join(w.dir, 'a', 'shards.json'));
    mkdirSync(join(w.dir, 'a', 'shards.json', 'blocker'), { recursive: true });
    const broken = w.clock.monotonic();
    assert.ok(await w.advanceUntil(() => b.s.member.snapshot().owned.length === 4, 2 * T.leaseDurationMs), 'b owns every shard');
    const waited = w.clock.monotonic() - broken;
    assert.ok(waited <= T.leaseDurationMs + 2 * T.retryPeriodMs, `b owned them all ${waited} ms after a's file broke`);
    assert.deepEqual(a.s.member.snapshot().owned, [], 'a kept none');
    const ready = shardReadiness(a.s.member.snapshot());
    assert.equal(ready.ok, false);
    assert.match(ready.reason, /cannot be written/);
    const failed = a.lines.filter((l) => l.startsWith('cannot write status files'));
    assert.equal(failed.length, 1, a.lines.join('\n'));
    assert.match(failed[0]!, /"code":"EISDIR"/);
    assert.equal((await a.s.metrics.statusWritable.get()).values[0]?.value, 0);
    assert.ok(((await a.s.metrics.statusWriteFailures.get()).values[0]?.value ?? 0) >= 2);
    // Writable again: a takes its share back.
    rmSync(join(w.dir, 'a', 'shards.json'), { recursive: true });
    const fileIsBack = () => existsSync(join(w.dir, 'a', 'shards.json'));
    assert.ok(
      await w.advanceUntil(() => fileIsBack() && w.fileShards('a').length === 2 && w.fileShards('b').length === 2, 4 * T.leaseDurationMs),
      'a took its share again',
    );
    assert.equal(w.file('a').standingAside, null);
    assert.equal(shardReadiness(a.s.member.snapshot()).ok, true);
    assert.equal((await a.s.metrics.statusWritable.get()).values[0]?.value, 1);
    await w.stopAll();
  });

  it('every series exists from the start; gains, losses, members and orphans are counted', async () => {
    const w = world(4);
    const a = await w.add('a', { statusDir: undefined });
    const metrics = async () => a.s.metrics.registry.metrics();
    let text = await metrics();
    for (const line of [
      'leasehold_shards_owned{group="workers"} 0',
      'leasehold_shard_changes_total{group="workers",event="gained"} 0',
      'leasehold_shard_changes_total{group="workers",event="lost"} 0',
      'leasehold_shards_orphaned{group="workers"} 4',
      'leasehold_shard_group_members{group="workers"} 0',
      'leasehold_shard_turns_total{group="workers",turn="quiet"} 0',
    ])
      assert.ok(text.includes(line), `${line} in:\n${text}`);
    // The member's reads (it has read once by now): both kinds, whether or not one came yet.
    for (const series of ['reads_total', 'records_read_total'])
      for (const read of ['full', 'changes']) assert.match(text, new RegExp(`leasehold_shard_group_${series}\\{group="workers",read="${read}"\\} \\d+\n`));
    assert.ok(!text.includes('leasehold_app_eligible{'), 'no eligibility series without a health source');
    assert.ok(await w.advanceUntil(() => a.s.member.snapshot().owned.length === 4, 20_000));
    const b = await w.add('b', { statusDir: undefined });
    // Balanced as a sees it: its two given up, b's two taken (until a has listed b's takes, a's
    // count of shards without a live owner still holds the two it freed).
    assert.ok(
      await w.advanceUntil(
        () => a.s.member.snapshot().owned.length === 2 && b.s.member.snapshot().owned.length === 2 && a.s.member.snapshot().orphaned === 0,
        20_000,
      ),
      JSON.stringify(a.s.member.snapshot()),
    );
    text = await metrics();
    for (const line of [
      'leasehold_shards_owned{group="workers"} 2',
      'leasehold_shard_changes_total{group="workers",event="gained"} 4',
      'leasehold_shard_changes_total{group="workers",event="lost"} 2',
      'leasehold_shards_orphaned{group="workers"} 0',
      'leasehold_shard_group_members{group="workers"} 2',
    ])
      assert.ok(text.includes(line), `${line} in:\n${text}`);
    assert.match(text, /leasehold_backend_request_duration_seconds_count\{backend="memory",op="update",result="ok"\} [1-9]/);
    // The member's reads reach the counters: the first, whole-group one (of a group still empty),
    // then reads of changes, which brought the records the two members wrote.
    assert.match(text, /leasehold_shard_group_reads_total\{group="workers",read="full"\} [1-9]/);
    assert.match(text, /leasehold_shard_group_records_read_total\{group="workers",read="changes"\} [1-9]/);
    // Balanced, the turns after the other's heartbeats plan nothing new: they are quiet.
    const planned = a.s.member.snapshot().turns.planned;
    assert.ok(await w.advanceUntil(() => a.s.member.snapshot().turns.quiet >= 3, 20_000), JSON.stringify(a.s.member.snapshot().turns));
    text = await metrics();
    assert.match(text, /leasehold_shard_turns_total\{group="workers",turn="quiet"\} [1-9]/);
    assert.match(text, new RegExp(`leasehold_shard_turns_total\\{group="workers",turn="planned"\\} ${a.s.member.snapshot().turns.planned}\n`));
    assert.ok(a.s.member.snapshot().turns.planned >= planned);
    await w.stopAll();
  });

  it('ready while it holds a session and its app is eligible; a member whose app is not is leaving, not ready', async () => {
    const w = world(4);
    const health = new ManualHealth({ failureThreshold: 1, successThreshold: 1, holdDownMs: 0 }, w.clock);
    health.healthy();
    const a = await w.add('a', { eligibility: health });
    const ready = () => shardReadiness(a.s.member.snapshot());
    assert.ok(await w.advanceUntil(() => ready().ok, 1_000, 10));
    assert.match(ready().reason, /^member of shard group workers \(slot \d+\), owns 0 of 4 shards$/);
    assert.ok(await w.advanceUntil(() => a.s.member.snapshot().owned.length === 4, 20_000));
    health.unhealthy('connection refused');
    await w.clock.advance(0);
    assert.equal(ready().ok, false);
    assert.match(ready().reason, /^not taking shards: app unhealthy: connection refused$/);
    assert.ok(await w.advanceUntil(() => w.fileShards('a').length === 0, 1_000, 10), 'it gave its shards up');
    assert.equal(w.file('a').standingAside?.reason, 'app unhealthy: connection refused');
    assert.equal(a.s.member.snapshot().state, 'leaving');
    assert.equal(shardLiveness(a.s.member.snapshot(), T, w.clock.monotonic()).ok, true, 'alive though not ready');
    await w.stopAll();
    assert.equal(shardLiveness(a.s.member.snapshot(), T, w.clock.monotonic()).ok, false, 'a stopped loop is not alive');
  });

  it('a group whose records say another shard count is refused at start, before anything is written', async () => {
    const w = world(4);
    await w.add('a');
    await w.clock.advance(1_000);
    const dir = join(w.dir, 'b');
    const b = new ShardSidecar({ ...T, store: w.store, group: G, shards: 8, identity: 'b', statusDir: dir, log: silent, clock: w.clock });
    await assert.rejects(
      () => b.start(),
      (err: unknown) =>
        err instanceof InvalidConfigError && /shard group workers has 4 shards, not 8: every member of a group gives the same --shards/.test(err.message),
    );
    await b.stop();
    assert.equal(existsSync(dir), false, 'no status directory was created');
    assert.equal(w.store.peek(G).filter((v) => v.record.kind === 'member').length, 1, 'b took no member slot');
    await w.stopAll();
  });

  it('a group recreated with another shard count while it runs: it leaves, and both probes say its loop is not running', async () => {
    const w = world(4);
    const a = await w.add('a');
    assert.ok(await w.advanceUntil(() => w.fileShards('a').length === 4, 20_000));
    const header = w.store.peek(G).find((v) => v.record.kind === 'group')!.record;
    w.store.put(G, { ...header, shards: 5 } as typeof header);
    assert.ok(await w.advanceUntil(() => a.s.member.snapshot().session === null, 5_000), 'it left the group');
    assert.ok(a.lines.some((l) => l.startsWith('leaving the shard group') && l.includes('has 5 shards, not 4')));
    // At once, not after a lease duration without a turn: it will never rejoin, so a restart must say why.
    const live = shardLiveness(a.s.member.snapshot(), T, w.clock.monotonic());
    assert.deepEqual([live.ok, live.reason], [false, 'shard member loop is not running']);
    const ready = shardReadiness(a.s.member.snapshot());
    assert.deepEqual([ready.ok, ready.reason], [false, 'shard member loop is not running'], 'not "not a member yet": it never will be');
    await w.stopAll();
  });
});

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };

describe('the shard sidecar over HTTP', () => {
  it("a report that comes before the gate reaches the shard is logged as the release's reason too", async () => {
    const w = world(2);
    // The app's report arrives as the loss is told, before the member's gate asks for it.
    let early: { code: number } | undefined;
    const a = await w.add('a', {
      drainTimeoutMs: 3_000,
      listener: { onShardLost: (shard, token) => (early = a.s['drains'].report([String(shard)], [String(token)])) },
    });
    assert.ok(await w.advanceUntil(() => a.s.member.snapshot().owned.length === 2, 20_000));
    await w.add('b');
    assert.ok(
      await w.advanceUntil(
        () => a.s.member.snapshot().owned.length === 1 && w.record(1 - a.s.member.snapshot().owned[0]!.shard)?.holderIdentity === 'b',
        10_000,
        50,
      ),
    );
    assert.equal(early?.code, 200);
    const moved = 1 - a.s.member.snapshot().owned[0]!.shard;
    assert.ok(
      a.lines.some((l) => l.startsWith("the app stopped the shard's work: releasing") && l.includes(`"shard":${moved}`)),
      a.lines.join('\n'),
    );
    assert.ok(!a.lines.some((l) => l.startsWith('draining: waiting')), 'nothing to wait for: the report had come');
    await w.stopAll();
  });

  it('GET /shards and its stream, /readyz, and POST /shards/stopped only with the drain key', async () => {
    const w = world(2);
    const a = await w.add('a', { listen: { host: '127.0.0.1', port: 0 }, drainTimeoutMs: 3_000, drainKey: true });
    const port = (a.s['server']!['server']!.address() as { port: number }).port;
    const url = `http://127.0.0.1:${port}`;
    const get = async (path: string) => {
      const r = await fetch(url + path);
      return { code: r.status, body: await r.text() };
    };
    assert.ok(await w.advanceUntil(() => a.s.member.snapshot().owned.length === 2, 20_000));
    const shards = await get('/shards');
    assert.equal(shards.code, 200);
    const body = JSON.parse(shards.body) as ShardsStatus;
    const tokens = body.owned.map((o) => o.fencingToken);
    assert.deepEqual([...tokens].sort(), [1, 2], 'one block: tokens 1 and 2');
    assert.deepEqual(body.owned, [
      { shard: 0, fencingToken: tokens[0], start: '0x0000000000000000', end: '0x8000000000000000', selector: shardSelector(0, 2) },
      { shard: 1, fencingToken: tokens[1], start: '0x8000000000000000', end: '0x10000000000000000', selector: shardSelector(1, 2) },
    ]);
    assert.equal(body.ownedSelector, "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')");
    assert.equal((await get('/readyz')).code, 200);
    assert.equal((await get('/healthz')).code, 200);
    assert.deepEqual(await get('/leader'), { code: 404, body: 'not found: try /healthz /readyz /shards /shards/stopped /metrics\n' });
    assert.equal((await get('/shards?watch=maybe')).code, 400);
    assert.equal((await fetch(`${url}/shards`, { method: 'POST' })).status, 405);

    // The stream: the current state first, then each change.
    const stream = await fetch(`${url}/shards?watch=1`);
    assert.equal(stream.headers.get('content-type'), 'text/event-stream');
    const reader = stream.body!.getReader() as ReadableStreamDefaultReader<Uint8Array>;
    let text = '';
    const events = () => [...text.matchAll(/^event: shards\ndata: (.*)$/gm)].map((m) => JSON.parse(m[1]!) as ShardsStatus);
    const readUntil = async (cond: () => boolean) => {
      while (!cond()) {
        const chunk = (await reader.read()).value;
        text += new TextDecoder().decode(chunk);
      }
    };
    await readUntil(() => events().length >= 1);
    assert.equal(events()[0]!.owned.length, 2);

    await w.add('b');
    assert.ok(await w.advanceUntil(() => a.s.member.snapshot().owned.length === 1, 10_000, 50));
    await readUntil(() => events().some((e) => e.owned.length === 1));
    const kept = a.s.member.snapshot().owned[0]!.shard;
    const moving = 1 - kept;
    const one = events().find((e) => e.owned.length === 1)!;
    assert.equal(one.ownedSelector, shardSelector(kept, 2), "the stream's event carries the selector of the one shard left");
    assert.deepEqual(
      one.owned.map((o) => o.selector),
      [shardSelector(kept, 2)],
    );
    const movingToken = w.record(moving)!.token;
    const post = (auth?: string, query = `shard=${moving}&token=${movingToken}`) =>
      fetch(`${url}/shards/stopped?${query}`, { method: 'POST', headers: auth ? { authorization: auth } : {} });
    const none = await post();
    assert.equal(none.status, 401);
    assert.equal(none.headers.get('www-authenticate'), 'Bearer realm="leasehold drain"');
    assert.equal((await post('Bearer 1')).status, 403, 'the token, which /shards gives anyone, is not the key');
    await w.clock.advance(500);
    assert.equal(w.record(moving)?.holderIdentity, 'a', 'no refused post ended the drain');
    const key = readFileSync(join(w.dir, 'a', 'drain-key'), 'utf8').trim();
    assert.equal((await post(`Bearer ${key}`, `shard=${moving}&shard=${moving}&token=${movingToken}`)).status, 400);
    assert.equal((await post(`Bearer ${key}`, `shard=7&token=${movingToken}`)).status, 400);
    const okPost = await post(`Bearer ${key}`);
    assert.equal(okPost.status, 200, await okPost.text());
    assert.ok(await w.advanceUntil(() => w.record(moving)?.holderIdentity === 'b', 2_000, 10), 'released once the app posted, then taken');
    await reader.cancel();
    await w.stopAll();
  });
});

describe('ShardDrains: the per-shard drain and its reports', () => {
  it('takes a report only for the ownership of that shard that ended last, never one still held', async () => {
    const clock = new FakeClock();
    const d = new ShardDrains(clock, 8);
    d.gained(3, 5);
    d.gained(4, 2);
    d.lost(3, 5);
    let stopped: boolean | null = null;
    void d.wait(3, 5, 1_000).then((v) => (stopped = v));
    assert.equal(d.report(['4'], ['2']).code, 409);
    assert.equal(d.report(['3'], ['4']).code, 409);
    assert.equal(d.report(['3'], []).code, 400);
    assert.equal(d.report(['3'], ['0x5']).code, 400);
    assert.equal(d.report(['8'], ['5']).code, 400);
    assert.equal(d.report(['3', '3'], ['5']).code, 400);
    await clock.advance(0);
    assert.equal(stopped, null);
    assert.equal(d.report(['3'], ['5']).code, 200);
    await clock.advance(0);
    assert.equal(stopped, true);
    d.lost(4, 2);
    assert.equal(await Promise.all([d.wait(4, 2, 1_000), clock.advance(1_000)]).then(([v]) => v), false, 'no report within the bound');
  });

  it('with a key, a report without it is refused before anything about the shards is said', () => {
    const dir = mkdtempSync(join(root, 'key-'));
    const key = new DrainKey(dir);
    key.publish();
    const d = new ShardDrains(new FakeClock(), 8, key);
    d.lost(1, 1);
    const none = d.report(['99'], []);
    assert.equal(none.code, 401, 'not 400: a caller without the key learns nothing of the rules');
    assert.equal(d.report(['1'], ['1'], 'Bearer nope').code, 403);
    assert.equal(d.report(['1'], ['1'], `Bearer ${readFileSync(join(dir, 'drain-key'), 'utf8').trim()}`).code, 200);
  });
});
