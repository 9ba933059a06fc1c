/**
 * Issue 43: a shard member cut off from the API server, then healed. Three real `leasehold
 * sidecar --shards` processes on the test control plane, each with an app that says at once
 * that a lost shard's work stopped (test/support/shard-drain-app.ts); member c reaches the API
 * server through a proxy the test cuts and heals (test/support/cuttable-proxy.ts: silence, as an
 * iptables DROP rule gives). A sampler reads every member's shards.json as the apps read it
 * (readOwnedShards) every 10 ms and times how long each shard had no owner.
 *
 * - Cut long enough for c's session to expire in the others' view: a and b take c's shards;
 *   healed, c joins anew and the shards that move back to it go through a and b's gates (their
 *   apps said stopped), so each is owned again within a graceful move's time, not a lease.
 * - Cut only until c's session is over for c itself (its apps said its shards stopped, but its
 *   releases could not reach the store): healed, c releases what its app drained and its old
 *   session's slot at once, instead of everyone waiting for that session to expire.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { backendArgs, env, freshNamespace } from '../support/kube.js';
import { startCuttableProxy, type CuttableProxy } from '../support/cuttable-proxy.js';
import { followShards, type ShardDrainApp } from '../support/shard-drain-app.js';
import { ShardGaps } from '../support/shard-gaps.js';
import { readShards } from '../support/shard-scenario.js';
import { startTimedMember, type ShardTiming } from '../support/shard-pause.js';
import { readOwnedShards } from '../../src/status/shards-status.js';
import type { Member } from '../support/shard-scenario.js';

const N = 12;
/** A lease well past the renew deadline: c's session is over for c seconds before the others may judge it so. */
const TIMING: ShardTiming = { leaseMs: 8_000, renewDeadlineMs: 3_000, retryMs: 500 };
/** The longest drain these timings allow: renew-deadline/2 − retry-period. */
const DRAIN = '1000ms';
/**
 * A move through the gate: the old owner's list of the change (a hint, at most every 50 ms),
 * "not owned" written, the app's report, the release, the new owner's list and take. A rollout's
 * graceful moves took at most 0.9 s on the cluster (issue 43); a wait for an expiry is the
 * lease, 8 s here, less what passed before the heal (c gives its shards up 3 s in, healed at once).
 */
const GRACEFUL_MS = 2_500;

interface Running extends Member {
  url: string;
  app: ShardDrainApp;
}

