/**
 * The commands `leasehold` dispatches, each loaded only when it runs: a sidecar loads neither
 * the operator nor the help text.
 */
import type { CommandSpec } from './flag-table.js';
import type { ParsedFlags } from './cli-parser.js';
import type { CommandContext } from './cli-io.js';

export interface LoadedCommand {
  spec: CommandSpec;
  /** Runs the command with its parsed flags; resolves to the exit status. */
  run: (flags: ParsedFlags<CommandSpec['flags']>, context: CommandContext) => Promise<number>;
}

const LOADERS = {
  sidecar: async () => {
    const m = await import('./sidecar-command.js');
    return { spec: m.SIDECAR_COMMAND, run: m.runSidecar };
  },
  status: async () => {
    const m = await import('./status-command.js');
    return { spec: m.STATUS_COMMAND, run: m.runStatus };
  },
  run: async () => {
    const m = await import('./run-command.js');
    return { spec: m.RUN_COMMAND, run: m.runRun };
  },
  operator: async () => {
    const m = await import('./operator-command.js');
    return { spec: m.OPERATOR_COMMAND, run: m.runOperator };
  },
} as const;

export const COMMAND_NAMES = Object.keys(LOADERS) as (keyof typeof LOADERS)[];

/** The command `name` names, or undefined for none. */
export async function loadCommand(name: string): Promise<LoadedCommand | undefined> {
  if (!Object.hasOwn(LOADERS, name)) return undefined;
  return (await LOADERS[name as keyof typeof LOADERS]()) as unknown as LoadedCommand;
}

/** Every command's spec, in the order help lists them (for help and the flag reference). */
export async function allCommands(): Promise<CommandSpec[]> {
  return Promise.all(COMMAND_NAMES.map(async (name) => (await LOADERS[name]()).spec));
}
