import { accessSync, constants as fsConstants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import { CommandStartError } from '../errors.js';

/** Finds `command` as the shell would, or throws CommandStartError with one clear line. */
export function resolveExecutable(command: string, path = process.env.PATH ?? ''): string {
  const candidates = command.includes('/')
    ? [command]
    : path
        .split(delimiter)
        .filter(Boolean)
        .map((d) => join(d, command));
  for (const c of candidates) {
    try {
      if (!statSync(c).isFile()) continue;
      accessSync(c, fsConstants.X_OK);
      return isAbsolute(c) || command.includes('/') ? c : join(process.cwd(), c);
    } catch {
      // try the next one
    }
  }
  if (command.includes('/')) {
    let why = 'does not exist';
    try {
      why = statSync(command).isFile() ? 'is not executable' : 'is not a file';
    } catch {
      // stays "does not exist"
    }
    throw new CommandStartError(`cannot run ${JSON.stringify(command)}: it ${why}`);
  }
  throw new CommandStartError(`cannot run ${JSON.stringify(command)}: not found in PATH`);
}