describe('a shard member cut off from the API server and healed (Kubernetes)', () => {
  const procs: Proc[] = [];
  const apps: ShardDrainApp[] = [];
  const proxies: CuttableProxy[] = [];
  const dir = scratchDir(() => procs, 'leasehold-shard-heal-');
  after(async () => {
    for (const a of apps) a.stop();
    for (const p of proxies) await p.close();
  });

  /** A kubeconfig like the admin's whose server is the proxy. */
  const throughProxy = (proxy: CuttableProxy, name: string): string => {
    const text = readFileSync(env().admin, 'utf8').replace(/server: https:\/\/127\.0\.0\.1:\d+/, `server: https://127.0.0.1:${proxy.port}`);
    const file = join(dir.path, `${name}.kubeconfig`);
    writeFileSync(file, text, { mode: 0o600 });
    return file;
  };

  const adminPort = (): number => Number(/server: https:\/\/127\.0\.0\.1:(\d+)/.exec(readFileSync(env().admin, 'utf8'))![1]);

  async function member(id: string, args: string[]): Promise<Running> {
    const m = startTimedMember(dir.path, `${id}`, args, N, TIMING, ['--listen', '127.0.0.1:0', '--drain-timeout', DRAIN]);
    procs.push(m.proc);
    const address = await waitFor(
      `${m.id}'s listen address`,
      () => /"listen":"([\d.:]+)"/.exec(m.proc.stderr())?.[1] ?? (m.proc.child.exitCode !== null && 'exited'),
      30_000,
    );
    assert.notEqual(address, 'exited', m.proc.stderr());
    const url = `http://${address}`;
    const app = followShards(url, m.statusDir);
    apps.push(app);
    return { ...m, url, app };
  }

  /** Every member's shards as its app reads them now. */
  const ownersNow = (ms: Running[], now = new Date()) => new Map(ms.map((m) => [m.id, readOwnedShards(m.statusDir, now).owned.map((o) => o.shard)]));

  /** Whether a snapshot of the members' shards has every shard owned once, with these counts. */
  const ownedOnce = (owners: ReadonlyMap<string, readonly number[]>, counts: number[]): boolean => {
    const o = [...owners.values()];
    return new Set(o.flat()).size === N && o.map((x) => x.length).join() === counts.join();
  };

  /** Waits until the members own every shard once, with these counts. */
  const settled = (ms: Running[], counts: number[], what: string, timeoutMs = 60_000) => waitFor(what, () => ownedOnce(ownersNow(ms), counts), timeoutMs, 20);

  /**
   * The same wait judged on the sampler's own snapshots (all of the group's members, the only
   * ones it samples), so the gaps it records are complete when this returns. A check reading the
   * files itself could see the last move first: c takes its 4 shards back in one write of
   * shards.json, and a CI run judged the gaps before the sampler's next snapshot, finding none.
   */
  const sampledSettled = (gaps: ShardGaps, counts: number[], what: string, timeoutMs = 60_000) =>
    waitFor(what, () => gaps.latest !== null && ownedOnce(gaps.latest, counts), timeoutMs, 10);

  /** Each member's log lines from `since` on, as "id +ms message", for a failure's message. */
  const logSince = (ms: Running[], since: number): string =>
    ms
      .flatMap((m) =>
        m.proc
          .stderr()
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as { time: string; msg: string })
          .filter((l) => Date.parse(l.time) >= since)
          .map((l) => `${m.id} +${Date.parse(l.time) - since} ${l.msg}`),
      )
      .join('; ');

  async function group(lease: string) {
    const ns = await freshNamespace('shard-heal');
    const proxy = await startCuttableProxy({ host: '127.0.0.1', port: adminPort() });
    proxies.push(proxy);
    const ms = [
      await member(`${lease}-a`, backendArgs(ns, lease)),
      await member(`${lease}-b`, backendArgs(ns, lease)),
      await member(`${lease}-c`, backendArgs(ns, lease, throughProxy(proxy, lease))),
    ];
    await settled(ms, [4, 4, 4], 'three members, 4 shards each', 90_000);
    const gaps = new ShardGaps();
    const timer = setInterval(() => gaps.observe(Date.now(), ownersNow(ms)), 10);
    return { ms, proxy, gaps, stopSampling: () => clearInterval(timer) };
  }

  it(
    'cut past its session in the others’ view: the shards that move back to it are owned again within a graceful move, each',
    { timeout: 240_000 },
    async () => {
      const { ms, proxy, gaps, stopSampling } = await group('long');
      const [a, b, c] = ms as [Running, Running, Running];
      try {
        const back = readOwnedShards(c.statusDir).owned.map((o) => o.shard);
        proxy.cut();
        const cutAt = Date.now();
        // a and b take c's shards once its session could have expired (a lease after its last heartbeat).
        await settled([a, b], [6, 6], "a and b owning c's shards", 60_000);
        const takenMs = Date.now() - cutAt;
        const healAt = Date.now();
        proxy.heal();
        await sampledSettled(gaps, [4, 4, 4], 'c owning its share again', 60_000);
        const settledMs = Date.now() - healAt;
        const gained = readOwnedShards(c.statusDir).owned.map((o) => o.shard);
        // A move faster than the sampler's 10 ms shows no gap at all (the sampler saw the end state: sampledSettled).
        const moved = gaps.movedTo(c.id, healAt);
        console.log(
          `long cut: a and b owned c's ${back.length} shards ${takenMs} ms after the cut; healed, settled in ${settledMs} ms; ` +
            `c owns ${gained.join(' ')}; gaps seen: ${moved.map((g) => `${g.shard} from ${g.from} unowned ${g.ms} ms`).join(', ') || 'none'}`,
        );
        assert.equal(gained.length, 4);
        for (const g of moved) assert.ok(g.ms < GRACEFUL_MS, `shard ${g.shard} had no owner for ${g.ms} ms on its way from ${g.from} to c`);
        for (const m of [a, b]) assert.deepEqual(m.app.refused, [], `${m.id}'s app's reports were all taken`);
        assert.doesNotMatch(a.proc.stderr() + b.proc.stderr(), /did not finish within drainTimeoutMs/);
      } finally {
        stopSampling();
      }
    },
  );

  it(
    'cut only until its session is over for itself: healed, it releases what its app drained, and its shards are owned again within a graceful move',
    { timeout: 240_000 },
    async () => {
      const { ms, proxy, gaps, stopSampling } = await group('short');
      const c = ms[2]!;
      // c's shards.json as written (listed, validUntil) and as its app reads it, at a moment.
      const cViews: string[] = [];
      const noteC = (when: string) => {
        const file = readShards(c.statusDir);
        const app = readOwnedShards(c.statusDir).owned.map((o) => o.shard);
        cViews.push(
          `${when}: lists [${file?.owned.map((o) => o.shard).join(' ') ?? 'unreadable'}] valid until ${file?.validUntil ?? null}, its app reads [${app.join(' ')}], ${gaps.samples} samples`,
        );
      };
      try {
        const before = new Set(readOwnedShards(c.statusDir).owned.map((o) => o.shard));
        // When c's session could expire for a and b: its last heartbeat (validUntil − renewDeadline) + the lease.
        const lastValidUntil = readShards(c.statusDir)?.validUntil;
        const sessionExpiresAt = lastValidUntil ? Date.parse(lastValidUntil) - TIMING.renewDeadlineMs + TIMING.leaseMs : NaN;
        proxy.cut();
        const cutAt = Date.now();
        noteC('at the cut');
        // c's own view: its session is over (renew-deadline without a heartbeat); shards.json lists nothing.
        await waitFor('c to give its shards up', () => readShards(c.statusDir)?.owned.length === 0, 30_000, 10);
        noteC('given up');
        // Its app says the work stopped; the releases cannot reach the store.
        await waitFor('c’s app to report its 4 shards stopped', () => c.app.reported.filter((r) => r.at >= cutAt).length >= 4, 10_000, 10);
        const lostMs = Date.now() - cutAt;
        // Not yet a lease since c's last heartbeat: for a and b c's session may still be acting.
        await sleep(200);
        const healAt = Date.now();
        noteC('at the heal');
        proxy.heal();
        await sampledSettled(gaps, [4, 4, 4], 'every shard owned again, 4 each', 60_000);
        const settledMs = Date.now() - healAt;
        const unowned = gaps.gaps.filter((g) => g.ownedAgainAt >= healAt && before.has(g.shard));
        const afterHeal = unowned.map((g) => g.ownedAgainAt - healAt);
        console.log(
          `short cut: c gave its shards up ${lostMs} ms after the cut; healed, settled in ${settledMs} ms ` +
            `(its old session could expire for the others ${sessionExpiresAt - healAt} ms after the heal); ` +
            `its shards owned again: ${unowned.map((g) => `${g.shard} by ${g.to} ${g.ownedAgainAt - healAt} ms after the heal`).join(', ')}`,
        );
        assert.equal(
          unowned.length,
          before.size,
          `each of c's shards [${[...before].join(' ')}] owned again after the heal, the sampler saw (${gaps.samples} samples): ` +
            `${JSON.stringify(gaps.gaps)}; c ${cViews.join('; ')}`,
        );
        for (const late of afterHeal)
          assert.ok(
            late < GRACEFUL_MS,
            `a shard of c's was owned again ${late} ms after the heal; c's old session could expire for the others ` +
              `${sessionExpiresAt - healAt} ms after it (a wait for that expiry, or only slow?); c ${cViews.join('; ')}; ` +
              `the members' logs since the heal: ${logSince(ms, healAt)}`,
          );
        assert.deepEqual(c.app.refused, [], "c's app's reports were all taken");
      } finally {
        stopSampling();
      }
    },
  );
});
