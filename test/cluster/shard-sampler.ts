/**
 * The shard checks' sampler (test/cluster/shard-checks.ts), a process of its own so that the
 * test's kubectl calls (which block its event loop) never stall it: every 10 ms it reads the
 * `shards.json` of every pod on the node from the host, where the kubelet keeps each pod's status
 * volume (an emptyDir: `<kubelet root>/pods/<uid>/volumes/kubernetes.io~empty-dir/leader`), keeps
 * those of group `group`, and judges each round (test/support/shard-ownership.ts): no shard owned
 * twice within the files' validUntil, no token going back. It stops when its standard input
 * closes, and prints its summary as one line of JSON.
 *   node --import tsx test/cluster/shard-sampler.ts <kubelet pods dir> <group>
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { OwnershipJudge, parseShards, type ShardsRead } from '../support/shard-ownership.js';

const [podsDir, group] = process.argv.slice(2) as [string, string];
const PERIOD_MS = 10;

export interface SamplerSummary {
  rounds: number;
  /** The files of the group read. */
  reads: number;
  /** The longest time between the starts of two rounds, ms. */
  longestGapMs: number;
  /** Two files listing one shard in one round, not confirmed by a reread: a move between the two reads. */
  movesBetweenReads: number;
  /** How many violations were found; `violations` holds the first 20. */
  violationCount: number;
  violations: string[];
  /** Each shard's highest token seen. */
  tokens: Record<number, number>;
  /** Distinct identities whose files were read. */
  members: string[];
}

const judge = new OwnershipJudge();
const members = new Set<string>();
let reads = 0;
let rounds = 0;
let longestGapMs = 0;

function readOne(uid: string): ShardsRead | null {
  let text: string;
  try {
    text = readFileSync(join(podsDir, uid, 'volumes/kubernetes.io~empty-dir/leader/shards.json'), 'utf8');
  } catch {
    return null; // no such volume, not written yet, or the pod is going
  }
  try {
    const r = parseShards(uid, text, Date.now(), group);
    if (r) reads++;
    return r;
  } catch {
    // Replaced atomically by rename: a partial file would be a bug of the sidecar's.
    judge.violations.push(`${uid}: shards.json is not JSON: ${JSON.stringify(text.slice(0, 80))}`);
    return null;
  }
}

function round(): void {
  let uids: string[];
  try {
    uids = readdirSync(podsDir);
  } catch {
    return;
  }
  const got: ShardsRead[] = [];
  for (const uid of uids) {
    const r = readOne(uid);
    if (!r) continue;
    members.add(r.identity);
    got.push(r);
  }
  judge.round(got, readOne);
}

let last = 0;
let timer: NodeJS.Timeout | undefined;
const tick = () => {
  const start = Date.now();
  if (last) longestGapMs = Math.max(longestGapMs, start - last);
  last = start;
  rounds++;
  round();
  timer = setTimeout(tick, Math.max(0, start + PERIOD_MS - Date.now()));
};
tick();

process.stdin.resume();
process.stdin.on('end', () => {
  clearTimeout(timer);
  const summary: SamplerSummary = {
    rounds,
    reads,
    longestGapMs,
    movesBetweenReads: judge.movesBetweenReads,
    violationCount: judge.violations.length,
    // Bounded: a broken run could find a violation in every round.
    violations: judge.violations.slice(0, 20),
    tokens: Object.fromEntries([...judge.highest].map(([s, h]) => [s, h.token])),
    members: [...members].sort(),
  };
  process.stdout.write(JSON.stringify(summary) + '\n');
  process.exit(0);
});
