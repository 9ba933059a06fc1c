import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../testing/fake-clock.js';
import { HealthCounter, type CounterSettings } from './health-counter.js';
import { healthy, notSent, unhealthy, type ProbeResult } from './probe-result.js';

const DEFAULTS: CounterSettings = { failureThreshold: 3, successThreshold: 1, holdDownMs: 30_000, notSentThreshold: 3 };
const H = healthy();
const U = unhealthy('status 500');
const N = notSent('EMFILE');

/** Feeds `results` one per second; returns the state and eligibility after each. */
async function feed(settings: Partial<CounterSettings>, results: ProbeResult[]) {
  const clock = new FakeClock();
  const counter = new HealthCounter({ ...DEFAULTS, ...settings }, clock);
  const seen: string[] = [];
  for (const r of results) {
    counter.record(r);
    seen.push(`${counter.snapshot().state}${counter.eligible() ? '+' : ''}`);
    await clock.advance(1_000);
  }
  return { counter, clock, seen };
}

describe('HealthCounter: thresholds, notSent, hold-down', () => {
  const cases: [string, Partial<CounterSettings>, ProbeResult[], string[]][] = [
    ['starts unknown and never eligible before a success', {}, [U, U], ['unknown', 'unknown']],
    ['one success (successThreshold 1) makes it healthy and eligible', {}, [H], ['healthy+']],
    ['successThreshold 2 needs two in a row', { successThreshold: 2 }, [H, U, H, H], ['unknown', 'unknown', 'unknown', 'healthy+']],
    ['failureThreshold 3 from unknown gives unhealthy', {}, [U, U, U], ['unknown', 'unknown', 'unhealthy']],
    ['healthy stays eligible below the failure threshold', {}, [H, U, U, H, U, U], ['healthy+', 'healthy+', 'healthy+', 'healthy+', 'healthy+', 'healthy+']],
    ['three failures in a row make a healthy app unhealthy', {}, [H, U, U, U], ['healthy+', 'healthy+', 'healthy+', 'unhealthy']],
    ['after unhealthy, healthy again is held down', { failureThreshold: 1 }, [H, U, H, H], ['healthy+', 'unhealthy', 'healthy', 'healthy']],
    ['hold-down 0 makes it eligible at once', { failureThreshold: 1, holdDownMs: 0 }, [H, U, H], ['healthy+', 'unhealthy', 'healthy+']],
    [
      'notSent counts neither way: failures around it are consecutive',
      {},
      [H, U, N, U, N, U],
      ['healthy+', 'healthy+', 'healthy+', 'healthy+', 'healthy+', 'unhealthy'],
    ],
    ['notSent is no success either: unknown stays unknown', { notSentThreshold: 5 }, [N, N, N], ['unknown', 'unknown', 'unknown']],
    ['notSentThreshold in a row make a healthy app unknown', {}, [H, N, N, N], ['healthy+', 'healthy+', 'healthy+', 'unknown']],
    ['a result resets the notSent run', {}, [H, N, N, H, N, N], ['healthy+', 'healthy+', 'healthy+', 'healthy+', 'healthy+', 'healthy+']],
    ['back from unknown (notSent) is held down', { holdDownMs: 10_000 }, [H, N, N, N, H], ['healthy+', 'healthy+', 'healthy+', 'unknown', 'healthy']],
  ];
  for (const [name, settings, results, want] of cases) {
    it(name, async () => assert.deepEqual((await feed(settings, results)).seen, want));
  }

  it('the hold-down ends after holdDownMs of health, and unhealthy again inside it starts it over', async () => {
    const { counter, clock } = await feed({ failureThreshold: 1, holdDownMs: 30_000 }, [H, U, H]);
    let changes = 0;
    counter.subscribe(() => changes++);
    assert.equal(counter.eligible(), false);
    assert.match(counter.standAside()!.reason, /held down until/);
    await clock.advance(20_000);
    counter.record(U);
    assert.equal(counter.snapshot().state, 'unhealthy');
    counter.record(H);
    await clock.advance(29_000);
    assert.equal(counter.eligible(), false, 'the run restarted at the last success');
    await clock.advance(1_000);
    assert.equal(counter.eligible(), true);
    assert.equal(counter.standAside(), null);
    assert.ok(changes >= 2);
  });

  it('a failure below the threshold during the hold-down restarts it', async () => {
    const { counter, clock } = await feed({ failureThreshold: 3, holdDownMs: 30_000 }, [H, U, U, U, H]);
    assert.equal(counter.snapshot().state, 'healthy');
    await clock.advance(25_000);
    counter.record(U);
    assert.equal(counter.snapshot().state, 'healthy', 'one failure is below the threshold');
    assert.match(counter.standAside()!.reason, /a check failed during the hold-down/);
    await clock.advance(10_000);
    assert.equal(counter.eligible(), false, 'no run of health since the failure');
    counter.record(H);
    await clock.advance(30_000);
    assert.equal(counter.eligible(), true);
  });

  it('says why it stands aside, and since when it became ineligible', async () => {
    const { counter, clock } = await feed({}, [H, U, U]);
    const lostAt = clock.now();
    counter.record(U);
    await clock.advance(5_000);
    counter.record(unhealthy('connection refused'));
    assert.deepEqual(counter.standAside(), { reason: 'app unhealthy: connection refused', since: lostAt });
  });

  it('tells its listeners of changes of state, eligibility or reason only', async () => {
    const clock = new FakeClock();
    const counter = new HealthCounter(DEFAULTS, clock);
    const heard: boolean[] = [];
    counter.subscribe(() => heard.push(counter.eligible()));
    // The first failure replaces "no verdict yet"; a repeated reason, and failures below the
    // threshold while healthy (eligible: no reason shown), are no news.
    for (const r of [U, U, H, H, H, U, U, U, U]) counter.record(r);
    assert.deepEqual(heard, [false, true, false]);
  });

  it('a new reason for standing aside is heard, though the eligibility stays the same', async () => {
    const { counter, clock } = await feed({ failureThreshold: 1, holdDownMs: 30_000 }, [H, unhealthy('connection refused')]);
    const heard: string[] = [];
    counter.subscribe(() => heard.push(counter.standAside()!.reason));
    counter.record(unhealthy('connection refused'));
    counter.record(unhealthy('status 503: starting'));
    counter.record(unhealthy('status 503: starting'));
    counter.record(H);
    await clock.advance(10_000);
    counter.record(H);
    // A failure below the threshold during the hold-down (threshold 1: it is one) and back.
    counter.record(unhealthy('status 500'));
    await clock.advance(1_000);
    counter.record(H);
    assert.deepEqual(heard, [
      'app unhealthy: status 503: starting',
      `app healthy again, held down until ${new Date(clock.now().getTime() - 11_000 + 30_000).toISOString()} (30000 ms of health after a failure)`,
      'app unhealthy: status 500',
      `app healthy again, held down until ${new Date(clock.now().getTime() + 30_000).toISOString()} (30000 ms of health after a failure)`,
    ]);
  });
});

