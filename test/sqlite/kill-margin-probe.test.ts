/**
 * The timer probe of the kill-margin tests (test/support/kill-margin.ts) on a real process: a
 * probe kept off the CPU over a round's end has not printed its late tick when the round ends,
 * and read at once it would say its timers were on time, making the round judged (hostile
 * review). Its lateness is read once it ticked past the window. Stopped with SIGSTOP, as a
 * descheduled process is, for longer than a judged round's allowance.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../support/cli.js';
import { JUDGED_LATENESS_MS, startTimerProbe } from '../support/kill-margin.js';

/** How long the probe is kept from running over the window's end: well past the allowance. */
const STALL_MS = 8 * JUDGED_LATENESS_MS;

describe('the kill-margin timer probe', () => {
  const probe = startTimerProbe();
  after(async () => {
    probe.kill('SIGCONT');
    probe.kill('SIGKILL');
    await probe.exited;
  });

  it('a stall over the window is seen though the probe had not run by its end', { timeout: 30_000 }, async () => {
    await waitFor('the timer probe to tick', () => probe.ticking(), 20_000);
    const from = Date.now();
    probe.kill('SIGSTOP');
    // The stall itself: the probe kept off the CPU over the window (what is measured, not a wait for a condition).
    await new Promise((resolve) => setTimeout(resolve, STALL_MS));
    const to = Date.now();
    const reading = probe.latenessIn(from, to);
    probe.kill('SIGCONT');
    const lateness = await reading;
    assert.ok(lateness > JUDGED_LATENESS_MS, `the probe ran not once for ${to - from} ms of the window, yet its lateness reads ${lateness} ms`);
  });
});
