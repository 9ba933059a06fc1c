/**
 * The health options, their defaults (the kubelet's where it has one), and their rules, for the
 * library and, later, the CLI. Each refusal is one InvalidConfigError naming the option and the
 * rule; its `field` (`healthPeriod`, `healthHttp`) lets the CLI name its own flag.
 */
import { InvalidConfigError } from '../errors.js';
import { MAX_TIMER_MS } from '../config/duration.js';
import { quoted } from '../config/election-options.js';
import { hideCredentials } from '../util/hide-credentials.js';
import type { CounterSettings } from './health-counter.js';

/**
 * What to probe: an http:// URL (GET), a TCP port, or a command (argv), run with `env` as its
 * whole environment when given (default: this process's), so a caller can keep its own secrets
 * (a database password) from the command.
 */
export type ProbeTarget = { http: string } | { tcp: { host?: string; port: number } } | { exec: readonly string[]; env?: Readonly<Record<string, string>> };

export interface ThresholdOptions {
  /** Default 3 (the kubelet's). */
  failureThreshold?: number;
  /** Default 1 (the kubelet's). */
  successThreshold?: number;
  /** Default 30 000 ms; 0 turns the hold-down off. */
  holdDownMs?: number;
  /** Default failureThreshold. */
  notSentThreshold?: number;
}

export interface ProbeOptions extends ThresholdOptions {
  probe: ProbeTarget;
  /** Default 10 000 ms (the kubelet's periodSeconds). */
  periodMs?: number;
  /** Default 1 000 ms (the kubelet's timeoutSeconds); at most periodMs. */
  timeoutMs?: number;
  /** Default 0. */
  initialDelayMs?: number;
}

export interface ResolvedProbeOptions extends CounterSettings {
  probe: ProbeTarget;
  periodMs: number;
  timeoutMs: number;
  initialDelayMs: number;
}

export const HEALTH_DEFAULTS = {
  periodMs: 10_000,
  timeoutMs: 1_000,
  initialDelayMs: 0,
  failureThreshold: 3,
  successThreshold: 1,
  holdDownMs: 30_000,
} as const;

const DEFAULT_TCP_HOST = '127.0.0.1';

function refuse(key: string, value: unknown, rule: string): InvalidConfigError {
  const field = `health${key.charAt(0).toUpperCase()}${key.slice(1).replace(/Ms$/, '')}`;
  return new InvalidConfigError(`health.${key} ${quoted(value)} is invalid: ${rule}`, { field, rule });
}

function wholeMs(key: string, value: unknown, min: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > MAX_TIMER_MS) {
    throw refuse(key, value, `it must be a whole number of milliseconds from ${min} to 2^31 − 1`);
  }
  return value;
}

function count(key: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 1_000_000) {
    throw refuse(key, value, 'it must be a whole number from 1 to 1000000');
  }
  return value;
}

export function resolveThresholds(o: ThresholdOptions): CounterSettings {
  const failureThreshold = count('failureThreshold', o.failureThreshold ?? HEALTH_DEFAULTS.failureThreshold);
  return {
    failureThreshold,
    successThreshold: count('successThreshold', o.successThreshold ?? HEALTH_DEFAULTS.successThreshold),
    holdDownMs: wholeMs('holdDownMs', o.holdDownMs ?? HEALTH_DEFAULTS.holdDownMs, 0),
    notSentThreshold: count('notSentThreshold', o.notSentThreshold ?? failureThreshold),
  };
}

export function resolveProbeOptions(o: ProbeOptions): ResolvedProbeOptions {
  const probe = checkTarget(o.probe);
  const periodMs = wholeMs('periodMs', o.periodMs ?? HEALTH_DEFAULTS.periodMs, 1);
  const timeoutMs = wholeMs('timeoutMs', o.timeoutMs ?? HEALTH_DEFAULTS.timeoutMs, 1);
  // One probe at a time: the next is due a period after this one started.
  if (timeoutMs > periodMs) throw refuse('timeoutMs', timeoutMs, `it must be at most health.periodMs (${periodMs}): one probe at a time`);
  const initialDelayMs = wholeMs('initialDelayMs', o.initialDelayMs ?? HEALTH_DEFAULTS.initialDelayMs, 0);
  return { probe, periodMs, timeoutMs, initialDelayMs, ...resolveThresholds(o) };
}

function checkTarget(t: unknown): ProbeTarget {
  if (typeof t !== 'object' || t === null) throw refuse('probe', t, 'it must be one of { http: url }, { tcp: { host, port } }, { exec: [command, ...args] }');
  const keys = Object.keys(t).filter((k) => !(k === 'env' && 'exec' in t));
  if (keys.length !== 1 || !['http', 'tcp', 'exec'].includes(keys[0]!)) {
    throw refuse('probe', t, 'it must name exactly one of http, tcp, exec (and with exec, env)');
  }
  if ('http' in t) return { http: checkUrl(t.http) };
  if ('tcp' in t) {
    const tcp = t.tcp as { host?: unknown; port?: unknown } | null;
    const host = tcp?.host ?? DEFAULT_TCP_HOST;
    if (typeof host !== 'string' || host === '' || /[\s/]/.test(host)) throw refuse('tcp.host', host, 'it must be a host name or IP address');
    const port = tcp?.port;
    if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535)
      throw refuse('tcp.port', port, 'it must be a whole number from 1 to 65535');
    return { tcp: { host, port } };
  }
  const argv = (t as { exec: unknown }).exec;
  if (!Array.isArray(argv) || argv.length === 0 || argv.some((a) => typeof a !== 'string') || argv[0] === '') {
    throw refuse('exec', argv, 'it must be a non-empty list of strings: the command, then its arguments');
  }
  const env = (t as { env?: unknown }).env;
  if (env === undefined) return { exec: [...(argv as string[])] };
  return { exec: [...(argv as string[])], env: checkEnv(env) };
}

/**
 * exec's env: names and values as an environment can hold them (no "=" in a name, no NUL
 * anywhere). A refusal names the variable, never its value, which may be a secret.
 */
function checkEnv(env: unknown): Record<string, string> {
  const refuseEnv = (rule: string) => new InvalidConfigError(`health.env is invalid: ${rule}`, { field: 'healthEnv', rule });
  if (typeof env !== 'object' || env === null || Array.isArray(env)) throw refuseEnv('it must be an object of variable names to string values');
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (name === '' || /[=\0]/.test(name)) throw refuseEnv(`the variable name ${quoted(name)} must be non-empty, without "=" or NUL`);
    if (typeof value !== 'string' || value.includes('\0')) throw refuseEnv(`the value of ${quoted(name)} must be a string without NUL`);
    out[name] = value;
  }
  return out;
}

function checkUrl(url: unknown): string {
  // A refusal reaches logs: the URL is quoted without its credentials.
  const shown = typeof url === 'string' ? hideCredentials(url, { schemeless: true }) : url;
  let parsed: URL;
  try {
    parsed = new URL(String(url));
  } catch {
    throw refuse('http', shown, 'it must be an http:// URL to the app (http://127.0.0.1:8080/healthz)');
  }
  if (typeof url !== 'string' || parsed.protocol !== 'http:') {
    throw refuse(
      'http',
      shown,
      'it must be an http:// URL to the app (http://127.0.0.1:8080/healthz): the app is probed in its own pod or host, never through TLS',
    );
  }
  if (parsed.username || parsed.password) throw refuse('http', shown, 'it must not carry credentials');
  // The URL parser takes port 0, which nothing listens on: the candidate would stand aside forever.
  if (parsed.port === '0') throw refuse('http', shown, 'its port must be from 1 to 65535');
  return url;
}
