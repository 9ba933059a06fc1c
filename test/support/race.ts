import assert from 'node:assert/strict';
import { join } from 'node:path';
import { REPO, start, waitFor, type Proc } from './cli.js';
import type { StoreSettings } from '../../src/backends/open-store.js';

const WORKER = join(REPO, 'test/support/race-worker.ts');

export interface RaceResult {
  id: string;
  acquired: boolean;
  token: number | null;
}

/**
 * Starts `workers` real processes, then for each round opens a fresh store from
 * `storeFor(round)` in all of them and lets them attempt at once. Asserts exactly one winner
 * per round with token 1. Returns the winners' tally.
 */
export async function raceRounds(
  workers: number,
  rounds: number,
  storeFor: (round: number) => StoreSettings & { lease: string },
  holderOf: (round: number) => Promise<string | undefined>,
): Promise<Map<string, number>> {
  const procs: Proc[] = [];
  try {
    for (let i = 0; i < workers; i++) procs.push(start(process.execPath, ['--import', 'tsx', WORKER, `w${i}`, '10000']));
    const lines = (p: Proc) => p.stdout().split('\n').filter(Boolean);
    const winners = new Map<string, number>();
    for (let round = 0; round < rounds; round++) {
      const spec = JSON.stringify(storeFor(round));
      const before = procs.map((p) => lines(p).length);
      for (const p of procs) p.child.stdin!.write(`open ${spec}\n`);
      await waitFor('all workers ready', () => procs.every((p, i) => lines(p).length === before[i]! + 1), 60_000, 5).catch((e: Error) => {
        throw new Error(`${e.message}: ${procs.map((p) => p.stderr()).join('\n')}`);
      });
      for (const p of procs) p.child.stdin!.write('go\n');
      await waitFor('all workers answered', () => procs.every((p, i) => lines(p).length === before[i]! + 2), 60_000, 5);
      const results = procs.map((p) => JSON.parse(lines(p).at(-1)!) as RaceResult);
      const won = results.filter((r) => r.acquired);
      assert.equal(won.length, 1, `round ${round}: ${JSON.stringify(results)}\n${procs.map((p) => p.stderr()).join('')}`);
      assert.equal(won[0]!.token, 1);
      assert.equal(await holderOf(round), won[0]!.id, 'the stored holder is the one winner');
      winners.set(won[0]!.id, (winners.get(won[0]!.id) ?? 0) + 1);
    }
    return winners;
  } finally {
    for (const p of procs) p.kill('SIGKILL');
  }
}
