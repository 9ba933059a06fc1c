/**
 * The flags of a command, read from its yargs builder. The LEASEHOLD_<FLAG> variables are read
 * in cmd/env-variables.ts, which loads no yargs (the sidecar's fast path uses it); re-exported
 * here for the yargs path.
 */
import yargs, { type Argv } from 'yargs';

export { applyEnvFlags, checkBooleans, childEnvironment, POSTGRES_CREDENTIAL_VARIABLES } from './env-variables.js';

/**
 * The parsed flags of a command, typed from its yargs builder: each flag is written once, in
 * the builder, and its type, its LEASEHOLD_<FLAG> variable and its checks all follow from there.
 */
export type FlagsOf<B extends (y: Argv) => Argv<unknown>> = ReturnType<B> extends Argv<infer T> ? T : never;

type Built = { getOptions(): { key: Record<string, unknown>; boolean: string[] } };

/** The flags a command's builder defines, less yargs' own --help and --version. */
export function flagsOf(builder: (y: Argv) => Argv<unknown>): string[] {
  const built = builder(yargs([])) as unknown as Built;
  return Object.keys(built.getOptions().key).filter((k) => k !== 'help' && k !== 'version');
}

/** Which of those flags are booleans (--once, --json, --release-on-exit, ...). */
export function booleanFlagsOf(builder: (y: Argv) => Argv<unknown>): string[] {
  const built = builder(yargs([])) as unknown as Built;
  return built.getOptions().boolean.filter((k) => k !== 'help' && k !== 'version');
}
