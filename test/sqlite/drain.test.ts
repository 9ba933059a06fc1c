/**
 * `sidecar --drain-timeout`: on a graceful stop the old leader's release waits for its app's
 * POST /leader/stopped, so the next leader's app starts only after the old one stopped (times
 * from the apps' own lines); an app that never posts leaves the lease to expire: the next leader
 * starts only once the old term could have expired. Real sidecar and app processes on one
 * SQLite file.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { REPO, start, startCli, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import type { AppEvent } from '../support/leader-app.js';

const T = ['--lease-duration', '4s', '--renew-deadline', '3s', '--retry-period', '500ms'];
/** The longest drain these timings allow: renew-deadline/2 − retry-period. */
const DRAIN_MS = 1_000;
/** How long the apps take to stop their leader work once told "not leader". */
const STOP_DELAY_MS = 300;

interface Pair {
  id: string;
  sidecar: Proc;
  app: Proc;
}

function events(p: Proc): AppEvent[] {
  return p
    .stdout()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as AppEvent);
}

describe('sidecar --drain-timeout: the release waits for the app', () => {
  const procs: Proc[] = [];
  const dir = scratchDir(() => procs);
  const db = join(dir.path, 'leases.db');

  async function pair(lease: string, id: string, postStopped: boolean): Promise<Pair> {
    const sidecar = startCli(['sidecar', '--db', db, '--lease', lease, '--identity', id, '--listen', '127.0.0.1:0', '--drain-timeout', `${DRAIN_MS}ms`, ...T]);
    procs.push(sidecar);
    const address = await waitFor(`${id}'s listen address`, () => /"listen":"([\d.:]+)"/.exec(sidecar.stderr())?.[1], 20_000);
    const app = start(process.execPath, ['--import', 'tsx', join(REPO, 'test/support/leader-app.ts')], {
      LEADER_URL: `http://${address}`,
      STOP_DELAY_MS: String(STOP_DELAY_MS),
      POST_STOPPED: postStopped ? '1' : '0',
    });
    procs.push(app);
    return { id, sidecar, app };
  }

  /** Both up, one leading with its app working; then SIGTERM to the leader's sidecar. */
  async function handoff(lease: string, postStopped: boolean) {
    const pairs = [await pair(lease, `${lease}-a`, postStopped), await pair(lease, `${lease}-b`, postStopped)];
    const old = await waitFor('a leader app working', () => pairs.find((p) => events(p.app).some((e) => e.event === 'start')), 30_000);
    const next = pairs.find((p) => p !== old)!;
    // The standby follows the leader (its successor claim written) before the stop, as in a rollout.
    await waitFor(
      'the standby to see the leader',
      async () => {
        const r = await fetch(`http://${/"listen":"([\d.:]+)"/.exec(next.sidecar.stderr())![1]}/leader`);
        return ((await r.json()) as { holder: string }).holder === old.id;
      },
      20_000,
    );
    const signalledAt = performance.timeOrigin + performance.now();
    old.sidecar.kill('SIGTERM');
    const started = await waitFor('the new leader app to start', () => events(next.app).find((e) => e.event === 'start'), 20_000);
    assert.equal((await old.sidecar.exited).code, 0, old.sidecar.stderr());
    const stopped = await waitFor('the old app to stop', () => events(old.app).find((e) => e.event === 'stop'), 5_000);
    return { old, next, signalledAt, started, stopped };
  }

  it('the new leader app starts only after the old one said it stopped', { timeout: 90_000 }, async () => {
    const h = await handoff('posted', true);
    assert.ok(h.stopped.at - h.signalledAt >= STOP_DELAY_MS, 'the old app took its time to stop');
    assert.ok(h.started.at >= h.stopped.at, `no overlap: the new app started ${(h.stopped.at - h.started.at).toFixed(1)} ms before the old one stopped`);
    assert.ok(h.started.token > h.stopped.token);
    assert.equal(events(h.old.app).find((e) => e.event === 'posted')?.code, 200, 'the POST was accepted');
    assert.match(h.old.sidecar.stderr(), /"msg":"the app stopped its leader work: releasing"/);
    assert.ok(h.started.at - h.signalledAt < 3_000, 'a release, not an expiry (4 s lease)');

    // The new leader's sidecar: its own term is still led, the old term never ended here.
    const url = `http://${/"listen":"([\d.:]+)"/.exec(h.next.sidecar.stderr())![1]}/leader/stopped`;
    const post = async (query: string, method = 'POST') => {
      const r = await fetch(`${url}${query}`, { method });
      return `${r.status} ${await r.text()}`;
    };
    assert.match(await post(`?token=${h.started.token}`), /^409 token \d+ is the term this candidate still leads/);
    assert.match(await post(`?token=${h.stopped.token}`), /^409 token \d+ is not the term that ended last here \(none yet\)/);
    assert.match(await post(''), /^400 token=N is required/);
    assert.match(await post('?token=1&token=2'), /^400 token is given 2 times/);
    assert.match(await post(`?token=${h.started.token}`, 'GET'), /^405 use POST \/leader\/stopped\?token=N/);
  });

  it('without the POST the lease is left to expire: the next leader starts only once the old term could have', { timeout: 90_000 }, async () => {
    const h = await handoff('silent', false);
    assert.match(h.old.sidecar.stderr(), /"msg":"the work did not finish within drainTimeoutMs: the lease is left to expire, not released"/);
    assert.doesNotMatch(h.old.sidecar.stderr(), /"msg":"released lease"/);
    // The old term's last renewal was at most one retry period before the signal: its lease
    // could expire 4 s after that at the earliest.
    const sinceSignal = h.started.at - h.signalledAt;
    assert.ok(sinceSignal >= 4_000 - 500, `the next leader waited out the old term's lease (${sinceSignal.toFixed(0)} ms after the signal)`);
  });
});
