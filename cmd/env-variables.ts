/**
 * LEASEHOLD_<FLAG> environment variables, e.g. LEASEHOLD_LEASE_DURATION=30s for
 * --lease-duration. Done here rather than with yargs' .env(), which under .strict() rejects
 * every unrelated LEASEHOLD_* variable. A flag given on the command line wins over the variable.
 *
 * Each command reads only the variables of its own flags (derived from its yargs builder, the
 * one source of each flag), so a variable meant for another command (LEASEHOLD_ONCE for `run`)
 * never breaks this one.
 *
 * `leasehold run` hands its command the description of the parent's term:
 * LEASEHOLD_FENCING_TOKEN, LEASEHOLD_LEASE, LEASEHOLD_IDENTITY, LEASEHOLD_STATUS_DIR. A leasehold
 * started inside that command must not campaign as its parent (same lease, same identity: two
 * leaders), so when LEASEHOLD_FENCING_TOKEN is set those three are not read as flags, except by
 * `status`, which writes nothing: there LEASEHOLD_LEASE names the parent's lease and
 * LEASEHOLD_STATUS_DIR the parent's candidate. The
 * parent also strips its own LEASEHOLD_<FLAG> configuration from the command's environment
 * (childEnvironment), so nothing else of its campaign is inherited either.
 */
import { InvalidConfigError } from '../src/errors.js';

/** The variables `leasehold run` sets for its command; they describe the parent's term. */
const TERM_VARIABLES = ['LEASEHOLD_FENCING_TOKEN', 'LEASEHOLD_LEASE', 'LEASEHOLD_IDENTITY', 'LEASEHOLD_STATUS_DIR'] as const;

export function envName(flag: string): string {
  return `LEASEHOLD_${flag.toUpperCase().replace(/-/g, '_')}`;
}

/**
 * A boolean flag or variable takes only `true` or `false`: yargs reads any other word as
 * false, so `--release-on-exit=nope` would silently keep the lease at shutdown. Checks
 * `--flag=VALUE` and `--no-flag=VALUE` before `--`, in every spelling (`--releaseOnExit=`),
 * and each LEASEHOLD_<FLAG> of a boolean.
 */
export function checkBooleans(argv: string[], env: NodeJS.ProcessEnv, booleans: readonly string[]): void {
  const sep = argv.indexOf('--');
  for (const arg of sep >= 0 ? argv.slice(0, sep) : argv) {
    const eq = arg.indexOf('=');
    if (!arg.startsWith('--') || eq < 0 || !booleans.includes(flagNamed(arg))) continue;
    const value = arg.slice(eq + 1);
    if (value !== 'true' && value !== 'false') throw new InvalidConfigError(`invalid ${arg.slice(0, eq)} ${JSON.stringify(value)}: must be true or false`);
  }
  for (const flag of booleans) {
    const name = envName(flag);
    const value = env[name];
    if (value !== undefined && value !== 'true' && value !== 'false') {
      throw new InvalidConfigError(`invalid ${name} ${JSON.stringify(value)} (for --${flag}): must be true or false`);
    }
  }
}

/**
 * The one rule for empty values, on the command line and in variables alike: an empty value is
 * bad input, never a setting. Read as a setting, an empty --status-dir puts the status files in
 * the working directory and an empty --listen would have to mean something of its own, and an
 * empty variable (a template with nothing to put there) does so unseen. Left out, a flag has
 * its default. `variable`: the message is about LEASEHOLD_<FLAG>, not the flag.
 */
export function emptyValueRule(command: string, flag: string, variable = false): string {
  const fallback = variable ? 'unset the variable for the default' : 'leave the flag out for its default';
  // Only the sidecar's and run's listener has an "off".
  const off = flag === 'listen' && (command === 'sidecar' || command === 'run') ? ', or give off for no listener' : '';
  return `must be non-empty (${fallback}${off})`;
}

/**
 * The flag a command-line word names, in the table's spelling, for each spelling yargs takes:
 * `--lease-duration`, `--leaseDuration` (its camelCase alias), `--no-pod-label`, `--x=value`.
 */
export function flagNamed(arg: string): string {
  return arg
    .slice(2)
    .split('=')[0]!
    .replace(/^no-/, '')
    .replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/**
 * Returns argv with `--flag=value` inserted after the command word for each variable of that
 * command's flags that is set and whose flag the command line does not give, in any spelling.
 * `commands` maps each command word to its flags. A variable it would read that is set but
 * empty is refused (emptyValueRule).
 */
export function applyEnvFlags(argv: string[], env: NodeJS.ProcessEnv, commands: Record<string, readonly string[]>): string[] {
  const flags = argv.length > 0 ? commands[argv[0]!] : undefined;
  if (!flags) return argv;
  // `status` campaigns for nothing: inside a `run` command it looks up the parent's lease.
  const insideRun = env.LEASEHOLD_FENCING_TOKEN !== undefined && argv[0] !== 'status';
  const sep = argv.indexOf('--');
  const own = sep >= 0 ? argv.slice(0, sep) : argv;
  const given = new Set(own.filter((a) => a.startsWith('--')).map(flagNamed));
  const extra: string[] = [];
  for (const flag of flags) {
    const name = envName(flag);
    if (insideRun && (TERM_VARIABLES as readonly string[]).includes(name)) continue;
    const value = env[name];
    if (value === undefined || given.has(flag)) continue;
    if (value === '') throw new InvalidConfigError(`invalid ${name} "" (for --${flag}): ${emptyValueRule(argv[0]!, flag, true)}`);
    extra.push(`--${flag}=${value}`);
  }
  return [argv[0]!, ...extra, ...argv.slice(1)];
}

/**
 * The variables through which leasehold's PostgreSQL connection gets a secret, or a file of
 * secrets: with `--backend postgres` they were leasehold's credentials, and its command does not
 * inherit them (LEASEHOLD_POSTGRES_URL is one of its flags, stripped with the others). PGHOST,
 * PGUSER, PGDATABASE and the rest name a server, not a secret, and pass.
 */
export const POSTGRES_CREDENTIAL_VARIABLES = ['PGPASSWORD', 'PGPASSFILE', 'PGSERVICEFILE', 'PGSSLKEY'] as const;

/**
 * The environment for `leasehold run`'s command: the parent's, less its LEASEHOLD_<FLAG>
 * configuration and, for the postgres backend, its database credentials; plus the term.
 */
export function childEnvironment(
  env: NodeJS.ProcessEnv,
  flags: readonly string[],
  term: Record<(typeof TERM_VARIABLES)[number], string | undefined>,
  backend?: string,
): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...env };
  for (const flag of flags) delete out[envName(flag)];
  if (backend === 'postgres') for (const name of POSTGRES_CREDENTIAL_VARIABLES) delete out[name];
  for (const name of TERM_VARIABLES) delete out[name];
  for (const [name, value] of Object.entries(term)) if (value !== undefined) out[name] = value;
  return out;
}
