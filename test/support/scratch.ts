import { after } from 'node:test';
import { tempDir, type Proc } from './cli.js';

/**
 * A temporary folder for one describe block, and the processes started in it: after the block
 * every process still running is resumed (it may be SIGSTOPped) and SIGKILLed, then the folder
 * is removed. `owned` is read at teardown, so the test can keep pushing to its own list.
 */
export function scratchDir(owned: () => Array<Proc | { proc: Proc }>, prefix?: string): { path: string } {
  const dir = tempDir(prefix);
  after(() => {
    for (const o of owned()) {
      const p = 'proc' in o ? o.proc : o;
      p.kill('SIGCONT');
      p.kill('SIGKILL');
    }
    dir.cleanup();
  });
  return { path: dir.path };
}
