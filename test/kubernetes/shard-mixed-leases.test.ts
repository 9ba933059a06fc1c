/**
 * Issue 41, finding C on Kubernetes: a leaver on an 8 s lease whose app never confirms keeps its
 * shards until its hold ends; the members on 4 s must not list them before
 * (test/support/shard-mixed-leases.ts). Each member's slot Lease carries its own
 * leaseDurationSeconds, which is what the others read its session's expiry from.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { backendArgs, freshNamespace } from '../support/kube.js';
import { leaverOnLongerLease } from '../support/shard-mixed-leases.js';

describe('shard members with different lease durations (Kubernetes)', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs, 'leasehold-shard-mixed-');

  it('a leaver on 8 s whose app never confirms: the others on 4 s list none of its shards before its hold ends', { timeout: 300_000 }, async () => {
    const ns = await freshNamespace('shard-mixed');
    const r = await leaverOnLongerLease(dir.path, backendArgs(ns, 'workers'), procs, (l) => console.log(l));
    console.log(`first taken ${r.firstTakenAt - r.holdEndsAt} ms after the hold ended; ${r.takenEarly} of ${r.leaverShards} taken early`);
    assert.equal(r.takenEarly, 0, `none of the leaver's shards listed by another before its hold ended (first ${r.holdEndsAt - r.firstTakenAt} ms early)`);
    assert.deepEqual(r.examples, [], 'no shard listed by two members, no token reused');
  });
});
