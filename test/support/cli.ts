import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** Tests run the built CLI, the artifact users get (scripts/test.sh builds it first). */
export const CLI = join(REPO, 'dist/cmd/leasehold.js');
/**
 * Node flags the CLI runs with in tests: the image's ENTRYPOINT flags (Dockerfile), `--jitless`
 * (no JIT: less memory, no writable-and-executable pages), as each Node version takes it:
 * - 24 and later (the image's): `--jitless --optimize-for-size --max-semi-space-size=1`, the
 *   last two for memory (they reject `--no-expose-wasm`);
 * - 22: none. There --jitless also turns off WebAssembly, and `import 'node:http'` loads
 *   undici's WebAssembly parser, so the CLI would crash;
 * - 20 (the engines floor): with `--no-expose-wasm`, or Node prints a warning on stderr.
 */
export const NODE_FLAGS = jitlessFlags(process.versions.node);

export function jitlessFlags(nodeVersion: string): string[] {
  const major = Number(nodeVersion.split('.')[0]);
  if (major === 22) return [];
  return major < 22 ? ['--jitless', '--no-expose-wasm'] : ['--jitless', '--optimize-for-size', '--max-semi-space-size=1'];
}

export function tempDir(prefix = 'leasehold-test-'): { path: string; cleanup: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

export interface Proc {
  child: ChildProcess;
  pid: number;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill: (signal?: NodeJS.Signals) => void;
}

/** Starts a real OS process and captures its output. */
export function start(command: string, args: string[], env: NodeJS.ProcessEnv = {}, cwd = REPO): Proc {
  // NODE_TEST_CONTEXT would make a spawned node process act as a test-runner child.
  const { NODE_TEST_CONTEXT: _, ...inherited } = process.env;
  const child = spawn(command, args, { cwd, env: { ...inherited, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => child.once('exit', (code, signal) => res({ code, signal })));
  return {
    child,
    pid: child.pid!,
    stdout: () => out,
    stderr: () => err,
    exited,
    kill: (signal = 'SIGTERM') => {
      try {
        child.kill(signal);
      } catch {
        // already gone
      }
    },
  };
}

export function startCli(args: string[], env: NodeJS.ProcessEnv = {}, cwd = REPO): Proc {
  return start(process.execPath, [...NODE_FLAGS, CLI, ...args], env, cwd);
}

/** Runs the CLI to completion. */
export async function runCli(args: string[], env: NodeJS.ProcessEnv = {}, cwd = REPO, timeoutMs = 30_000) {
  const p = startCli(args, env, cwd);
  const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
  const r = await p.exited;
  clearTimeout(timer);
  return { ...r, stdout: p.stdout(), stderr: p.stderr() };
}

/** `leasehold run --once` of `command` on the SQLite file `db`, as `identity`, to completion. */
export function runOnce(db: string, lease: string, identity: string, flags: string[], command: string[]) {
  return runCli(['run', '--once', '--db', db, '--lease', lease, '--identity', identity, ...flags, '--', ...command]);
}

/** Polls `check` until it returns a value other than undefined/false, or throws after timeoutMs. */
export async function waitFor<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs: number,
  everyMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * The PID a shell wrote with `echo $! > file`, once the line is whole; undefined before then.
 * The shell creates the file (empty) before echo writes to it: read in between, it holds
 * nothing, and Number('') would be 0, a PID no process has.
 */
export function pidWritten(file: string): number | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined; // not created yet
  }
  return /^[1-9]\d*\n$/.test(text) ? Number(text) : undefined;
}

/** True while the process exists and is not a zombie (killed, waiting to be reaped). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}
