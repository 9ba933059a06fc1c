/**
 * Where the one taker of a graceful leave spends its time: two `leasehold sidecar --shards N`
 * members on one SQLite file (the tests' short timings), the second under V8's CPU profiler;
 * the first is stopped with SIGTERM once they are balanced, and the profile's samples are cut
 * to the window from that signal until the second's shards.json lists all N. Prints the leave's
 * time and the functions with the most samples in it, self and inclusive. The profiler's clock
 * and process.hrtime are the same monotonic clock. Not a phase of `npm run bench`:
 * docs/benchmarks.md quotes it ("A graceful leave at N = 4096, M = 2, part by part"), run on its own.
 *
 *   node --import tsx bench/scenarios/leave-profile.ts [N]
 */
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, NODE_FLAGS, start, waitFor } from '../../test/support/cli.js';
import { SHARD_TIMING, ownedNow, readShards, settled, startMember, type Member } from '../../test/support/shard-scenario.js';

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const N = Number(process.argv[2] ?? 4096);
const INTERVAL_US = 250;
const dir = mkdtempSync(join(tmpdir(), 'leasehold-leave-profile-'));
const profiles = join(dir, 'profiles');
mkdirSync(profiles);
const backend = ['--db', join(dir, 'leases.db')];
const members: Member[] = [];
try {
  const leaver = startMember(dir, 'm1', backend, N);
  members.push(leaver);
  await settled([leaver], N, 'the first member owning every shard', 60_000);
  const statusDir = join(dir, 'status-m2');
  const args = ['sidecar', ...backend, '--shards', String(N), '--identity', 'm2', '--status-dir', statusDir, '--listen', 'off', ...SHARD_TIMING];
  const profiled = `--cpu-prof-dir=${profiles}`;
  const taker: Member = {
    id: 'm2',
    statusDir,
    proc: start(process.execPath, [...NODE_FLAGS, '--cpu-prof', profiled, `--cpu-prof-interval=${INTERVAL_US}`, CLI, ...args]),
  };
  members.push(taker);
  await settled(members, N, 'two members, balanced', 60_000);
  const from = process.hrtime.bigint() / 1000n;
  leaver.proc.kill('SIGTERM');
  await waitFor('the taker listing every shard', () => (ownedNow(readShards(statusDir)).length === N ? true : undefined), 30_000, 2);
  const to = process.hrtime.bigint() / 1000n;
  taker.proc.kill('SIGTERM'); // a graceful exit writes the profile
  await taker.proc.exited;
  const file = readdirSync(profiles).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`the taker wrote no profile; it said:\n${taker.proc.stderr()}`);
  const report = windowed(JSON.parse(readFileSync(join(profiles, file), 'utf8')) as CpuProfile, Number(from), Number(to));
  console.log(`N = ${N}, M = 2: the leave took ${(Number(to - from) / 1000).toFixed(0)} ms; ${report}`);
} finally {
  for (const m of members) m.proc.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}

/** The samples between `from` and `to` (µs, the monotonic clock), by function: self and inclusive, the top of each. */
function windowed(p: CpuProfile, from: number, to: number): string {
  const node = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const name = (id: number) => {
    const f = node.get(id)!.callFrame;
    return `${f.functionName || '(anonymous)'} ${f.url.replace(/.*\/(src|dist|node_modules)\//, '$1/')}:${f.lineNumber + 1}`;
  };
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let t = p.startTime;
  let total = 0;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i]!;
    if (t < from || t > to) continue;
    const dt = p.timeDeltas[i + 1] ?? INTERVAL_US;
    total += dt;
    const id = p.samples[i]!;
    self.set(name(id), (self.get(name(id)) ?? 0) + dt);
    const counted = new Set<string>(); // a recursive function once per sample
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const k = name(at);
      if (counted.has(k)) continue;
      counted.add(k);
      inclusive.set(k, (inclusive.get(k) ?? 0) + dt);
    }
  }
  const top = (m: Map<string, number>, k: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, k)
      .map(([n, us]) => `${(us / 1000).toFixed(1).padStart(7)} ms  ${n}`)
      .join('\n');
  return `${(total / 1000).toFixed(0)} ms of samples in it\n-- self --\n${top(self, 25)}\n-- inclusive --\n${top(inclusive, 40)}`;
}
