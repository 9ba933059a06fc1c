import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { REPO, start, waitFor, type Proc } from './cli.js';

const APP = join(REPO, 'test/support/health-app.mjs');

export interface HealthApp {
  proc: Proc;
  port: number;
  url: string;
}

/** Starts test/support/health-app.mjs (a real process) and waits until it listens. */
export async function startHealthApp(mode: string, port = 0): Promise<HealthApp> {
  const proc = start(process.execPath, [APP, String(port), mode]);
  const bound = await waitFor(
    'the health app to listen',
    () => {
      const m = /^listening (\d+)$/m.exec(proc.stdout());
      if (m) return Number(m[1]);
      if (proc.child.exitCode !== null) throw new Error(`the health app exited: ${proc.stderr()}`);
      return undefined;
    },
    10_000,
  );
  return { proc, port: bound, url: `http://127.0.0.1:${bound}/healthz` };
}

/** When the app first answered 200 (its own clock, epoch ms), or undefined. */
export function first200(app: HealthApp): number | undefined {
  const m = /^first-200 (\d+)$/m.exec(app.proc.stdout());
  return m ? Number(m[1]) : undefined;
}

export interface StatusFile {
  identity: string;
  isLeader: boolean;
  fencingToken: number | null;
  holder: string | null;
  standingAside: { reason: string; since: string } | null;
  stoppedAt: string | null;
}

/** A candidate's status.json, or undefined before it is written. */
export function readStatus(statusDir: string): StatusFile | undefined {
  try {
    return JSON.parse(readFileSync(join(statusDir, 'status.json'), 'utf8')) as StatusFile;
  } catch {
    return undefined;
  }
}

/** The JSON log lines of a process's stderr with this message. */
export function logLines(p: Proc, msg: string): Record<string, unknown>[] {
  return p
    .stderr()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.msg === msg);
}
