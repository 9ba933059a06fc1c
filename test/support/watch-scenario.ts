/**
 * `leasehold status --watch --json` against real sidecars on any store: a line for the first
 * holder, for the handoff after a SIGTERM (the release may be too brief to see), for the expiry
 * after a SIGKILL, and exit 0 on SIGINT. Renewals make no line.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startCli, waitFor, type Proc } from './cli.js';
import { startSidecar, validLeaders, type Timing } from './sidecars.js';

const T: Timing = { leaseDuration: '2s', renewDeadline: '1500ms', retryPeriod: '400ms' };

interface WatchLine {
  observedAt: string;
  found: boolean;
  state?: string;
  holder?: string;
  fencingToken?: number;
  expiresAt?: string | null;
}

const parse = (p: Proc) =>
  p
    .stdout()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as WatchLine);

export async function watchScenario(backend: string[], dir: string, procs: Proc[]): Promise<void> {
  const cands = ['a', 'b'].map((id) => startSidecar(dir, id, backend, T));
  procs.push(...cands.map((c) => c.proc));
  const first = await waitFor('a first leader', () => validLeaders(cands)[0], 30_000);
  const watcher = startCli(['status', ...backend, '--watch', '--json']);
  procs.push(watcher);
  const held = await waitFor('the first line', () => parse(watcher)[0], 15_000);
  assert.equal(held.state, 'held');
  assert.equal(held.holder, first.c.id);
  assert.equal(held.fencingToken, first.token);
  assert.ok(Date.parse(held.expiresAt!) > Date.parse(held.observedAt));

  // Renewals (every 400 ms) make no line: three of them pass before the handoff.
  const renewedAt = () => (JSON.parse(readFileSync(join(first.c.statusDir, 'status.json'), 'utf8')) as { renewedAt: string }).renewedAt;
  const since = Date.parse(renewedAt());
  await waitFor('three renewals', () => Date.parse(renewedAt()) >= since + 1_200, 15_000);
  assert.equal(parse(watcher).length, 1, `renewals made lines:\n${watcher.stdout()}`);

  first.c.proc.kill('SIGTERM');
  const standby = cands.find((c) => c !== first.c)!;
  const next = await waitFor('the handoff line', () => parse(watcher).find((l) => l.state === 'held' && l.holder === standby.id), 15_000);
  assert.ok(next.fencingToken! > first.token);
  const between = parse(watcher).slice(1, -1);
  assert.ok(
    between.every((l) => l.state === 'released' && l.holder === ''),
    `only a release may come between: ${JSON.stringify(between)}`,
  );

  standby.proc.kill('SIGKILL'); // no release: the lease expires after its 2 s
  const expired = await waitFor('the expiry line', () => parse(watcher).find((l) => l.state === 'expired'), 15_000);
  assert.equal(expired.holder, standby.id);
  assert.equal(expired.fencingToken, next.fencingToken);
  assert.ok(Date.parse(expired.observedAt) >= Date.parse(expired.expiresAt!), 'expired is printed only once the expiry has passed');

  watcher.kill('SIGINT');
  assert.deepEqual(await watcher.exited, { code: 0, signal: null });
  assert.equal(watcher.stderr(), '');
}
