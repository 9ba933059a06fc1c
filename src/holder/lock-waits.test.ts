import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../testing/fake-clock.js';
import { BackendUnavailableError, ConflictError } from '../errors.js';
import { LockWaits } from './lock-waits.js';

const RETRY_MS = 500;

/** Sends one write through `w` that fails with `err` (or lands when null); returns whether it was allowed to wait. */
async function write(w: LockWaits, err: Error | null, waitForLock = true): Promise<boolean> {
  let waited = false;
  await w
    .send(waitForLock, async (waits) => {
      waited = waits;
      if (err) throw err;
    })
    .catch(() => {});
  return waited;
}

describe('LockWaits: at most one wait on a lock in a row', () => {
  it('no write waits within a retryPeriod after one that waited went unanswered; then one may again', async () => {
    const clock = new FakeClock();
    const w = new LockWaits(clock, RETRY_MS);
    assert.equal(await write(w, new BackendUnavailableError('locked')), true, 'the first may wait');
    assert.equal(await write(w, new BackendUnavailableError('locked')), false, 'right after: no wait');
    await clock.advance(RETRY_MS - 1);
    assert.equal(await write(w, null), false, 'still within the retryPeriod');
    await clock.advance(1);
    assert.equal(await write(w, null), true, 'a retryPeriod later it may wait again');
  });

  it('a write that did not wait does not move the pause on, so a long lock still gets one wait per retryPeriod', async () => {
    const clock = new FakeClock();
    const w = new LockWaits(clock, RETRY_MS);
    await write(w, new BackendUnavailableError('locked'));
    await clock.advance(RETRY_MS / 2);
    assert.equal(await write(w, new BackendUnavailableError('locked')), false);
    await clock.advance(RETRY_MS / 2);
    assert.equal(await write(w, new BackendUnavailableError('locked')), true);
  });

  it('a conflict is an answer, and a caller that says no wait is never allowed one', async () => {
    const clock = new FakeClock();
    const w = new LockWaits(clock, RETRY_MS);
    assert.equal(await write(w, new ConflictError('another wrote it')), true);
    assert.equal(await write(w, null), true, 'a conflict starts no pause');
    assert.equal(await write(w, null, false), false);
  });
});
