/**
 * `--help`, written from the command tables (cmd/commands.ts): each flag with its meaning, its
 * default and its LEASEHOLD_<FLAG> variable. Loaded only for --help.
 */
import { allCommands, loadCommand } from './commands.js';
import { defaultOf, envName, type CommandSpec, type FlagSpec } from './flag-table.js';

const VARIABLES = `Every flag can also be set as LEASEHOLD_<FLAG> (--lease-duration as LEASEHOLD_LEASE_DURATION); the command line wins, and each command reads only its own flags' variables. Boolean flags and variables take true or false; an empty value is bad input (leave the flag out, or unset its variable, for its default).`;
const EXIT_STATUS = `Exit status: 0 done (status: the lease exists; run --skip-if-ran-within: skipped); 1 a failure (status: no such lease); 2 bad input, one line, nothing written; 3 status: the store did not answer in time or refused the connection; run: the command's status, 75 if leadership was lost first (--once), 124 not elected within --try, 127 the command cannot start; 128 + n on a second signal during shutdown.`;
const OPERATOR_EXIT_STATUS = `Exit status: 0 stopped by SIGTERM or SIGINT; 1 a failure (the API server or the Secret unusable); 2 bad input, one line, nothing written.`;

const WIDTH = 110;

/** `text` in lines of at most `width` characters, each after `indent` spaces but the first. */
function wrap(text: string, width: number, indent: number): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  lines.push(line);
  return lines.join(`\n${' '.repeat(indent)}`);
}

/** The flags, then --help and --version, which have no variable. */
function flagLines(flags: Readonly<Record<string, FlagSpec>>): string {
  const rows: [string, string][] = Object.entries(flags).map(([flag, spec]) => {
    const dflt = defaultOf(spec);
    return [flag, `${spec.describe} [${dflt === undefined ? '' : `default: ${dflt}; `}${envName(flag)}]`];
  });
  rows.push(['help', 'Show this help'], ['version', "Show leasehold's version"]);
  const column = Math.max(...rows.map(([n]) => n.length)) + 6;
  return rows.map(([flag, text]) => `  --${flag.padEnd(column - 4)}${wrap(text, WIDTH - column, column)}`).join('\n');
}

export function commandHelp(c: CommandSpec): string {
  const usage = c.usage ?? `leasehold ${c.name} [flags]`;
  const exit = c.name === 'operator' ? OPERATOR_EXIT_STATUS : EXIT_STATUS;
  return `${usage}\n\n${wrap(c.description, WIDTH, 0)}\n\nFlags:\n${flagLines(c.flags)}\n\n${wrap(VARIABLES, WIDTH, 0)}\n\n${wrap(exit, WIDTH, 0)}\n`;
}

async function overallHelp(): Promise<string> {
  const commands = await allCommands();
  const column = Math.max(...commands.map((c) => c.name.length)) + 4;
  const list = commands.map((c) => `  ${c.name.padEnd(column - 2)}${wrap(c.description, WIDTH - column, column)}`).join('\n');
  return `leasehold <command> [flags]\n\nCommands:\n${list}\n\nleasehold <command> --help lists its flags; leasehold --version shows the version.\n\n${wrap(VARIABLES, WIDTH, 0)}\n\n${wrap(EXIT_STATUS, WIDTH, 0)}\n`;
}

/** The help of the command `name` names, or the overall help. */
export async function helpText(name: string | undefined): Promise<string> {
  const command = name === undefined ? undefined : await loadCommand(name);
  return command ? commandHelp(command.spec) : overallHelp();
}
