/**
 * The app beside one shard chaos member (test/chaos/shard-chaos.ts). In a loop it reads its
 * sidecar's shards.json (readOwnedShards: only while validUntil is ahead), then for each shard
 * it owns "works" 10 ms and writes one row through the fence, key shardFenceKey('orders', shard),
 * with the token it read at the start of the loop. A SIGSTOP anywhere in the loop makes it write
 * late with old tokens, as a real worker would; the fence must refuse those. One JSON line per
 * attempt on stdout: {"key","token","writer","outcome":"accepted"|"stale"|"error"}.
 *   shard-chaos-app.ts <statusDir> sqlite|postgres <db file | postgres URL> <identity>
 */
import { readOwnedShards } from '../../src/status/shards-status.js';
import { shardFenceKey } from '../../src/fencing/claim.js';
import { StaleTokenError, describeError } from '../../src/errors.js';
import { openFencedWrites, RESOURCE } from './fenced-writes.js';

const [statusDir, store, target, id] = process.argv.slice(2) as [string, 'sqlite' | 'postgres', string, string];
const writes = await openFencedWrites(store, target);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let n = 0;
let stopping = false;

process.on('SIGTERM', () => {
  stopping = true;
});

while (!stopping) {
  const owned = readOwnedShards(statusDir).owned;
  if (owned.length === 0) await sleep(50);
  for (const { shard, fencingToken: token } of owned) {
    await sleep(10);
    const key = shardFenceKey(RESOURCE, shard);
    const writer = `${id}#${n++}`;
    let outcome: string;
    try {
      await writes.write({ key, token }, writer);
      outcome = 'accepted';
    } catch (err) {
      outcome = err instanceof StaleTokenError ? 'stale' : `error: ${describeError(err)}`;
    }
    process.stdout.write(JSON.stringify({ key, token, writer, outcome }) + '\n');
    if (stopping) break;
  }
}
await writes.close();
process.exit(0);
