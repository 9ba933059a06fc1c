/**
 * LEASEHOLD_<FLAG> environment variables, e.g. LEASEHOLD_LEASE_DURATION=30s for
 * --lease-duration. Done here rather than with yargs' .env(), which under .strict() rejects
 * every unrelated LEASEHOLD_* variable, including the LEASEHOLD_FENCING_TOKEN that
 * `leasehold run` hands its child. A flag given on the command line wins over the variable.
 */
export const ENV_FLAGS = [
  'backend', 'lease', 'db', 'namespace', 'kubeconfig', 'identity',
  'lease-duration', 'renew-deadline', 'retry-period', 'release-on-exit',
  'log-format', 'log-level', 'status-dir', 'listen', 'ready-when',
  'once', 'grace-period', 'json', 'pod-label',
] as const;

/** Returns argv with `--flag=value` inserted after the command word for each variable set. */
export function applyEnvFlags(argv: string[], env: NodeJS.ProcessEnv): string[] {
  if (argv.length === 0 || argv[0]!.startsWith('-')) return argv;
  const sep = argv.indexOf('--');
  const own = sep >= 0 ? argv.slice(0, sep) : argv;
  const given = new Set(own.filter((a) => a.startsWith('--')).map((a) => a.slice(2).split('=')[0]!.replace(/^no-/, '')));
  const extra: string[] = [];
  for (const flag of ENV_FLAGS) {
    const value = env[`LEASEHOLD_${flag.toUpperCase().replace(/-/g, '_')}`];
    if (value !== undefined && !given.has(flag)) extra.push(`--${flag}=${value}`);
  }
  return [argv[0]!, ...extra, ...argv.slice(1)];
}
