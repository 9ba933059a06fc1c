/**
 * `leasehold run` without yargs: a run supervises its command for as long as it runs, so it too
 * keeps no CLI parser. The same rule as cmd/sidecar-fast-path.ts (whose plainFlags it uses): the
 * same table (RUN_OPTIONS), variables and checks (resolveRun) as the yargs path; anything it is
 * not sure of, including a missing `--` or command, is left to yargs. cmd/leasehold.ts imports it
 * only for `run`, so the sidecar does not load the runner.
 */
import { RUN_OPTIONS, resolveRun, type RunArgs } from './run-command.js';
import { plainFlags } from './sidecar-fast-path.js';

/** The flags `run` reads, in the order yargs lists them: its command's environment drops their variables. */
export const RUN_FLAGS = Object.keys(RUN_OPTIONS);

export function runFastPath(argv: readonly string[], env: NodeJS.ProcessEnv): { args: RunArgs; settings: ReturnType<typeof resolveRun> } | undefined {
  const args = plainFlags('run', RUN_OPTIONS, argv, env, true) as RunArgs | undefined;
  if (!args) return undefined;
  try {
    return { args, settings: resolveRun(args) };
  } catch {
    return undefined;
  }
}
