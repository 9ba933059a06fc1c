/**
 * Hostile review (branch hostile5), a newcomer's mistake: an app posts its drain report to the
 * other mode's endpoint (POST /leader/stopped to a sidecar run with --shards, or POST
 * /shards/stopped to a lease's sidecar), with the right drain key. Today both answer
 * `405 method not allowed` (the server's answer to any non-GET path it does not route), which
 * names neither what was wrong nor the rule, though POST is the endpoint's method. The correct
 * answer says which endpoint this sidecar's mode takes (a 404 naming it); this fails today.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startCli, tempDir, waitFor, type Proc } from '../support/cli.js';

describe('hostile5: a drain report posted to the other mode’s endpoint', () => {
  const dir = tempDir('leasehold-h5-mode-');
  const procs: Proc[] = [];
  after(async () => {
    for (const p of procs) p.kill('SIGKILL');
    await Promise.all(procs.map((p) => p.exited));
    dir.cleanup();
  });

  async function sidecar(name: string, extra: string[]): Promise<{ url: string; key: string }> {
    const status = join(dir.path, `status-${name}`);
    const p = startCli([
      'sidecar',
      '--db',
      join(dir.path, `${name}.db`),
      '--lease',
      name,
      '--identity',
      name,
      '--status-dir',
      status,
      '--listen',
      '127.0.0.1:0',
      '--drain-timeout',
      '1s',
      ...extra,
    ]);
    procs.push(p);
    const address = await waitFor(`${name}'s listen address`, () => /"listen":"([\d.:]+)"/.exec(p.stderr())?.[1], 20_000);
    const key = await waitFor(
      `${name}'s drain key`,
      () => {
        try {
          return readFileSync(join(status, 'drain-key'), 'utf8').trim();
        } catch {
          return undefined;
        }
      },
      20_000,
    );
    return { url: `http://${address}`, key };
  }

  it('is answered with the endpoint this sidecar takes, not "method not allowed"', { timeout: 60_000 }, async () => {
    const shards = await sidecar('g', ['--shards', '4']);
    const lease = await sidecar('l', []);
    const post = async (s: { url: string; key: string }, path: string) => {
      const res = await fetch(`${s.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${s.key}` } });
      return `${res.status} ${(await res.text()).trim()}`;
    };
    const answers = {
      shardMode: await post(shards, '/leader/stopped?token=1'),
      leaseMode: await post(lease, '/shards/stopped?shard=0&token=1'),
    };
    assert.match(answers.shardMode, /^404 .*\/shards\/stopped/, JSON.stringify(answers));
    assert.match(answers.leaseMode, /^404 .*\/leader\/stopped/, JSON.stringify(answers));
  });
});
