/**
 * What the SQLite watch's poll costs one idle process: a store watching a lease nobody writes,
 * at the slow rate and at the named successor's quick rate, each for SECONDS (default 10),
 * CPU time from /proc/self/stat. Prints one JSON line per rate. Not a phase of `npm run bench`:
 * docs/sqlite.md quotes it, run on its own.
 *
 *   node --import tsx bench/scenarios/sqlite-watch-cpu.ts [SECONDS]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';
import { cpuTicks } from '../lib/proc-stats.js';

const seconds = Number(process.argv[2] ?? 10);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const dir = mkdtempSync(join(tmpdir(), 'leasehold-watch-cpu-'));
try {
  const store = new SqliteLeaseStore(join(dir, 'leases.db'));
  await store.create('idle', { holderIdentity: 'a', leaseDurationSeconds: 15, acquireTime: new Date(), renewTime: new Date(), leaseTransitions: 1 });
  for (const eager of [false, true]) {
    let polls = 0;
    const endQuick = store.successorClaims.pollQuicklyWhile('idle', () => (polls++, eager));
    const stopWatch = store.watch('idle', () => {}, undefined);
    const stop = () => {
      stopWatch();
      endQuick();
    };
    await sleep(1_000); // past start-up's own CPU
    const ticks0 = cpuTicks(process.pid);
    const polls0 = polls;
    const t0 = performance.now();
    await sleep(seconds * 1_000);
    const elapsedS = (performance.now() - t0) / 1_000;
    const cpuMs = (cpuTicks(process.pid) - ticks0) * 10;
    stop();
    console.log(
      JSON.stringify({
        rate: eager ? 'eager' : 'slow',
        seconds: +elapsedS.toFixed(1),
        polls: polls - polls0,
        cpuMs,
        cpuPercentOfOneCore: +(cpuMs / 10 / elapsedS).toFixed(2),
      }),
    );
  }
  await store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
