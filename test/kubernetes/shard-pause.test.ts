/**
 * Issue 41, finding A on Kubernetes: the store-generic pause scenario (test/support/shard-pause.ts)
 * against the test control plane, short form: 3 members, lease 3 s, 4 pauses of 3.0-3.3 s, a
 * sampler on every member's shards.json every 10 ms. N is small here (each shard is a Lease, and
 * a member lists the group's Leases on every change); the set-up:
 * `npm run chaos -- --backend shard-pause-kubernetes` (docs/testing.md has what N it held).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { backendArgs, freshNamespace } from '../support/kube.js';
import { formatPauseReport, pausesPast, pauseScenario, SHORT_TIMING } from '../support/shard-pause.js';

const N = Number(process.env.LEASEHOLD_SHARD_PAUSE_N ?? 64);
const PAUSES_MS = pausesPast(SHORT_TIMING.leaseMs, 300, 100);

describe('a shard member paused a little longer than the lease (Kubernetes)', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs, 'leasehold-shard-pause-');

  it(
    `3 members, ${N} shards, pauses of ${PAUSES_MS[0]}-${PAUSES_MS.at(-1)} ms: no shard listed by two members, no token reused`,
    { timeout: 300_000 },
    async () => {
      const ns = await freshNamespace('shard-pause');
      const r = await pauseScenario({
        dir: dir.path,
        backendArgs: backendArgs(ns, 'workers'),
        shards: N,
        timing: SHORT_TIMING,
        pausesMs: PAUSES_MS,
        procs,
        say: (l) => console.log(l),
      });
      console.log(formatPauseReport(r));
      assert.ok(r.samples > 100, 'the sampler ran');
      assert.deepEqual(r.examples, [], 'no shard listed by two members at once, no token reused');
      assert.equal(r.shardsTwice, 0, 'shards listed by two members at once');
      assert.equal(r.tokensReused, 0, 'tokens reused');
      assert.deepEqual(r.exited, [], 'every member still runs');
    },
  );
});
