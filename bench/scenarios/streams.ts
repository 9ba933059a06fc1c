/**
 * The `/leader` stream part of `npm run bench` (bench/run.ts; alone: `--only streams`): two
 * `leasehold sidecar` processes on one SQLite file, each serving STREAMS server-sent-events
 * streams of `GET /leader?watch=1` to this process, against the same two with none.
 *   - the sidecar's resident memory with no stream and with STREAMS open (after renewals
 *     went out to all of them);
 *   - SIGTERM handoff, from the signal to the standby's status file saying leader, and to the
 *     last of the standby's streams receiving that event;
 *   - the same with STREAMS readers on each sidecar that never read a byte.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cpus, loadavg } from 'node:os';
import { summary } from '../lib/quantile.js';
import { selfReportedSinceFree } from '../lib/lease-timeline.js';
import { rssMB } from '../lib/proc-stats.js';
import { startCli, tempDir, waitFor, type Proc } from '../../test/support/cli.js';
import { validLeaders, type Candidate } from '../../test/support/sidecars.js';
import { openStream, spreadAddress, type SseClient } from '../../test/support/sse-client.js';
import type { Phase } from '../phase.js';

export interface StreamsBenchOptions {
  trials: number;
  streams: number;
  log: (m: string) => void;
}

export interface StreamsBenchResult {
  markdown: string;
}

const T = ['--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '400ms'];

type Sidecar = Candidate & { port: number; clients: SseClient[] };

function startOne(dir: string, db: string, id: string): Promise<Sidecar> {
  const statusDir = join(dir, `status-${id}`);
  const proc: Proc = startCli(['sidecar', '--db', db, '--lease', 'streams', '--identity', id, '--status-dir', statusDir, '--listen', '127.0.0.1:0', ...T]);
  return waitFor(`${id}'s address`, () => /"listen":"127\.0\.0\.1:(\d+)"/.exec(proc.stderr())?.[1], 20_000).then((p) => ({
    id,
    statusDir,
    proc,
    port: Number(p),
    clients: [],
  }));
}

async function openMany(s: Sidecar, n: number, stuck: boolean): Promise<void> {
  // In batches: a burst of 1,000 connects at once overflows the listen backlog.
  for (let i = 0; i < n; i += 100) {
    // From many loopback addresses: the sidecar bounds the streams of one address (64).
    const batch = await Promise.all(
      Array.from({ length: Math.min(100, n - i) }, (_, j) => openStream('127.0.0.1', s.port, { stuck, localAddress: spreadAddress(i + j) })),
    );
    s.clients.push(...batch);
  }
  await waitFor(`${n} streams on ${s.id} to get the current state`, () => stuck || s.clients.every((c) => c.events.length > 0), 60_000);
}

const leads = (e: string | undefined) => e !== undefined && (JSON.parse(e) as { isLeader: boolean }).isLeader;

export async function benchStreams({ trials, streams, log }: StreamsBenchOptions): Promise<StreamsBenchResult> {
  const dir = tempDir('leasehold-bench-streams-');
  const all: Sidecar[] = [];
  try {
    /** One configuration: handoff trials with `n` streams per sidecar, and the memory figures. */
    const run = async (n: number, stuck: boolean) => {
      const db = join(dir.path, `streams-${n}-${stuck}.db`);
      let cands = [await startOne(dir.path, db, 'a'), await startOne(dir.path, db, 'b')];
      all.push(...cands);
      const rssBefore: number[] = [];
      const rssWith: number[] = [];
      const toFile: number[] = [];
      const toStreams: number[] = [];
      const sinceFree: number[] = [];
      for (let t = 0; t < trials; t++) {
        const leader = await waitFor('a leader', () => validLeaders(cands)[0], 20_000);
        const standby = cands.find((c) => c !== leader.c)!;
        for (const c of cands) {
          if (c.clients.length > 0) continue;
          rssBefore.push(rssMB(c.proc.pid));
          await openMany(c, n, stuck);
        }
        // Three renewals go out to every stream before the handoff.
        const renewedAt = () => Date.parse((JSON.parse(readFileSync(join(leader.c.statusDir, 'status.json'), 'utf8')) as { renewedAt: string }).renewedAt);
        const since = renewedAt();
        await waitFor('three renewals', () => renewedAt() >= since + 1_200, 10_000);
        for (const c of cands) rssWith.push(rssMB(c.proc.pid));
        const before = standby.clients.map((c) => c.events.length);
        const began = performance.now();
        leader.c.proc.kill('SIGTERM');
        await waitFor('the standby to lead', () => validLeaders([standby])[0], 20_000, 2);
        toFile.push(performance.now() - began);
        const self = await waitFor('its became-leader line', () => selfReportedSinceFree(standby.proc.stderr()), 5_000);
        sinceFree.push(self);
        if (!stuck && n > 0) {
          await waitFor('every standby stream to say it leads', () => standby.clients.every((c, i) => c.events.slice(before[i]).some(leads)), 20_000, 2);
          toStreams.push(performance.now() - began);
        }
        await leader.c.proc.exited;
        const old = cands.find((c) => c === leader.c)!;
        for (const c of old.clients) c.close();
        const again = await startOne(dir.path, db, old.id);
        all.push(again);
        cands = cands.map((c) => (c === old ? again : c));
      }
      for (const c of cands) {
        for (const cl of c.clients) cl.close();
        c.proc.kill('SIGTERM');
        await c.proc.exited;
      }
      return {
        rssBefore: summary(rssBefore),
        rssWith: summary(rssWith),
        toFile: summary(toFile),
        toStreams: toStreams.length ? summary(toStreams) : null,
        sinceFree: summary(sinceFree),
      };
    };
    const loads: number[] = [loadavg()[0]!];
    log(`streams: none, ${trials} handoffs`);
    const none = await run(0, false);
    log(`streams: ${streams} reading streams per sidecar, ${trials} handoffs`);
    const reading = await run(streams, false);
    log(`streams: ${streams} stuck readers per sidecar, ${trials} handoffs`);
    const stuck = await run(streams, true);
    loads.push(loadavg()[0]!);
    const ms = (s: { median: number; p95: number } | null) => (s ? `${Math.round(s.median)} ms / ${Math.round(s.p95)} ms` : '–');
    const mb = (s: { median: number }) => `${s.median.toFixed(1)} MiB`;
    const row = (label: string, r: Awaited<ReturnType<typeof run>>) =>
      `| ${label} | ${mb(r.rssWith)} | ${ms(r.sinceFree)} | ${ms(r.toFile)} | ${ms(r.toStreams)} |`;
    const markdown = `### \`GET /leader\` streams: ${streams} readers per sidecar

Two \`leasehold sidecar\` processes on one SQLite file, timings 2s / 1500ms / 400ms; every
reader is a socket in the bench process (one event per renewal, every 400 ms). Handoff: SIGTERM
to the leader, to the standby's status file saying leader (polled every 2 ms), and to the last
of the standby's streams carrying that event. Those two are seen from the bench process, which
also reads every stream on the same ${cpus().length} cores; the new leader's own log gives the takeover
without that cost. ${trials} handoffs per row; median / p95. RSS: each sidecar after three
renewals went out to its streams (with none open: ${mb(none.rssBefore)}). The machine's 1-minute
load average was ${loads.map((l) => l.toFixed(1)).join(' at the start, ')} at the end of the run: other work shared its cores.

| streams per sidecar | sidecar RSS (median) | takeover after the release (the new leader's \`sinceFreeMs\`) | SIGTERM to the status file | SIGTERM to the last stream |
| --- | ---: | ---: | ---: | ---: |
${row('none', none)}
${row(`${streams} reading`, reading)}
${row(`${streams} never reading`, stuck)}
`;
    return { markdown };
  } finally {
    for (const c of all) {
      for (const cl of c.clients) cl.close();
      c.proc.kill('SIGKILL');
    }
    dir.cleanup();
  }
}

export const STREAMS_HEADING = '## Leadership as a stream';

export const streamsPhase: Phase<StreamsBenchResult> = {
  name: 'streams',
  what: (o) => `${o.streams} GET /leader streams per sidecar: RSS and handoff, reading and never reading`,
  needsRoot: false,
  inFullRun: true,
  estimateS: (o) => 3 * (10 + o.trials * 4),
  heading: () => STREAMS_HEADING,
  section: (r, ctx) =>
    `${STREAMS_HEADING}\n\n_This section was measured by \`npm run bench -- --only streams --splice\` on ${ctx.today}, apart from the full run._\n\n${r.markdown}\n`,
  run: (ctx) => benchStreams({ trials: Math.min(ctx.opts.trials, 12), streams: ctx.opts.streams, log: ctx.log }),
};
