import assert from 'node:assert/strict';
import { it, mock } from 'node:test';
import { keepWatching, type WatchTie } from './kept-watch.js';

/** Lets the promises queued so far settle. */
const turns = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

it('a watch that fails or ends is reported unhealthy and opened again after a backoff; stopping aborts the open one', async (t) => {
  mock.timers.enable({ apis: ['setTimeout'] });
  t.after(() => mock.timers.reset());
  const health: boolean[] = [];
  const ties: WatchTie[] = [];
  let opens = 0;
  let opened = 0;
  let aborted = 0;
  const stop = keepWatching(
    async (tie) => {
      opens++;
      if (opens === 1) throw new Error('connection refused');
      ties.push(tie);
      return { abort: () => void aborted++ };
    },
    () => void opened++,
    (h) => void health.push(h),
  );
  await turns();
  assert.deepEqual(health, [false], 'the failed open is reported');
  assert.equal(opens, 1, 'no retry before the backoff');
  mock.timers.tick(200); // reconnectDelayMs(1)
  await turns();
  assert.deepEqual(health, [false, true]);
  assert.equal(opened, 1, 'onOpen runs once the watch is open');
  // The server ends the watch: unhealthy, then open again after the backoff.
  ties[0]!.ended();
  assert.deepEqual(health, [false, true, false]);
  mock.timers.tick(400); // reconnectDelayMs(2): no event came between, so the failures add up
  await turns();
  assert.equal(opens, 3);
  assert.equal(opened, 2);
  assert.equal(ties[1]!.stopped, false);
  stop();
  assert.equal(aborted, 1, 'stopping aborts the watch that is open');
  assert.equal(ties[1]!.stopped, true);
  ties[1]!.ended();
  mock.timers.tick(10_000);
  await turns();
  assert.equal(opens, 3, 'nothing is opened once stopped');
});

it('an event starts the backoff over; a watch opened after the stop is aborted at once', async (t) => {
  mock.timers.enable({ apis: ['setTimeout'] });
  t.after(() => mock.timers.reset());
  const ties: WatchTie[] = [];
  let aborted = 0;
  let opened = 0;
  keepWatching(
    async () => ({ abort: () => void aborted++ }),
    () => void opened++,
  )();
  // Stopped while its open was under way: the watch it opened is aborted, and never reported open.
  await turns();
  assert.deepEqual({ aborted, opened }, { aborted: 1, opened: 0 });
  const opens: number[] = [];
  const stop = keepWatching(
    async (tie) => {
      ties.push(tie);
      opens.push(ties.length);
      return { abort: () => {} };
    },
    () => {},
  );
  await turns();
  ties.at(-1)!.ended();
  mock.timers.tick(200);
  await turns();
  ties.at(-1)!.ended();
  mock.timers.tick(399);
  await turns();
  assert.equal(opens.length, 2, 'the second failure in a row waits 400 ms');
  mock.timers.tick(1);
  await turns();
  assert.equal(opens.length, 3);
  ties.at(-1)!.sawEvent();
  ties.at(-1)!.ended();
  mock.timers.tick(200);
  await turns();
  assert.equal(opens.length, 4, 'after an event, the next failure waits 200 ms again');
  stop();
});
