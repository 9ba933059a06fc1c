/**
 * Structured logs on stderr: one JSON object per line (default) or `time LEVEL msg k=v` text.
 * stdout stays free for command output (`leasehold status`, and the child of `leasehold run`).
 * Nothing here ever logs credentials: callers pass identities, lease names and reasons only.
 */
import { escapeForTerminal, jsonForTerminal } from './util/escape-control.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFormat = 'json' | 'text';
export type LogFields = Record<string, string | number | boolean | null | undefined>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface LoggerOptions {
  format?: LogFormat;
  level?: LogLevel;
  /** Fields added to every line, e.g. the lease and identity. */
  base?: LogFields;
  write?: (line: string) => void;
  now?: () => Date;
}

/**
 * Writes to a stream (stderr), never throwing and never crashing the process: when the reader
 * goes away (a closed pipe: EPIPE), writing stops and the elector carries on, so it can still
 * step down, write "not leader" and release. A write error is reported by the stream as an
 * 'error' event, which would kill the process if nothing listened.
 */
export function safeWriter(stream: NodeJS.WriteStream): (text: string) => void {
  let broken = false;
  if (stream.listenerCount('error') === 0) stream.on('error', () => void (broken = true));
  return (text) => {
    if (broken || stream.destroyed) return;
    try {
      stream.write(text);
    } catch {
      broken = true;
    }
  };
}

function stderrWriter(): (line: string) => void {
  const write = safeWriter(process.stderr);
  return (line) => write(line + '\n');
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const format = opts.format ?? 'json';
  const min = ORDER[opts.level ?? 'info'];
  const write = opts.write ?? stderrWriter();
  const now = opts.now ?? (() => new Date());
  const emit = (level: LogLevel, msg: string, fields?: LogFields) => {
    if (ORDER[level] < min) return;
    const all = { ...opts.base, ...fields };
    // Fields carry values read from a store (a holder anyone who can write it chose): JSON's own
    // escapes alone leave C1 controls and bidi overrides raw, which a terminal acts on.
    if (format === 'json') {
      write(jsonForTerminal({ time: now().toISOString(), level, msg, ...all }));
      return;
    }
    const kv = Object.entries(all)
      .filter(([, v]) => v !== undefined)
      // Quoted (and so escaped) when it holds spaces, quotes or what a terminal acts on: one line, no terminal escapes.
      .map(([k, v]) => `${k}=${typeof v === 'string' && (/[\s"=]/.test(v) || escapeForTerminal(v) !== v) ? jsonForTerminal(v) : String(v)}`)
      .join(' ');
    write(`${now().toISOString()} ${level.toUpperCase().padEnd(5)} ${escapeForTerminal(msg)}${kv ? ' ' + kv : ''}`);
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
  };
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

const LEVELS = ['debug', 'info', 'warn', 'error'] as const;
const guarded = new WeakSet<Logger>();

/** True if `log` has the four methods a Logger needs: what the library's `log` option is checked against. */
export function isLogger(log: unknown): log is Logger {
  return typeof log === 'object' && log !== null && LEVELS.every((level) => typeof (log as Record<string, unknown>)[level] === 'function');
}

/**
 * A logger handed in by an app, made harmless: a method that throws, or returns a promise that
 * rejects, is ignored. Logging happens in the middle of the election (just before a listener
 * hears it leads, between a renewal and its bookkeeping): a throw there would skip that step
 * while the lease is still renewed, and a rejection would end the process as unhandled.
 */
export function guardedLogger(log: Logger): Logger {
  if (guarded.has(log)) return log;
  const call = (level: LogLevel) => (msg: string, fields?: LogFields) => {
    try {
      const result: unknown = log[level](msg, fields);
      if (typeof (result as PromiseLike<unknown> | undefined)?.then === 'function') (result as PromiseLike<unknown>).then(undefined, () => {});
    } catch {
      // The logger is the app's: its failure is not the election's.
    }
  };
  const safe: Logger = { debug: call('debug'), info: call('info'), warn: call('warn'), error: call('error') };
  guarded.add(safe);
  return safe;
}
