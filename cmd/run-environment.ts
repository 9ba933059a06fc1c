/**
 * The environment of `leasehold run`'s command. The run hands its command the description of
 * the parent's term: LEASEHOLD_FENCING_TOKEN, LEASEHOLD_LEASE, LEASEHOLD_IDENTITY,
 * LEASEHOLD_STATUS_DIR. A leasehold started inside that command must not campaign as its parent
 * (same lease, same identity: two leaders), so when LEASEHOLD_FENCING_TOKEN is set those three
 * are not read as flags (cmd/cli-parser.ts), except by `status`, which writes nothing: there
 * LEASEHOLD_LEASE names the parent's lease and LEASEHOLD_STATUS_DIR the parent's candidate. The
 * parent also strips its own LEASEHOLD_<FLAG> configuration from the command's environment
 * (childEnvironment), so nothing else of its campaign is inherited either.
 */
import { envName } from './flag-table.js';

/** The variables `leasehold run` sets for its command; they describe the parent's term. */
export const TERM_VARIABLES = ['LEASEHOLD_FENCING_TOKEN', 'LEASEHOLD_LEASE', 'LEASEHOLD_IDENTITY', 'LEASEHOLD_STATUS_DIR'] as const;

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

/**
 * The environment of a `--health-exec` check (sidecar and run): the sidecar's, less what
 * childEnvironment strips for `run`'s command (its LEASEHOLD_<FLAG> configuration, among which
 * LEASEHOLD_POSTGRES_URL, and for the postgres backend its database credentials), and less the
 * term variables a parent `leasehold run` set: a check of the app has no use for the lease
 * store's secrets, and runs whatever the app's check script runs.
 */
export function probeEnvironment(env: NodeJS.ProcessEnv, flags: readonly string[], backend: string): Record<string, string> {
  const out: Record<string, string> = {};
  const noTerm = Object.fromEntries(TERM_VARIABLES.map((name) => [name, undefined])) as Record<(typeof TERM_VARIABLES)[number], undefined>;
  for (const [name, value] of Object.entries(childEnvironment(env, flags, noTerm, backend))) if (value !== undefined) out[name] = value;
  return out;
}
