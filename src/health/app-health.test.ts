import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../testing/fake-clock.js';
import { AppHealth } from './app-health.js';
import { healthy, unhealthy, type Probe, type ProbeResult } from './probe-result.js';

/** A probe whose answers the test scripts: each run takes the next, or hangs when it is 'hang'. */
function scripted(answers: (ProbeResult | 'hang' | 'throw')[]) {
  const runs: number[] = [];
  const aborted: boolean[] = [];
  let i = 0;
  const probe: Probe & { clock?: FakeClock } = {
    description: 'scripted',
    run(signal) {
      const a = answers[Math.min(i++, answers.length - 1)]!;
      runs.push(probe.clock!.monotonic());
      const k = aborted.push(false) - 1;
      signal.addEventListener('abort', () => (aborted[k] = true));
      if (a === 'throw') throw new Error('bug in the probe');
      if (a === 'hang') return new Promise(() => {});
      return Promise.resolve(a);
    },
  };
  return { probe, runs, aborted };
}

function monitor(answers: (ProbeResult | 'hang' | 'throw')[], options: Partial<ConstructorParameters<typeof AppHealth>[0]> = {}) {
  const clock = new FakeClock();
  const s = scripted(answers);
  s.probe.clock = clock;
  const results: ProbeResult[] = [];
  const health = new AppHealth(
    { probe: { http: 'http://127.0.0.1:1/' }, periodMs: 1_000, timeoutMs: 500, ...options },
    { clock, probeOverride: s.probe, onResult: (r) => results.push(r) },
  );
  return { clock, health, results, ...s };
}

describe('AppHealth: a probe run on the clock', () => {
  it('probes first after initialDelayMs, then every periodMs, and stops when asked', async () => {
    const m = monitor([healthy()], { initialDelayMs: 3_000 });
    m.health.start();
    await m.clock.advance(2_999);
    assert.deepEqual(m.runs, []);
    assert.equal(m.health.snapshot().state, 'unknown');
    await m.clock.advance(3_001);
    assert.deepEqual(m.runs, [3_000, 4_000, 5_000, 6_000]);
    assert.equal(m.health.eligible(), true);
    m.health.stop();
    await m.clock.advance(10_000);
    assert.equal(m.runs.length, 4);
    assert.equal(m.clock.pendingTimers(), 0, 'no timer left behind');
  });

  it('counts a probe that does not answer within timeoutMs as a failure, and aborts it', async () => {
    const m = monitor([healthy(), 'hang'], { failureThreshold: 2 });
    m.health.start();
    await m.clock.advance(1_400);
    assert.equal(m.health.eligible(), true);
    await m.clock.advance(200);
    assert.deepEqual(m.results.at(-1), unhealthy('no answer within 500 ms'));
    assert.equal(m.aborted[1], true, 'the timed-out probe was cancelled');
    assert.equal(m.health.eligible(), true, 'one failure is below the threshold');
    await m.clock.advance(1_000);
    assert.equal(m.health.snapshot().state, 'unhealthy');
    assert.deepEqual(m.runs, [0, 1_000, 2_000], 'the next probe is a period after the last one started');
  });

  it('takes a probe that throws as notSent: the sidecar failed, not the app', async () => {
    const m = monitor([healthy(), 'throw']);
    m.health.start();
    await m.clock.advance(2_500);
    assert.equal(m.results[1]!.outcome, 'notSent');
    assert.match((m.results[1] as { reason: string }).reason, /bug in the probe/);
    assert.equal(m.health.eligible(), true);
    await m.clock.advance(1_000);
    assert.equal(m.health.snapshot().state, 'unknown', 'three notSent in a row: nothing vouches for the app');
    assert.match(m.health.standAside()!.reason, /could not be probed 3 times in a row/);
  });

  it('stop() cancels the probe in flight and drops its result', async () => {
    const m = monitor(['hang']);
    m.health.start();
    await m.clock.advance(100);
    m.health.stop();
    await m.clock.advance(5_000);
    assert.equal(m.aborted[0], true);
    assert.deepEqual(m.results, []);
  });

  it('stop() leaves no timer, not even a hold-down under way: a stopped process can exit', async () => {
    const m = monitor([healthy(), unhealthy('down'), healthy()], { failureThreshold: 1, holdDownMs: 60_000 });
    m.health.start();
    await m.clock.advance(2_500);
    assert.match(m.health.standAside()!.reason, /^app healthy again, held down until /);
    m.health.stop();
    assert.equal(m.clock.pendingTimers(), 0);
  });
});
