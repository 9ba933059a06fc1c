/**
 * `leasehold sidecar --shards N` as real processes on one real SQLite file: the members divide
 * the shards, each one's shards.json (read as an app reads it, readOwnedShards) and GET /shards
 * agree, `leasehold status` shows the group, a graceful leave hands its shards over by a
 * release and a SIGKILL by their expiry, each move with a token past every earlier one; and a shard's
 * release waits for the app's POST /shards/stopped, which only the drain key opens.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';
import { readOwnedShards, type OwnedShard, type ShardsStatus } from '../../src/status/shards-status.js';
import { runCli, startCli, tempDir, waitFor, type Proc } from '../support/cli.js';

const FAST = ['--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '400ms'];

interface Member {
  id: string;
  proc: Proc;
  statusDir: string;
  url: string;
}

describe('shard group members as processes on one SQLite file', () => {
  const dir = tempDir('leasehold-shards-');
  const procs: Proc[] = [];
  after(async () => {
    for (const p of procs) p.kill('SIGKILL');
    await Promise.all(procs.map((p) => p.exited));
    dir.cleanup();
  });
  const db = join(dir.path, 'leases.db');

  async function member(id: string, shards: number, extra: string[] = [], group = 'workers'): Promise<Member> {
    const statusDir = join(dir.path, `status-${id}`);
    const proc = startCli([
      'sidecar',
      '--shards',
      String(shards),
      '--lease',
      group,
      '--db',
      db,
      '--identity',
      id,
      '--status-dir',
      statusDir,
      '--listen',
      '127.0.0.1:0',
      ...extra,
    ]);
    procs.push(proc);
    const address = await waitFor(
      `${id}'s listen address`,
      () => /"listen":"([\d.:]+)"/.exec(proc.stderr())?.[1] ?? (proc.child.exitCode !== null && 'exited'),
      20_000,
    );
    assert.notEqual(address, 'exited', proc.stderr());
    return { id, proc, statusDir, url: `http://${address}` };
  }

  /** Each member's shards as its app sees them now (nothing past validUntil). */
  const owned = (ms: Member[]) => ms.map((m) => readOwnedShards(m.statusDir).owned);
  const shardsOf = (o: OwnedShard[]) => o.map((x) => x.shard);
  /** Every shard of N owned by exactly one of them, with these counts. */
  const settled = (ms: Member[], n: number, counts: number[]) => {
    const o = owned(ms);
    const all = o.flatMap(shardsOf).sort((a, b) => a - b);
    return all.length === n && all.every((s, i) => s === i) && o.map((x) => x.length).join() === counts.join() && o;
  };
  const tokens = (o: OwnedShard[][]) => new Map(o.flat().map((x) => [x.shard, x.fencingToken]));
  /** The highest token among them: every later take's comes from a block raised past it (the group's highWater). */
  const highest = (t: Map<number, number>) => Math.max(...t.values());

  it(
    'divide the shards; a graceful leave and a crash move only the leaver’s, each with a token past every earlier one; status shows the group',
    { timeout: 120_000 },
    async () => {
      const ms = [await member('a', 12, FAST), await member('b', 12, FAST), await member('c', 12, FAST)];
      const first = await waitFor('12 shards as 4, 4, 4', () => settled(ms, 12, [4, 4, 4]), 30_000);
      const before = tokens(first);

      for (const m of ms) {
        const body = (await (await fetch(`${m.url}/shards`)).json()) as ShardsStatus;
        assert.equal(body.group, 'workers');
        assert.equal(body.shards, 12);
        assert.equal(body.identity, m.id);
        assert.deepEqual(body.owned, readOwnedShards(m.statusDir).owned, `${m.id}: GET /shards says what shards.json says`);
      }
      assert.equal((await fetch(`${ms[0]!.url}/readyz`)).status, 200);

      // The group as `status` reads it, without writing.
      const st = await runCli(['status', '--lease', 'workers', '--db', db, '--json']);
      assert.equal(st.code, 0, st.stderr);
      const report = JSON.parse(st.stdout) as {
        kind: string;
        liveMembers: number;
        owners: { shard: number; owner: string; token: number; ownerLive: boolean }[];
      };
      assert.equal(report.kind, 'shard-group');
      assert.equal(report.liveMembers, 3);
      for (const [i, m] of ms.entries()) {
        for (const s of shardsOf(first[i]!))
          assert.deepEqual([report.owners[s]!.owner, report.owners[s]!.token, report.owners[s]!.ownerLive], [m.id, before.get(s), true]);
      }
      const text = await runCli(['status', '--lease', 'workers', '--db', db]);
      assert.equal(text.code, 0);
      assert.match(text.stdout, /^shards {3}12, created /m);
      assert.equal(text.stdout.match(/^\d+ +[abc] +\d+ +\d+\/\d+$/gm)?.length, 12, text.stdout);
      const watch = await runCli(['status', '--lease', 'workers', '--db', db, '--watch']);
      assert.equal(watch.code, 2);
      assert.match(watch.stderr, /^leasehold: --watch follows one lease, and workers is a shard group: /);

      // a's app follows the stream.
      const stream = await fetch(`${ms[0]!.url}/shards?watch=1`);
      const reader = stream.body!.getReader() as ReadableStreamDefaultReader<Uint8Array>;
      let streamed = '';
      const events = () => [...streamed.matchAll(/^event: shards\ndata: (.*)$/gm)].map((m) => JSON.parse(m[1]!) as ShardsStatus);
      void (async () => {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          streamed += new TextDecoder().decode(value);
        }
      })().catch(() => {});

      // c leaves gracefully: its shards are released to a and b.
      ms[2]!.proc.kill('SIGTERM');
      assert.equal((await ms[2]!.proc.exited).code, 0, ms[2]!.proc.stderr());
      const left = JSON.parse(readFileSync(join(ms[2]!.statusDir, 'shards.json'), 'utf8')) as ShardsStatus;
      assert.deepEqual(left.owned, []);
      assert.ok(left.stoppedAt !== null, 'its last write says it stopped');
      const second = await waitFor('12 shards as 6, 6', () => settled(ms.slice(0, 2), 12, [6, 6]), 20_000);
      const afterLeave = tokens(second);
      for (const s of shardsOf(first[2]!))
        assert.ok(afterLeave.get(s)! > highest(before), `c's shard ${s} moved with a token past every earlier one (${afterLeave.get(s)})`);
      for (const s of [...shardsOf(first[0]!), ...shardsOf(first[1]!)]) assert.equal(afterLeave.get(s), before.get(s), `shard ${s} did not move`);
      await waitFor('a six-shard event on the stream', () => events().some((e) => e.owned.length === 6), 10_000);

      // b is killed: a takes its shards once b's session could have expired.
      ms[1]!.proc.kill('SIGKILL');
      await ms[1]!.proc.exited;
      const third = await waitFor('a owns all 12', () => settled(ms.slice(0, 1), 12, [12]), 20_000);
      const afterCrash = tokens(third);
      for (const s of shardsOf(second[1]!))
        assert.ok(afterCrash.get(s)! > highest(afterLeave), `b's shard ${s} moved with a token past every earlier one (${afterCrash.get(s)})`);
      const crashed = JSON.parse((await runCli(['status', '--lease', 'workers', '--db', db, '--json'])).stdout) as { liveMembers: number };
      assert.equal(crashed.liveMembers, 1);

      await reader.cancel();
      ms[0]!.proc.kill('SIGTERM');
      assert.equal((await ms[0]!.proc.exited).code, 0, ms[0]!.proc.stderr());
    },
  );

  it("a shard's release waits for the app's POST /shards/stopped, and only the drain key opens it", { timeout: 120_000 }, async () => {
    const slow = ['--lease-duration', '6s', '--renew-deadline', '5s', '--retry-period', '500ms'];
    const a = await member('drain-a', 2, [...slow, '--drain-timeout', '2s'], 'drained');
    await waitFor('a owns both shards', () => readOwnedShards(a.statusDir).owned.length === 2, 30_000);
    const b = await member('drain-b', 2, slow, 'drained');
    const kept = await waitFor(
      'a gives one shard up',
      () => {
        const o = readOwnedShards(a.statusDir).owned;
        return o.length === 1 && o[0]!;
      },
      30_000,
    );
    const moving = 1 - kept.shard;
    // shards.json no longer lists it, and the drain holds its release: the record still names a.
    const store = new SqliteLeaseStore(db, { readonly: true });
    const holder = async () => {
      const r = (await store.listGroup('drained')).find((v) => v.record.kind === 'shard' && v.record.index === moving)?.record;
      return r?.kind === 'shard' ? { identity: r.holderIdentity, token: r.token } : null;
    };
    try {
      const during = await holder();
      assert.equal(during?.identity, 'drain-a', 'not released while the app may still work on it');
      const token = during?.token ?? NaN;
      const post = (auth: string | undefined, t = token) =>
        fetch(`${a.url}/shards/stopped?shard=${moving}&token=${t}`, { method: 'POST', headers: auth === undefined ? {} : { authorization: auth } });
      assert.equal((await post(undefined)).status, 401);
      assert.equal((await post(`Bearer ${token}`)).status, 403, 'the token, which /shards gives anyone, is not the key');
      const key = readFileSync(join(a.statusDir, 'drain-key'), 'utf8').trim();
      assert.equal((await post(`Bearer ${key}`, token + 1)).status, 409, 'another token ends nothing');
      assert.equal((await holder())?.identity, 'drain-a', 'no refused post released it');
      const ok = await post(`Bearer ${key}`);
      assert.equal(ok.status, 200, await ok.text());
      await waitFor(
        'b owns the shard with a token past it, from a block raised past the group highWater',
        () => {
          const o = readOwnedShards(b.statusDir).owned;
          return o.length === 1 && o[0]!.shard === moving && o[0]!.fencingToken > token;
        },
        10_000,
      );
      assert.match(a.proc.stderr(), /the app stopped the shard's work: releasing/);
    } finally {
      await store.close();
    }
    for (const m of [a, b]) m.proc.kill('SIGTERM');
    // a's last shard drains too on its way out: unanswered, it waits out its bound.
    for (const m of [a, b]) assert.equal((await m.proc.exited).code, 0, m.proc.stderr());
  });
});
