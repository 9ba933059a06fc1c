/**
 * What a command takes from its process, handed to main() rather than read from `process`: its
 * output streams, the shutdown signals it stops on, and the exit at once a second signal asks
 * for. The bin (cmd/leasehold.ts) hands the process's own (processIo); a test hands its own and
 * reads what was written. The working directory is the process's: the store, the status files
 * and `run`'s command open relative paths through the OS, as they always have.
 */
import { safeWriter } from '../src/log.js';

/** The shutdown signals: SIGTERM, SIGINT and SIGHUP. */
export type ShutdownSignal = 'SIGTERM' | 'SIGINT' | 'SIGHUP';

/** Where the shutdown signals come from: `process` itself, or an EventEmitter in a test. */
export interface SignalSource {
  on(signal: ShutdownSignal, listener: () => void): unknown;
  off(signal: ShutdownSignal, listener: () => void): unknown;
}

export interface CliIo {
  /** Command output: status's report and --watch lines, --help, --version. */
  stdout: (text: string) => void;
  /** The refusal line, notices, and the logs (one JSON or text line each). */
  stderr: (text: string) => void;
  signals: SignalSource;
  /** Ends at once with `code`: a second signal during shutdown (128 + its number). */
  exit: (code: number) => never;
}

/** The process's own: what the bin runs main() with. */
export function processIo(): CliIo {
  return {
    stdout: (text) => void process.stdout.write(text),
    // Never throws: with its reader gone (a closed pipe), logging stops and the sidecar carries on.
    stderr: safeWriter(process.stderr),
    signals: process,
    exit: (code) => process.exit(code),
  };
}

/** What main() hands a command besides its flags: the environment it was given, and its io. */
export interface CommandContext {
  readonly env: NodeJS.ProcessEnv;
  readonly io: CliIo;
}