describe('HealthCounter: an app flapping every second for a minute', () => {
  for (const settings of [
    { failureThreshold: 1, successThreshold: 1 },
    { failureThreshold: 3, successThreshold: 1 },
    { failureThreshold: 1, successThreshold: 2 },
  ]) {
    it(`loses eligibility exactly once (failureThreshold ${settings.failureThreshold}, successThreshold ${settings.successThreshold})`, async () => {
      const clock = new FakeClock();
      const counter = new HealthCounter({ ...DEFAULTS, ...settings }, clock);
      let losses = 0;
      let was = false;
      counter.subscribe(() => {
        if (was && !counter.eligible()) losses++;
        was = counter.eligible();
      });
      // Healthy, then down long enough to fail its threshold, then flapping: probed every 500 ms,
      // the app alternates healthy/unhealthy every second for 60 s, then stays healthy.
      const probe = async (ms: number, up: (t: number) => boolean) => {
        for (let t = 0; t < ms; t += 500) {
          counter.record(up(t) ? H : U);
          await clock.advance(500);
        }
      };
      await probe(5_000, () => true);
      await probe(5_000, () => false);
      await probe(60_000, (t) => Math.floor(t / 1_000) % 2 === 0);
      assert.equal(losses, 1);
      assert.equal(counter.eligible(), false, 'still held down right after the flapping');
      await probe(DEFAULTS.holdDownMs + 1_000, () => true);
      assert.equal(counter.eligible(), true, 'eligible once healthy for the hold-down');
      assert.equal(losses, 1);
    });
  }
});
