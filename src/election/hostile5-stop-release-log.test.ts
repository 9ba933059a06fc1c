/**
 * Hostile review (branch hostile5): stop() with a store that does not answer. stop() ends the
 * release's retries at once (EndOfTerm.stopRetrying, "an exiting process does not wait on a store
 * that does not answer"), yet the gate then logs "the store did not answer the release before the
 * lease could have expired: it expires", while the lease has most of its duration left: the
 * line blames the wrong cause, and an operator reading it after a SIGTERM looks for an outage
 * of a whole lease. The correct line says the retries ended because the candidate stops; this
 * fails today.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CandidateLoop } from './candidate-loop.js';
import { FakeClock } from '../testing/fake-clock.js';
import { MemoryLeaseStore } from '../testing/memory-store.js';
import { BackendUnavailableError } from '../errors.js';
import type { CallOptions, LeaseRecord } from '../backends/lease-store.js';
import { resolveElectionConfig } from '../config/election-options.js';
import { createLogger } from '../log.js';

const timings = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

class DownStore extends MemoryLeaseStore {
  down = false;
  override async update(name: string, record: LeaseRecord, expectedVersion: string, opts?: CallOptions): Promise<string> {
    if (this.down) throw new BackendUnavailableError('the store is unreachable');
    return super.update(name, record, expectedVersion, opts);
  }
}

describe('hostile5: stop() while the store does not answer the release', () => {
  it('does not log that the lease could have expired, with most of it left', async () => {
    const clock = new FakeClock();
    const store = new DownStore();
    const logged: string[] = [];
    const elector = new CandidateLoop({
      ...resolveElectionConfig({ ...timings, lease: 'l', identity: 'me' }),
      store,
      clock,
      random: () => 0,
      successorClaims: false,
      log: createLogger({ level: 'info', write: (line) => logged.push((JSON.parse(line) as { msg: string }).msg) }),
    });
    store.put('l', { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: null, renewTime: null, leaseTransitions: 0 });
    elector.start();
    await clock.advance(0);
    assert.equal(elector.isLeader(), true);
    store.down = true;
    await elector.stop();
    const misleading = logged.filter((m) => m.includes('before the lease could have expired'));
    assert.deepEqual(misleading, [], `logged at stop(), ${timings.leaseDurationMs} ms of lease left: ${JSON.stringify(logged)}`);
  });
});
