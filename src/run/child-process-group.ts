import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { constants } from 'node:os';
import { CommandStartError } from '../errors.js';
import { originalValues, originalWords, printfFormat } from './exact-bytes.js';

/**
 * Runs a command in a process group of its own, so leasehold can stop the command *and
 * everything it started*, and so nothing outlives leasehold itself.
 *
 * The command is started through /bin/sh, which first forks a watcher into the same group,
 * then execs the command (same pid, stdio passed through untouched), with its words' and
 * environment's bytes as leasehold was given them (guardScript). The watcher blocks
 * reading a pipe whose other end only leasehold holds. When leasehold exits for any reason
 * (SIGKILL included) the kernel closes that end, the read returns, and the watcher kills the
 * whole group. No polling, and no orphan keeps running after its leader died.
 */
const WATCHER = '(trap "" TERM INT HUP; read _ <&3; kill -KILL 0) & exec 3<&-;';
const GUARD = `${WATCHER} exec "$@"`;

/** A name /bin/sh can export. */
const SHELL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * GUARD for a command whose words or environment hold bytes that are not UTF-8 (exact-bytes.ts),
 * which spawn() cannot pass: its parameters are the count of variables to set, each name and
 * its value as a printf format, then each word, `r` and the word as it is, or `o` and the
 * word's bytes as a printf format. printf rebuilds each byte; the `.` after it keeps the
 * trailing newlines that a command substitution drops. `n` and `v` are the shell's own
 * variables, named so the command's environment holds neither: never exported.
 */
function exactGuard(n: string, v: string): string {
  return [
    WATCHER,
    `${n}=$1; shift;`,
    `while [ "$${n}" -gt 0 ]; do ${v}=$(printf "$2"; printf .); export "$1=\${${v}%.}"; shift 2; ${n}=$((${n} - 1)); done;`,
    `${n}=$#;`,
    `while [ "$${n}" -gt 0 ]; do case $1 in o*) ${v}=$(printf "\${1#o}"; printf .); ${v}=\${${v}%.};; *) ${v}=\${1#r};; esac; shift; set -- "$@" "$${v}"; ${n}=$((${n} - 1)); done;`,
    'exec "$@"',
  ].join(' ');
}

/** A variable name for the guard's own use that `env` does not hold. */
function unusedName(base: string, env: NodeJS.ProcessEnv): string {
  let name = base;
  while (name in env) name += '_';
  return name;
}

/**
 * The shell's script and parameters that start `argv` with `env`: GUARD and the words as they
 * are, or exactGuard when a word or a variable's value has bytes that are not UTF-8 (from this
 * process's own command line and environment: exact-bytes.ts). A variable whose name /bin/sh
 * cannot export keeps Node's decoding (docs/cli.md).
 */
export function guardScript(argv: readonly string[], env: NodeJS.ProcessEnv, own: { words?: Buffer[]; values?: Map<string, Buffer> } = {}): string[] {
  const words = own.words ?? originalWords(argv);
  const values = [...(own.values ?? originalValues(env))].filter(([name]) => SHELL_NAME.test(name));
  const asIs = words.map((bytes, i) => bytes.equals(Buffer.from(argv[i]!, 'utf8')));
  if (values.length === 0 && asIs.every(Boolean)) return [GUARD, 'leasehold-guard', ...argv];
  return [
    exactGuard(unusedName('leasehold_n', env), unusedName('leasehold_v', env)),
    'leasehold-guard',
    String(values.length),
    ...values.flatMap(([name, bytes]) => [name, printfFormat(bytes)]),
    ...words.map((bytes, i) => (asIs[i] ? `r${argv[i]}` : `o${printfFormat(bytes)}`)),
  ];
}

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

/**
 * Whether a process of group `pgid` is alive: one a signal reaches that is not a zombie (in
 * /proc, its state is neither Z nor X). Without /proc, any the signal reaches.
 */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (err) {
    // ESRCH: nobody is left; EPERM: somebody is, of another user (a setuid program).
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return true;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    let line: string;
    try {
      line = readFileSync(`/proc/${name}/stat`, 'latin1');
    } catch {
      continue; // gone meanwhile
    }
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
    const [state, , pgrp] = line.slice(line.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z' && state !== 'X') return true;
  }
  return false;
}

export class ChildProcessGroup {
  private readonly child: ChildProcess;
  readonly pid: number;
  readonly exited: Promise<ExitResult>;
  private done = false;

  constructor(argv: string[], env: NodeJS.ProcessEnv) {
    const [command, ...args] = argv;
    if (!command) throw new CommandStartError('no command given: use leasehold run [flags] -- CMD [ARGS...]');
    const [script, ...params] = guardScript([command, ...args], env);
    this.child = spawn('/bin/sh', ['-c', script!, ...params], {
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

  /**
   * After the command's exit: true once no process of its group is left alive, false when
   * `withinMs` passes first. Its exit sent the group SIGKILL, but a process the kernel cannot
   * kill at once (in uninterruptible sleep: a hung disk or network filesystem) lives on, with
   * its files and locks, until the kernel lets it go: the command's work is not over before.
   * A zombie has let go of everything and does not count (an orphan's may never be reaped where
   * leasehold is PID 1). The SIGKILL is sent again at each look, for a process forked meanwhile.
   */
  async emptied(withinMs: number): Promise<boolean> {
    await this.exited;
    const deadline = performance.now() + withinMs;
    for (let pauseMs = 2; ; pauseMs = Math.min(2 * pauseMs, 100)) {
      if (!groupAlive(this.pid)) return true;
      this.signal('SIGKILL');
      const left = deadline - performance.now();
      if (left <= 0) return false;
      await new Promise((resolve) => setTimeout(resolve, Math.min(pauseMs, left)));
    }
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
