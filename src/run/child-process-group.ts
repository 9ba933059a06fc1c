import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { constants } from 'node:os';
import { join } from 'node:path';
import { CommandStartError } from '../errors.js';
import { originalValues, originalWords, printfFormat } from './exact-bytes.js';
import { sessionAlive, signalSession } from './session-processes.js';
import type { CommandCgroup } from './command-cgroup.js';

/**
 * Runs a command in a session of its own (setsid), so leasehold can stop the command *and
 * everything it started*, and so nothing outlives leasehold itself. A session, not only a
 * process group: a worker leaves CMD's group by any setpgid (GNU `timeout` calls it, as does a
 * shell with job control), but stays in its session unless it calls setsid itself
 * (session-processes.ts; docs/drain.md says what can still escape).
 *
 * The command is started through /bin/sh, which first reads one line from a pipe whose other end
 * only leasehold holds: the directory of CMD's cgroup (command-cgroup.ts), into which leasehold
 * has moved the shell before it writes the line, or nothing. So nothing CMD starts runs before
 * it is in the cgroup. The shell then forks a watcher into the same session (and cgroup), and
 * execs the command (same pid, stdio passed through untouched), with its words' and
 * environment's bytes as leasehold was given them (guardScript). The watcher blocks reading the
 * pipe. When leasehold exits for any reason (SIGKILL included) the kernel closes that end, the
 * read returns, and the watcher moves itself out of the cgroup (to its parent) and kills it
 * (cgroup.kill), then kills every other process of the session by its PID (found in /proc,
 * field 6 of stat: the session; a zombie skipped), again while a look finds one (a process
 * forked between a look and its kill), up to 100 looks 50 ms apart (a process the kernel cannot
 * kill at once stays listed), removes the cgroup once it is empty (within 10 s), then kills its
 * own group. `$$` is the shell's PID, which setsid made the session's ID. No polling before
 * leasehold dies, and no orphan keeps running after its leader died.
 *
 * `cg` names the shell variable that holds the cgroup's directory: one the command's
 * environment does not hold, as it is never exported.
 */
