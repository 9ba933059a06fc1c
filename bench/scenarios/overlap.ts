/**
 * The overlap part of `npm run bench` (bench/run.ts; alone: `--only overlap`): two pairs of a
 * `leasehold sidecar` and its app (test/support/leader-app.ts, a real process following
 * `GET /leader?watch=1`) on one SQLite file. Each handoff: SIGTERM to the leader's sidecar; the
 * old app takes STOP_DELAY_MS to stop its leader work (and, with a drain, posts
 * /leader/stopped); the new leader's app starts. From the apps' own lines (one clock, one
 * machine): the overlap (ms both apps did leader work) and the handoff (old app stopped → new
 * app started; negative when the new one started first). The stopped pair is replaced by a
 * fresh one, so each handoff has one leader and one standby. First without a drain, then with
 * --drain-timeout.
 */
import { dirname, join } from 'node:path';
import { cpus, loadavg } from 'node:os';
import { summary } from '../lib/quantile.js';
import { REPO, start, startCli, tempDir, waitFor, type Proc } from '../../test/support/cli.js';
import { VOLUNTEER_WINDOW_MS } from '../../src/election/successor.js';
import type { AppEvent } from '../../test/support/leader-app.js';
import type { Phase } from '../phase.js';

export interface OverlapBenchOptions {
  handoffs: number;
  log: (m: string) => void;
}

export interface OverlapBenchResult {
  markdown: string;
  rows: OverlapRow[];
}

interface OverlapRow {
  label: string;
  overlap: number[];
  handoff: number[];
}

const TIMINGS = { lease: '4s', deadline: '3s', retry: '500ms' };
const T = ['--lease-duration', TIMINGS.lease, '--renew-deadline', TIMINGS.deadline, '--retry-period', TIMINGS.retry];
/** The longest drain these timings allow (renew-deadline/2 − retry-period). */
const DRAIN = '1s';
/** How long each app takes to stop its leader work once told "not leader": its last batch. */
const STOP_DELAY_MS = 100;

interface Pair {
  id: string;
  sidecar: Proc;
  app: Proc;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function events(p: Proc): AppEvent[] {
  return p
    .stdout()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as AppEvent);
}

async function startPair(db: string, lease: string, id: string, drain: boolean): Promise<Pair> {
  // The app proves it is the app with the key its sidecar writes there (docs/drain.md).
  const statusDir = join(dirname(db), `status-${id}`);
  const sidecar = startCli([
    'sidecar',
    '--db',
    db,
    '--lease',
    lease,
    '--identity',
    id,
    '--listen',
    '127.0.0.1:0',
    '--status-dir',
    statusDir,
    ...T,
    ...(drain ? ['--drain-timeout', DRAIN] : []),
  ]);
  const address = await waitFor(`${id}'s address`, () => /"listen":"([\d.:]+)"/.exec(sidecar.stderr())?.[1], 20_000);
  const app = start(process.execPath, ['--import', 'tsx', join(REPO, 'test/support/leader-app.ts')], {
    LEADER_URL: `http://${address}`,
    STOP_DELAY_MS: String(STOP_DELAY_MS),
    POST_STOPPED: drain ? '1' : '0',
    DRAIN_KEY_FILE: join(statusDir, 'drain-key'),
  });
  await waitFor(`${id}'s app to follow its sidecar`, () => events(app).some((e) => e.event === 'following'), 20_000);
  return { id, sidecar, app };
}

