/**
 * A reader of status volumes that polls in a tight loop, as a separate process: for each
 * directory it reads is-leader, fencing-token, is-leader. When both reads of is-leader say
 * "true", the token read between them must be that term's: a number, and never lower than a
 * token this directory already showed as leading. Runs until its stdin closes, then prints
 * one JSON line: { reads, leaderReads, violations } (the first 20 violations).
 *
 *   node --import tsx test/support/status-poller.ts DIR...
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const dirs = process.argv.slice(2);
const read = (dir: string, name: string) => {
  try {
    return readFileSync(join(dir, name), 'utf8');
  } catch {
    return '(missing)';
  }
};
const highest = new Map<string, number>();
const violations: string[] = [];
let reads = 0;
let leaderReads = 0;
let stop = false;
process.stdin.on('end', () => (stop = true)).resume();
const pause = new Int32Array(new SharedArrayBuffer(4));

while (!stop) {
  for (let i = 0; i < 200; i++) {
    for (const dir of dirs) {
      const before = read(dir, 'is-leader');
      const token = read(dir, 'fencing-token');
      const after = read(dir, 'is-leader');
      reads++;
      if (before !== 'true\n' || after !== 'true\n') continue;
      leaderReads++;
      const n = /^\d+\n$/.test(token) ? Number(token) : NaN;
      const prev = highest.get(dir) ?? -1;
      if (Number.isNaN(n) || n < prev) {
        if (violations.length < 20) violations.push(`${dir}: is-leader true with fencing-token ${JSON.stringify(token)} (highest seen ${prev})`);
      } else highest.set(dir, n);
    }
    Atomics.wait(pause, 0, 0, 0.2); // a fifth of a millisecond: far shorter than a write and its fsync
  }
  await new Promise((r) => setImmediate(r));
}
process.stdout.write(JSON.stringify({ reads, leaderReads, violations }) + '\n');
