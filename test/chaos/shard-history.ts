/**
 * A shard group's store calls recorded under faults and judged by the independent checker
 * (docs/testing.md "Recorded histories"): 3 `leasehold sidecar --shards` members on one group,
 * and every 1.5-3 s one of them frozen past the lease (SIGSTOP, then SIGCONT) or killed and
 * restarted. Every list, create and update of the group's records (header, member slots,
 * shards) is a compare-and-swap register's operation per record.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { REPO } from '../support/cli.js';
import { prng } from '../support/prng.js';
import { startMember, type Member } from '../support/shard-scenario.js';
import { checkHistory, historyFiles, type HistoryVerdict } from './check-history.js';

/** SHARD_TIMING's lease (test/support/shard-scenario.ts). */
const LEASE_MS = 3_000;

export interface ShardHistoryOptions {
  backend: 'sqlite' | 'postgres';
  backendArgs: string[];
  dir: string;
  seconds: number;
  seed: number;
  shards?: number;
  log?: (line: string) => void;
}

export interface ShardHistoryReport {
  faults: Record<string, number>;
  verdict: HistoryVerdict;
}

export async function runShardHistory(o: ShardHistoryOptions): Promise<ShardHistoryReport> {
  const rand = prng(o.seed);
  const historyDir = join(o.dir, 'history');
  mkdirSync(historyDir);
  const env: NodeJS.ProcessEnv = {
    LEASEHOLD_TEST_HISTORY_DIR: historyDir,
    LEASEHOLD_TEST_HISTORY_BACKEND: o.backend,
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${join(REPO, 'test/chaos/record-store-calls.mjs')}`.trim(),
  };
  const shards = o.shards ?? 16;
  const launch = (id: string) => startMember(o.dir, id, o.backendArgs, shards, [], env);
  const members: Member[] = ['m0', 'm1', 'm2'].map(launch);
  const everyIncarnation = [...members];
  const faults: Record<string, number> = {};
  try {
    const deadline = Date.now() + o.seconds * 1000;
    while (Date.now() < deadline) {
      await sleep(1_500 + rand() * 1_500);
      const i = Math.floor(rand() * members.length);
      const victim = members[i]!;
      if (rand() < 0.6) {
        faults.freeze = (faults.freeze ?? 0) + 1;
        o.log?.(`shards: freeze of ${victim.id}`);
        victim.proc.kill('SIGSTOP');
        await sleep(LEASE_MS + 500 + rand() * 1_000);
        victim.proc.kill('SIGCONT');
      } else {
        faults.kill = (faults.kill ?? 0) + 1;
        o.log?.(`shards: kill of ${victim.id}`);
        victim.proc.kill('SIGKILL');
        await victim.proc.exited;
        members[i] = launch(victim.id);
        everyIncarnation.push(members[i]);
      }
    }
  } finally {
    for (const m of everyIncarnation) {
      m.proc.kill('SIGCONT');
      m.proc.kill('SIGTERM');
    }
    const killer = setTimeout(() => everyIncarnation.forEach((m) => m.proc.kill('SIGKILL')), 20_000);
    await Promise.all(everyIncarnation.map((m) => m.proc.exited));
    clearTimeout(killer);
  }
  return { faults, verdict: await checkHistory(historyFiles(historyDir)) };
}
