/**
 * Runs the independent checker (test/porcupine, built once into the cache) over every history
 * file in a folder, as `npm run chaos -- --history` and the history tests do.
 */
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { buildTool } from '../support/build-tool.js';

export interface HistoryVerdict {
  /** The checker's exit: 0 linearizable, 1 a violation, 2 bad input, 3 no verdict in time. */
  code: number;
  /** Its verdict lines. */
  output: string;
}

let checker: string | undefined;

/** The checker's path, built on first use (seconds; the first time it fetches Porcupine). */
export function porcupineCheck(): string {
  checker ??= buildTool('build-porcupine-check.sh');
  return checker;
}

export function historyFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .sort()
    .map((f) => join(dir, f));
}

export function checkHistory(files: string[], timeoutSeconds = 120): Promise<HistoryVerdict> {
  return new Promise((resolve, reject) => {
    execFile(porcupineCheck(), ['-timeout', `${timeoutSeconds}s`, ...files], { maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') return reject(new Error(`porcupine-check could not run: ${err.message}`, { cause: err }));
      const code = err ? (err.code as number) : 0;
      resolve({ code, output: (stdout + stderr).trim() });
    });
  });
}
