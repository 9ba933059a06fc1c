import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { allEligible } from './all-eligible.js';
import { ManualHealth } from './manual-health.js';
import { StandBack } from '../election/stand-back.js';
import { FakeClock } from '../testing/fake-clock.js';

describe('allEligible', () => {
  it('is eligible only while every source is, says the first reason, and hears each source', async () => {
    const clock = new FakeClock(new Date('2026-12-04T09:00:00Z'));
    const health = new ManualHealth({ failureThreshold: 1, successThreshold: 1, holdDownMs: 0 }, clock);
    const standBack = new StandBack(clock);
    const both = allEligible([health, standBack])!;
    let changes = 0;
    const off = both.subscribe(() => changes++);
    health.healthy();
    assert.equal(both.eligible(), true);
    assert.equal(both.standAside(), null);
    standBack.standBack('the command failed 3 times in a row', 10_000);
    assert.equal(both.eligible(), false, 'standing aside alone makes it ineligible');
    assert.match(both.standAside()!.reason, /failed 3 times/);
    await clock.advance(10_000);
    assert.equal(both.eligible(), true);
    health.unhealthy('down');
    assert.equal(both.eligible(), false, 'the app health alone makes it ineligible');
    assert.ok(changes >= 3, `heard ${changes} changes`);
    off();
    const heard = changes;
    health.healthy();
    assert.equal(changes, heard, 'unsubscribed from every source');
    standBack.close();
  });

  it('one source is passed through as it is, none gives undefined', () => {
    const s = new StandBack(new FakeClock(new Date(0)));
    assert.equal(allEligible([s]), s);
    assert.equal(allEligible([]), undefined);
  });
});
