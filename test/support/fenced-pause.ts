/**
 * The paused-writer scenario of the fenced-transaction tests, the same on SQLite and
 * PostgreSQL: writer A (a real process, test/support/fenced-writer.ts) holds token 1 and is
 * about to write when it is stopped (SIGSTOP); its order to write arrives while it is stopped;
 * writer B writes with token 2; A resumes and writes through the helper. What it must show:
 * A's write refused with the coded error naming the key, and nothing of it committed.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO, start, waitFor, type Proc } from './cli.js';

export interface PauseStore {
  store: 'sqlite' | 'postgres';
  target: string;
  /** A fenced write from the test process itself (the other writers). */
  write(key: string, token: number, label: string): Promise<void>;
  labels(): Promise<string[]>;
  fence(key: string): Promise<number | undefined>;
}

export interface PauseOutcome {
  /** A's own report once resumed. */
  a: { written: boolean; code?: string; key?: string; presented?: number; highest?: number; message?: string };
  labels: string[];
  fence: number | undefined;
}

function state(pid: number): string | undefined {
  try {
    // pid (comm) STATE ...: comm may hold spaces, so read after its closing parenthesis.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  } catch {
    return undefined;
  }
}

/** Runs the scenario; `owned` receives A's process so the caller's teardown can kill it. */
export async function pausedWriterScenario(s: PauseStore, key: string, owned: Proc[]): Promise<PauseOutcome> {
  await s.write(key, 1, 'A: first value');
  const a = start(process.execPath, [
    '--import',
    'tsx',
    join(REPO, 'test/support/fenced-writer.ts'),
    JSON.stringify({ store: s.store, target: s.target, key, token: 1, label: 'A: STALE value' }),
  ]);
  owned.push(a);
  await waitFor('writer A to be ready', () => a.stdout().includes('"ready":true'), 60_000);
  a.kill('SIGSTOP');
  await waitFor('writer A to be stopped', () => state(a.pid) === 'T', 10_000);
  // Its order to write arrives while it cannot run: it acts on it only once resumed, late.
  a.child.stdin!.write('write\n');
  await s.write(key, 2, 'B: fresh value');
  a.kill('SIGCONT');
  const line = await waitFor(
    'writer A to report',
    () =>
      a
        .stdout()
        .split('\n')
        .find((l) => l.includes('"written"')),
    60_000,
  );
  await a.exited;
  return { a: JSON.parse(line) as PauseOutcome['a'], labels: await s.labels(), fence: await s.fence(key) };
}
