/**
 * Polls each DIR/status.json in a tight loop, as a separate process, and prints every content
 * it sees change as one JSON line { dir, status } (status is the file's text, parsed), until
 * its stdin closes.
 *   node --import tsx test/support/status-json-poller.ts DIR...
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const dirs = process.argv.slice(2);
const last = new Map<string, string>();
let stop = false;
process.stdin.on('end', () => (stop = true)).resume();
const pause = new Int32Array(new SharedArrayBuffer(4));
while (!stop) {
  for (let i = 0; i < 200; i++) {
    for (const dir of dirs) {
      let text: string;
      try {
        text = readFileSync(join(dir, 'status.json'), 'utf8');
      } catch {
        continue;
      }
      if (text === last.get(dir)) continue;
      last.set(dir, text);
      try {
        process.stdout.write(JSON.stringify({ dir, status: JSON.parse(text) as unknown }) + '\n');
      } catch {
        // never torn (written atomically); a partial read would be a finding of its own
        process.stdout.write(JSON.stringify({ dir, torn: text }) + '\n');
      }
    }
    Atomics.wait(pause, 0, 0, 0.2);
  }
  await new Promise((r) => setImmediate(r));
}
