/**
 * The tutorial's steps 5 and 6 on leasehold's parts, runnable:
 *   node dist/examples/split-brain/split-brain.js [workdir]
 *
 * Two candidates share a lease in an SQLite file. A acquires it (token N), then "pauses"
 * before its write, long enough for its lease to expire. B takes over (token N+1) and writes.
 * A wakes up, still believing it leads, and finishes its write:
 *   - unfenced, A's stale write silently replaces B's (step 5: split brain);
 *   - fenced, the resource rejects A's lower token and B's value stays (step 6).
 *
 * The pause is simulated with a fake clock for the candidates' own judgement of time, so the
 * demonstration is instant and deterministic; the lease file and the resource are real.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';
import { CandidateLoop } from '../../src/election/candidate-loop.js';
import { FencedSqliteResource } from '../../src/fencing/fenced-resource.js';
import { writeUnfenced } from '../../src/fencing/unfenced-write.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { resolveElectionConfig } from '../../src/config/election-options.js';

export interface Outcome {
  tokenA: number;
  tokenB: number;
  unfenced: { value: string | null; writtenBy: string | null };
  fenced: { accepted: boolean; reason: string; value: string | null; writtenBy: string | null };
}

async function scenario(dir: string, fenced: boolean, say: (line: string) => void): Promise<Outcome['fenced'] & { tokenA: number; tokenB: number }> {
  const tag = fenced ? 'fenced' : 'unfenced';
  const clock = new FakeClock();
  const timings = { leaseDurationMs: 1_000, renewDeadlineMs: 800, retryPeriodMs: 200 };
  const store = new SqliteLeaseStore(join(dir, `${tag}-leases.db`));
  const resourcePath = join(dir, `${tag}-resource.db`);
  const resource = new FencedSqliteResource(resourcePath);
  const a = new CandidateLoop({ ...resolveElectionConfig({ ...timings, lease: 'resource-writer', identity: 'candidate-a' }), store, clock });
  const b = new CandidateLoop({ ...resolveElectionConfig({ ...timings, lease: 'resource-writer', identity: 'candidate-b' }), store, clock });

  // A new lease is created only after it has been seen absent for a lease duration (a deleted
  // lease's holder could still be acting), so A keeps looking, every retry period.
  while (!(await a.tryAcquireOrRenew())) await clock.advance(timings.retryPeriodMs);
  const tokenA = a.snapshot().fencingToken!;
  say(`A becomes leader with fencing token ${tokenA}`);
  await b.tryAcquireOrRenew(); // B sees A's fresh lease and waits
  say('A is about to write, and pauses (GC, a stalled disk, a descheduled thread): no write, no renewal');
  await clock.advance(1_300);

  await b.tryAcquireOrRenew();
  const tokenB = b.snapshot().fencingToken!;
  say(`A's lease expired; B takes over with fencing token ${tokenB}`);
  if (fenced) resource.write("B's fresh value", 'candidate-b', tokenB);
  else writeUnfenced(resourcePath, "B's fresh value", 'candidate-b');
  say(`B writes: ${JSON.stringify(resource.read())}`);

  say('A wakes up; in its own memory it still leads, so it finishes the write it started');
  let result = { accepted: true, reason: 'no check' };
  if (fenced) result = resource.write("A's STALE value", 'candidate-a', tokenA);
  else writeUnfenced(resourcePath, "A's STALE value", 'candidate-a');
  const after = resource.read();
  say(fenced ? `A's write: ${result.accepted ? 'accepted' : 'rejected'}: ${result.reason}` : "A's write: nothing checked it");
  say(`resource is now: ${JSON.stringify(after)}`);
  resource.close();
  await store.close();
  return { ...result, value: after.value, writtenBy: after.writtenBy, tokenA, tokenB };
}

export async function runSplitBrainDemo(dir: string, say: (line: string) => void = () => {}): Promise<Outcome> {
  say('=== Step 5: the same leases, an unfenced resource ===');
  const u = await scenario(dir, false, say);
  say('');
  say('=== Step 6: the same sequence, the resource checks the fencing token ===');
  const f = await scenario(dir, true, say);
  return { tokenA: f.tokenA, tokenB: f.tokenB, unfenced: { value: u.value, writtenBy: u.writtenBy }, fenced: f };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const dir = process.argv[2] ?? mkdtempSync(join(tmpdir(), 'leasehold-split-brain-'));
  await runSplitBrainDemo(dir, (line) => console.log(line));
  console.log(`\n(files in ${dir})`);
}
