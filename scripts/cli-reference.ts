/**
 * Writes the flag reference of docs/cli.md, between its `<!-- flags:start -->` and
 * `<!-- flags:end -->` lines, from the command tables (cmd/commands.ts): one table per command,
 * each flag with its LEASEHOLD_<FLAG> variable, its default and its meaning. The prose around
 * the block is left as it is. `--check` fails when the block is out of date (npm run lint).
 *   node --import tsx scripts/cli-reference.ts [--check]
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { allCommands } from '../cmd/commands.js';
import { defaultOf, envName, type CommandSpec } from '../cmd/flag-table.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const CLI_DOC = 'docs/cli.md';
export const START = '<!-- flags:start -->';
export const END = '<!-- flags:end -->';

/** Text for a Markdown table cell: a `|` would end the cell. */
const cell = (text: string) => text.replace(/\|/g, '\\|');

/** One command's table. */
export function commandTable(c: CommandSpec): string {
  const usage = c.usage ?? `leasehold ${c.name} [flags]`;
  const rows = Object.entries(c.flags).map(([flag, spec]) => {
    const dflt = defaultOf(spec);
    return `| \`--${flag}\` | \`${envName(flag)}\` | ${dflt === undefined ? '' : `\`${cell(dflt)}\``} | ${cell(spec.describe)} |`;
  });
  return [`### \`${usage}\``, '', cell(c.description), '', '| flag | variable | default | meaning |', '| --- | --- | --- | --- |', ...rows].join('\n');
}

/** The generated block, markers included. */
export function renderBlock(commands: readonly CommandSpec[]): string {
  const note = `<!-- Generated from the command tables by scripts/cli-reference.ts (npm run cli:reference); edit the tables, not this block. -->`;
  return [START, note, '', ...commands.map(commandTable).flatMap((t) => [t, '']), END].join('\n');
}

/** `doc` with its block replaced by `block`; throws when the markers are not there once each, in order. */
export function replaceBlock(doc: string, block: string): string {
  const lines = doc.split('\n');
  const start = lines.indexOf(START);
  const end = lines.indexOf(END);
  if (start < 0 || end < start || lines.lastIndexOf(START) !== start || lines.lastIndexOf(END) !== end) {
    throw new Error(`${CLI_DOC} needs one line ${START} and, after it, one line ${END}`);
  }
  return [...lines.slice(0, start), block, ...lines.slice(end + 1)].join('\n');
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const path = join(REPO, CLI_DOC);
  const have = readFileSync(path, 'utf8');
  const want = replaceBlock(have, renderBlock(await allCommands()));
  if (process.argv.includes('--check')) {
    if (have !== want) {
      process.stderr.write(`${CLI_DOC}: the flag reference is out of date: run npm run cli:reference\n`);
      process.exitCode = 1;
    }
  } else {
    writeFileSync(path, want);
    process.stdout.write(`wrote ${path}\n`);
  }
}