function watcher(cg: string): string {
  return [
    `read -r ${cg} <&3;`,
    '(trap "" TERM INT HUP; read _ <&3;',
    's=$$; read -r me _ 2>/dev/null </proc/self/stat; i=0;',
    `[ -n "$${cg}" ] && { echo "$me" 2>/dev/null >"$\{${cg}%/*}/cgroup.procs"; echo 1 2>/dev/null >"$${cg}/cgroup.kill"; };`,
    'while [ $i -lt 100 ]; do f=;',
    'for p in /proc/[0-9]*; do read -r l 2>/dev/null <"$p/stat" || continue; set -- ${l##*") "};',
    '[ "$4" = "$s" ] && [ "${p#/proc/}" != "$me" ] && [ "$1" != Z ] && [ "$1" != X ] && kill -KILL "${p#/proc/}" 2>/dev/null && f=1;',
    'done; [ -z "$f" ] && break; i=$((i + 1)); sleep 0.05;',
    `done; [ -n "$${cg}" ] && while [ $i -lt 200 ] && ! rmdir "$${cg}" 2>/dev/null; do i=$((i + 1)); sleep 0.05; done;`,
    'kill -KILL 0) & exec 3<&-;',
  ].join(' ');
}

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
function exactGuard(n: string, v: string, cg: string): string {
  return [
    watcher(cg),
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
 * The shell's script and parameters that start `argv` with `env`: the watcher and the words as they
 * are, or exactGuard when a word or a variable's value has bytes that are not UTF-8 (from this
 * process's own command line and environment: exact-bytes.ts). A variable whose name /bin/sh
 * cannot export keeps Node's decoding (docs/cli.md).
 */
export function guardScript(argv: readonly string[], env: NodeJS.ProcessEnv, own: { words?: Buffer[]; values?: Map<string, Buffer> } = {}): string[] {
  const words = own.words ?? originalWords(argv);
  const values = [...(own.values ?? originalValues(env))].filter(([name]) => SHELL_NAME.test(name));
  const asIs = words.map((bytes, i) => bytes.equals(Buffer.from(argv[i]!, 'utf8')));
  const cg = unusedName('leasehold_cgroup', env);
  if (values.length === 0 && asIs.every(Boolean)) return [`${watcher(cg)} exec "$@"`, 'leasehold-guard', ...argv];
  return [
    exactGuard(unusedName('leasehold_n', env), unusedName('leasehold_v', env), cg),
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

export class ChildProcessGroup {
  private readonly child: ChildProcess;
  /** CMD's PID, which is also its session's ID and its process group's. */
  readonly pid: number;
  readonly exited: Promise<ExitResult>;
  private done = false;

  /**
   * `cgroup`: CMD's own, or null to track its session alone. A cgroup the shell cannot be moved
   * into (a parent with controllers that forbid it) is removed, and the session tracked alone:
   * `cgroup` then says null.
   */
  constructor(
    argv: string[],
    env: NodeJS.ProcessEnv,
    private cgroup: CommandCgroup | null = null,
  ) {
    const [command, ...args] = argv;
    if (!command) throw new CommandStartError('no command given: use leasehold run [flags] -- CMD [ARGS...]');
    const [script, ...params] = guardScript([command, ...args], env);
    this.child = spawn('/bin/sh', ['-c', script!, ...params], {
      detached: true, // setsid(): the child leads a new session and a new process group (sid = pgid = pid)
      stdio: ['inherit', 'inherit', 'inherit', 'pipe'],
      env,
    });
    if (this.child.pid === undefined) throw new CommandStartError(`cannot start ${command}`);
    this.pid = this.child.pid;
    const pipe = this.child.stdio[3] as unknown as { write: (line: string) => void; unref?: () => void };
    if (cgroup) {
      try {
        writeFileSync(join(cgroup.dir, 'cgroup.procs'), String(this.pid));
      } catch {
        cgroup.remove();
        this.cgroup = null;
      }
    }
    // The shell waits for this line before it starts anything: it is in the cgroup by now.
    pipe.write(`${this.cgroup?.dir ?? ''}\n`);
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => {
        this.done = true;
        // Whatever the command left behind dies now, before anything follows its exit (a
        // release, a restart): the watcher would kill it too, but only once it is scheduled.
        this.signal('SIGKILL');
        // Closing our end tells the watcher to kill anything the command left behind.
        this.child.stdio[3]?.destroy();
        resolve({ code, signal });
      }),
    );
    // Keep the pipe from holding leasehold's event loop open once the child is gone.
    pipe.unref?.();
  }

  /** What is tracked: CMD's cgroup (and its session), or its session alone. */
  get tracking(): { kind: 'cgroup'; dir: string } | { kind: 'session' } {
    return this.cgroup ? { kind: 'cgroup', dir: this.cgroup.dir } : { kind: 'session' };
  }

  /** Whether a process of CMD's session or cgroup lives. */
  private alive(): boolean {
    return sessionAlive(this.pid) || (this.cgroup?.alive() ?? false);
  }

  get running(): boolean {
    return !this.done;
  }

  /** How the command ended, or null when it has not within `withinMs` (a process the kernel cannot kill at once). */
  async exitWithin(withinMs: number): Promise<ExitResult | null> {
    if (withinMs <= 0) return this.done ? this.exited : null;
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([this.exited, new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), withinMs)))]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * After the command's exit: true once no process of its session is left alive, false when
   * `withinMs` passes first (or the command itself has not exited by then). Its exit sent the
   * session SIGKILL, but a process the kernel cannot kill at once (in uninterruptible sleep: a
   * hung disk or network filesystem) lives on, with its files and locks, until the kernel lets
   * it go: the command's work is not over before. The SIGKILL is sent again at each look, for a
   * process forked meanwhile.
   */
  async emptied(withinMs: number): Promise<boolean> {
    const deadline = performance.now() + withinMs;
    if (!(await this.exitWithin(withinMs))) return false;
    for (let pauseMs = 2; ; pauseMs = Math.min(2 * pauseMs, 100)) {
      if (!this.alive()) {
        this.cgroup?.remove();
        return true;
      }
      this.signal('SIGKILL');
      const left = deadline - performance.now();
      if (left <= 0) return false;
      await new Promise((resolve) => setTimeout(resolve, Math.min(pauseMs, left)));
    }
  }

  /**
   * leasehold leaves before the command exited (it outlived SIGKILL past the bound): Node would
   * wait for its exit before letting leasehold's own process end, so its handle stops counting;
   * closing our end of the pipe sets the watcher on the session (its SIGKILL, sent again).
   */
  letGo(): void {
    if (this.done) return;
    this.child.stdio[3]?.destroy();
    this.child.unref();
  }

  /**
   * Sends `signal` to every process of the session (session-processes.ts) and of the cgroup
   * (SIGKILL by cgroup.kill, which no fork under way escapes); false when none is left.
   */
  signal(signal: NodeJS.Signals): boolean {
    let reached = signalSession(this.pid, signal);
    if (!this.cgroup) return reached;
    if (signal === 'SIGKILL' && this.cgroup.alive()) {
      this.cgroup.kill();
      return true;
    }
    for (const pid of this.cgroup.pids()) {
      try {
        process.kill(pid, signal);
        reached = true;
      } catch {
        // gone meanwhile
      }
    }
    return reached;
  }

  /**
   * SIGTERM to the session, SIGKILL after `graceMs` if the command has not exited; then waits
   * at most `killWaitMs` more for it to exit. Resolves with how it ended (null: it has not, a
   * process the kernel cannot kill at once), and when SIGKILL was sent (performance.now()), null
   * when it was not needed.
   */
  async terminate(graceMs: number, killWaitMs: number): Promise<{ result: ExitResult | null; killedAt: number | null }> {
    if (this.done) return { result: await this.exited, killedAt: null };
    // The grace counts from now, not from after the SIGTERM: sending it reads the session's
    // processes, which takes a few ms on a busy machine, and the SIGKILL is due at a fixed moment.
    const killAt = performance.now() + graceMs;
    this.signal('SIGTERM');
    let result = await this.exitWithin(Math.max(0, killAt - performance.now()));
    let killedAt: number | null = null;
    if (result === null) {
      killedAt = performance.now();
      this.signal('SIGKILL');
      result = await this.exitWithin(killWaitMs);
    }
    // The command is gone (or cannot be killed yet); make sure nothing it started survives either.
    this.signal('SIGKILL');
    return { result, killedAt };
  }
}
