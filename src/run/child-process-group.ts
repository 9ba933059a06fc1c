import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import { CommandStartError } from '../errors.js';

/**
 * Runs a command in a process group of its own, so leasehold can stop the command *and
 * everything it started*, and so nothing outlives leasehold itself.
 *
 * The command is started through /bin/sh, which first forks a watcher into the same group,
 * then execs the command (same pid, stdio passed through untouched). The watcher blocks
 * reading a pipe whose other end only leasehold holds. When leasehold exits for any reason
 * (SIGKILL included) the kernel closes that end, the read returns, and the watcher kills the
 * whole group. No polling, and no orphan keeps running after its leader died.
 */
const GUARD = '(trap "" TERM INT HUP; read _ <&3; kill -KILL 0) & exec 3<&-; exec "$@"';

export interface ExitResult {
  /** Exit code, or null when killed by a signal. */
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** The shell convention: the exit code, or 128 + the signal's number (SIGSEGV gives 139, as in a shell). */
export function exitStatus(r: ExitResult): number {
  if (r.code !== null) return r.code;
  return 128 + (r.signal ? (constants.signals[r.signal] ?? constants.signals.SIGTERM) : constants.signals.SIGTERM);
}

export class ChildProcessGroup {
  private readonly child: ChildProcess;
  readonly pid: number;
  readonly exited: Promise<ExitResult>;
  private done = false;

  constructor(argv: string[], env: NodeJS.ProcessEnv) {
    const [command, ...args] = argv;
    if (!command) throw new CommandStartError('no command given: use leasehold run [flags] -- CMD [ARGS...]');
    this.child = spawn('/bin/sh', ['-c', GUARD, 'leasehold-guard', command, ...args], {
      detached: true, // setsid: the child leads a new process group (pgid = pid)
      stdio: ['inherit', 'inherit', 'inherit', 'pipe'],
      env,
    });
    if (this.child.pid === undefined) throw new CommandStartError(`cannot start ${command}`);
    this.pid = this.child.pid;
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => {
        this.done = true;
        // Whatever the command left behind dies now, before anything follows its exit (a
        // release, a restart): the watcher would kill it too, but only once it is scheduled.
        // The watcher is still in the group, so the group id is still this one's.
        this.signal('SIGKILL');
        // Closing our end tells the watcher to kill anything the command left behind.
        this.child.stdio[3]?.destroy();
        resolve({ code, signal });
      }),
    );
    // Keep the pipe from holding leasehold's event loop open once the child is gone.
    (this.child.stdio[3] as unknown as { unref?: () => void })?.unref?.();
  }

  get running(): boolean {
    return !this.done;
  }

  /** Sends `signal` to every process in the group; false when it is already gone. */
  signal(signal: NodeJS.Signals): boolean {
    try {
      process.kill(-this.pid, signal);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * SIGTERM to the group, SIGKILL after `graceMs` if the command has not exited.
   * Resolves with how it ended and whether SIGKILL was needed.
   */
  async terminate(graceMs: number): Promise<ExitResult & { killed: boolean }> {
    if (this.done) return { ...(await this.exited), killed: false };
    this.signal('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const killed = await Promise.race([
      this.exited.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => {
          this.signal('SIGKILL');
          resolve(true);
        }, graceMs);
      }),
    ]);
    clearTimeout(timer);
    const result = await this.exited;
    // The command is gone; make sure nothing it started survives either.
    this.signal('SIGKILL');
    return { ...result, killed };
  }
}