async function row(label: string, drain: boolean, handoffs: number, log: (m: string) => void): Promise<OverlapRow> {
  const dir = tempDir('leasehold-bench-overlap-');
  const db = join(dir.path, 'leases.db');
  const lease = drain ? 'overlap-drain' : 'overlap';
  let gen = 0;
  const fresh = () => startPair(db, lease, `${lease}-${gen++}`, drain);
  const all: Pair[] = [];
  const overlap: number[] = [];
  const handoff: number[] = [];
  try {
    let pairs = [await fresh(), await fresh()];
    all.push(...pairs);
    for (let i = 0; i < handoffs; i++) {
      const old = await waitFor('a leader app working', () => pairs.find((p) => events(p.app).some((e) => e.event === 'start')), 20_000);
      const next = pairs.find((p) => p !== old)!;
      // The standby named itself successor, as a rollout's next step comes after its replacement is ready.
      await sleep(VOLUNTEER_WINDOW_MS + 500);
      old.sidecar.kill('SIGTERM');
      const started = await waitFor('the new app to start', () => events(next.app).find((e) => e.event === 'start'), 20_000, 5);
      await old.sidecar.exited;
      await old.app.exited;
      const oldStart = events(old.app).find((e) => e.event === 'start')!;
      const stopped = events(old.app).find((e) => e.event === 'stop' && e.token === oldStart.token)!;
      overlap.push(Math.max(0, stopped.at - started.at));
      handoff.push(started.at - stopped.at);
      log(`overlap ${label} ${i + 1}/${handoffs}: overlap ${overlap.at(-1)!.toFixed(1)} ms, handoff ${handoff.at(-1)!.toFixed(1)} ms`);
      const replacement = await fresh();
      all.push(replacement);
      pairs = [next, replacement];
    }
  } finally {
    for (const p of all) {
      p.sidecar.kill('SIGKILL');
      p.app.kill('SIGKILL');
    }
    await Promise.all(all.flatMap((p) => [p.sidecar.exited, p.app.exited]));
    dir.cleanup();
  }
  return { label, overlap, handoff };
}

export async function benchOverlap({ handoffs, log }: OverlapBenchOptions): Promise<OverlapBenchResult> {
  const loadBefore = loadavg()[0]!;
  const rows = [await row('no drain', false, handoffs, log), await row(`--drain-timeout ${DRAIN}`, true, handoffs, log)];
  const loadAfter = loadavg()[0]!;
  const ms = (x: number) => `${x.toFixed(1)} ms`;
  const lines = rows.map((r) => {
    const o = summary(r.overlap);
    const h = summary(r.handoff);
    const with0 = r.overlap.filter((x) => x === 0).length;
    return `| ${r.label} | ${with0} / ${r.overlap.length} | ${ms(o.median)} / ${ms(o.p95)} (max ${ms(Math.max(...r.overlap))}) | ${ms(h.median)} / ${ms(h.p95)} |`;
  });
  const markdown = `Two pairs of a \`leasehold sidecar\` and its app on one SQLite file, timings ${TIMINGS.lease} / ${TIMINGS.deadline} / ${TIMINGS.retry}.
Each app (\`test/support/leader-app.ts\`, a real process) follows \`GET /leader?watch=1\`, starts its
leader work when its sidecar leads and takes ${STOP_DELAY_MS} ms to stop it once told "not leader" (its last batch);
with a drain it then posts \`/leader/stopped?token=N\`. Each of ${handoffs} graceful handoffs per row: SIGTERM
to the leader's sidecar, the stopped pair replaced by a fresh one (one leader, one standby, the
standby its named successor). From the apps' own timestamps: the overlap (ms both apps did leader
work) and the handoff (old app stopped → new app started; negative: the new one started first);
median / p95. ${cpus().length} cores; 1-minute load average ${loadBefore.toFixed(1)} at the start, ${loadAfter.toFixed(1)} at the end.

| drain | handoffs with no overlap | overlap | handoff (old stopped → new started) |
| --- | ---: | ---: | ---: |
${lines.join('\n')}
`;
  return { markdown, rows };
}

export const OVERLAP_HEADING = '## Overlap of leader work at a graceful handoff';

export const overlapPhase: Phase<OverlapBenchResult> = {
  name: 'overlap',
  what: (o) => `${o.trials} graceful handoffs of a sidecar and its app, without and with --drain-timeout: overlap of leader work`,
  needsRoot: false,
  inFullRun: true,
  estimateS: (o) => 2 * o.trials * 5,
  heading: () => OVERLAP_HEADING,
  section: (r, ctx) =>
    `${OVERLAP_HEADING}\n\n_This section was measured by \`npm run bench -- --only overlap --splice\` on ${ctx.today}, apart from the full run._\n\n${r.markdown}\n`,
  run: (ctx) => benchOverlap({ handoffs: ctx.opts.trials, log: ctx.log }),
};
