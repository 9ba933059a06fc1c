import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isAlive, startCli, waitFor, type Proc } from './cli.js';

/**
 * The README's cron recipe on real processes: each tick starts three `leasehold run --once
 * --skip-if-ran-within` spread over two seconds, as cron does in three containers whose clocks
 * and schedulers differ a little. Their job appends "start TICK TOKEN IDENTITY" and, when it
 * finishes, "end TICK TOKEN" to one file.
 */
const T = ['--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '400ms'];
/** Well above the spread of a tick's starts (2 s) plus the first tick's absence wait (one lease duration). */
const WITHIN_MS = 5_000;
const SPREAD_MS = [0, 1_000, 2_000];

export interface Cron {
  /** Starts one runner of `tick`; its job sleeps `job` seconds, or with 'wait' until release(tick). */
  runner: (tick: string, i: number, job: string, extra?: string[]) => Proc;
  /** Starts a tick's three runners over two seconds, as cron in three containers would. */
  tick: (tick: string, job: string) => Promise<Proc[]>;
  /** The jobs' lines for one tick. */
  lines: (tick: string) => { starts: string[]; ends: string[] };
  /** Ends a job started with 'wait'. */
  release: (tick: string) => void;
  /** Waits until the tick's run began more than --skip-if-ran-within ago: the next tick is due. */
  nextTickDue: (tick: string) => Promise<void>;
  file: string;
}

export function cron(backend: string[], work: string, procs: Proc[]): Cron {
  mkdirSync(work, { recursive: true });
  const file = join(work, 'runs');
  const began = new Map<string, number>();
  const job = [
    `echo "start $1 $LEASEHOLD_FENCING_TOKEN $LEASEHOLD_IDENTITY" >> ${file}`,
    `if [ "$2" = wait ]; then while [ ! -e ${work}/stop-$1 ]; do sleep 0.05; done; else sleep "$2"; fi`,
    `echo "end $1 $LEASEHOLD_FENCING_TOKEN" >> ${file}`,
  ].join('\n');
  const runner = (tick: string, i: number, seconds: string, extra: string[] = []) => {
    const p = startCli([
      'run',
      '--once',
      '--skip-if-ran-within',
      `${WITHIN_MS}ms`,
      ...backend,
      '--identity',
      `${tick}-${i}`,
      ...T,
      ...extra,
      '--',
      'sh',
      '-c',
      job,
      'job',
      tick,
      seconds,
    ]);
    procs.push(p);
    return p;
  };
  const lines = (tick: string) => {
    const all = existsSync(file) ? readFileSync(file, 'utf8').split('\n') : [];
    return { starts: all.filter((l) => l.startsWith(`start ${tick} `)), ends: all.filter((l) => l.startsWith(`end ${tick} `)) };
  };
  return {
    file,
    runner,
    lines,
    tick: async (tick, seconds) => {
      const started: Proc[] = [];
      const t0 = Date.now();
      for (const [i, at] of SPREAD_MS.entries()) {
        await waitFor(`runner ${i} of tick ${tick} to be due`, () => Date.now() - t0 >= at, at + 1_000, 20);
        started.push(runner(tick, i, seconds));
      }
      void waitFor(`tick ${tick}'s run to begin`, () => lines(tick).starts.length > 0, 30_000, 20)
        .then(() => began.set(tick, Date.now()))
        .catch(() => {});
      return started;
    },
    release: (tick) => writeFileSync(join(work, `stop-${tick}`), ''),
    nextTickDue: async (tick) => {
      const t = await waitFor(`tick ${tick} to have begun`, () => began.get(tick), 30_000);
      await waitFor(`--skip-if-ran-within to pass since tick ${tick}`, () => Date.now() > t + WITHIN_MS + 300, WITHIN_MS + 5_000, 50);
    },
  };
}

async function exits(ps: Proc[], timeoutMs = 30_000): Promise<Array<number | null>> {
  const timer = setTimeout(() => ps.forEach((p) => p.kill('SIGKILL')), timeoutMs);
  const codes = await Promise.all(ps.map(async (p) => (await p.exited).code));
  clearTimeout(timer);
  return codes;
}

function skips(ps: Proc[]): number {
  return ps.filter((p) => p.stderr().includes('"msg":"skipping: a run began within skipIfRanWithinMs"')).length;
}

function describeTick(c: Cron, tick: string, ps: Proc[]): string {
  return `${JSON.stringify(c.lines(tick))}\n${ps.map((p) => p.stderr()).join('\n')}`;
}

/** Two ticks: one run each (a 3 s job, then a 0 s one), every runner exits 0, the others say why they skipped. */
export async function twoTicksScenario(backend: string[], work: string, procs: Proc[]): Promise<void> {
  const c = cron(backend, work, procs);
  for (const [tick, seconds] of [
    ['one', '3'],
    ['two', '0'],
  ] as const) {
    const ps = await c.tick(tick, seconds);
    const codes = await exits(ps);
    const { starts, ends } = c.lines(tick);
    assert.equal(starts.length, 1, `tick ${tick}: the job must run exactly once, ran ${starts.length} times\n${describeTick(c, tick, ps)}`);
    assert.equal(ends.length, 1);
    assert.deepEqual(codes, [0, 0, 0], `tick ${tick}: every runner exits 0\n${describeTick(c, tick, ps)}`);
    assert.equal(skips(ps), 2, `tick ${tick}: the two others log that they skipped`);
    if (tick === 'one') await c.nextTickDue(tick);
  }
}

/**
 * A run longer than the interval: the next tick's runners find the lease held by a term older
 * than --skip-if-ran-within and wait (one with --try 1s gives up, exit 124); when the old run
 * ends and releases, exactly one of them runs the job for the new tick.
 */
export async function overrunScenario(backend: string[], work: string, procs: Proc[]): Promise<void> {
  const c = cron(backend, work, procs);
  const first = await c.tick('long', 'wait');
  await waitFor("tick long's other runners to skip", () => skips(first) === 2, 30_000);
  await c.nextTickDue('long');
  const impatient = c.runner('next', 9, '0', ['--try', '1s']);
  const next = await c.tick('next', '0');
  assert.equal(await exits([impatient]).then((x) => x[0]), 124, `--try 1s gives up with 124 while the long run holds the lease\n${impatient.stderr()}`);
  assert.match(impatient.stderr(), /"msg":"not elected within tryMs: giving up".*"holder":"long-\d"/);
  assert.equal(c.lines('next').starts.length, 0, 'nothing of the next tick runs while the long run holds the lease');
  c.release('long');
  const codes = await exits([...first, ...next]);
  assert.deepEqual(codes, [0, 0, 0, 0, 0, 0], describeTick(c, 'next', next));
  assert.equal(c.lines('long').ends.length, 1);
  assert.equal(c.lines('next').starts.length, 1, `the next tick runs exactly once after the long run\n${describeTick(c, 'next', next)}`);
}

/**
 * The runner of a tick is killed (SIGKILL) mid-job: its job dies with it, the tick is lost (its
 * other runners had already skipped: nobody retries it), and the next tick runs once, after the
 * dead runner's lease expires.
 */
export async function crashScenario(backend: string[], work: string, procs: Proc[]): Promise<void> {
  const c = cron(backend, work, procs);
  const first = await c.tick('crash', 'wait');
  await waitFor("tick crash's other runners to skip and exit", () => skips(first) === 2 && first.filter((p) => p.child.exitCode === 0).length === 2, 30_000);
  const winner = first.find((p) => p.child.exitCode === null)!;
  // The winner took the lease before its "started command" line reached us: wait for the line.
  const jobPid = await waitFor(
    'the winner to start its job',
    () => Number(/"msg":"started command".*?"pid":(\d+)/.exec(winner.stderr())?.[1]) || undefined,
    10_000,
    10,
  );
  winner.kill('SIGKILL');
  await waitFor('the job to die with its runner', () => !isAlive(jobPid), 3_000, 10);
  await c.nextTickDue('crash');
  const next = await c.tick('after', '0');
  const codes = await exits(next);
  assert.deepEqual(codes, [0, 0, 0], describeTick(c, 'after', next));
  assert.deepEqual(c.lines('crash'), { starts: [c.lines('crash').starts[0]!], ends: [] }, 'the crashed tick ran once, never finished, and was not retried');
  assert.equal(c.lines('after').starts.length, 1, `the next tick runs exactly once\n${describeTick(c, 'after', next)}`);
}
