import { it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI_DOC, END, START, commandTable, renderBlock, replaceBlock } from './cli-reference.js';
import { allCommands } from '../cmd/commands.js';
import { envName } from '../cmd/flag-table.js';
import { REPO } from '../test/support/cli.js';

it('replaces only the block between the markers, and refuses a document without them', () => {
  const doc = ['# Title', 'prose', START, 'old', END, 'more prose'].join('\n');
  assert.equal(replaceBlock(doc, `${START}\nnew\n${END}`), ['# Title', 'prose', START, 'new', END, 'more prose'].join('\n'));
  assert.throws(() => replaceBlock('# Title\n', 'x'), /needs one line <!-- flags:start -->/);
  assert.throws(() => replaceBlock([END, START].join('\n'), 'x'), /needs one line/);
});

it('a row per flag: its variable, its default, its meaning with | escaped', () => {
  const table = commandTable({
    name: 'demo',
    description: 'Does a | b',
    flags: { 'log-format': { type: 'string', default: 'json', describe: 'json | text' }, once: { type: 'boolean', describe: 'Once' } },
  });
  assert.match(table, /^### `leasehold demo \[flags\]`\n\nDoes a \\\| b\n/);
  assert.match(table, /\| `--log-format` \| `LEASEHOLD_LOG_FORMAT` \| `json` \| json \\\| text \|/);
  assert.match(table, /\| `--once` \| `LEASEHOLD_ONCE` \| `false` \| Once \|/);
});

it('docs/cli.md lists every flag of every command with its variable, as the tables say', async () => {
  const commands = await allCommands();
  const doc = readFileSync(join(REPO, CLI_DOC), 'utf8');
  assert.ok(doc.includes(renderBlock(commands)), `${CLI_DOC} is out of date: run npm run cli:reference`);
  for (const c of commands) for (const flag of Object.keys(c.flags)) assert.ok(doc.includes(`| \`--${flag}\` | \`${envName(flag)}\` |`), `${c.name} --${flag}`);
});
