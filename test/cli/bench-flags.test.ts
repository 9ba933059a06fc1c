import { after, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { REPO, start, tempDir } from '../support/cli.js';

/**
 * The bench's and the chaos script's flags (bench/cli-args.ts), on a real process: read by the
 * CLI's parser, a mistyped one is refused with one line and exit 2 instead of silently taking
 * its default.
 */
const dir = tempDir();
after(dir.cleanup);
const script = join(dir.path, 'options.mjs');
writeFileSync(
  script,
  `const { option, numberOption } = await import(${JSON.stringify(pathToFileURL(join(REPO, 'bench/cli-args.ts')).href)});
const { benchOptions } = await import(${JSON.stringify(pathToFileURL(join(REPO, 'bench/options.ts')).href)});
const { seconds, shardIdleSeconds, shardSizes, shardMembers, shardStores } = benchOptions(process.argv.slice(2));
process.stdout.write(JSON.stringify([numberOption('trials', 20), option('only', ''), option('seed', '1'), seconds ?? null, shardIdleSeconds, shardSizes, shardMembers, shardStores]));\n`,
);

async function options(args: string[]) {
  const p = start(process.execPath, ['--import', 'tsx', script, ...args]);
  const r = await p.exited;
  return { code: r.code, stdout: p.stdout(), stderr: p.stderr() };
}

it('takes its flags, and each default when left out', { timeout: 60_000 }, async () => {
  const r = await options([
    '--trials',
    '3',
    '--only=sqlite',
    '--no-write',
    '--seconds',
    '1.5',
    '--shard-sizes',
    '64',
    '--shard-members',
    '2,5',
    '--shard-stores',
    'kubernetes,sqlite',
    '--shard-idle-seconds',
    '12',
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), [3, 'sqlite', '1', 1.5, 12, [64], [2, 5], ['sqlite', 'kubernetes']]);
  const d = await options([]);
  assert.equal(d.code, 0, d.stderr);
  assert.deepEqual(JSON.parse(d.stdout), [20, '', '1', null, 30, [16, 256, 1024, 4096], [2, 8, 32], ['sqlite', 'postgres', 'kubernetes']]);
});

for (const [name, args, message] of [
  ['a mistyped flag', ['--trails', '3'], /^bench: unknown flag --trails \(the flags are --only, --list, --splice, .*\)$/],
  ['a count that is no number', ['--trials', 'many'], /^bench: invalid --trials "many": must be a number such as 20$/],
  // A zero count or window left a phase with no sample: a stack trace after the build, not a refusal.
  ['a count of zero', ['--trials', '0'], /^bench: invalid --trials "0": must be above 0$/],
  ['a window that is no number', ['--seconds', 'abc'], /^bench: invalid --seconds "abc": must be a number such as 3$/],
  ['a window of zero seconds', ['--seconds=0'], /^bench: invalid --seconds "0": must be above 0$/],
  ['a flag given twice', ['--only', 'sqlite', '--only', 'postgres'], /^bench: invalid --only \["sqlite","postgres"\]: given more than once/],
  // The shards part grows one group through its member counts: out of order, it would have to shrink it.
  [
    'member counts out of order',
    ['--shard-members', '8,2'],
    /^bench: invalid --shard-members "8,2": must be whole numbers from 2 to 60, ascending, comma-separated, such as 2,8,32$/,
  ],
  ["one member: nobody to take a leaver's shards", ['--shard-members', '1,8'], /^bench: invalid --shard-members "1,8": must be whole numbers from 2 to 60/],
  ['a shard count past the limit', ['--shard-sizes', '16,5000'], /^bench: invalid --shard-sizes "16,5000": must be whole numbers from 1 to 4096, ascending/],
  [
    'a store that is none',
    ['--shard-stores', 'sqlite,etcd'],
    /^bench: invalid --shard-stores "sqlite,etcd": must name each of sqlite, postgres, kubernetes at most once, comma-separated$/,
  ],
] as const) {
  it(`refuses ${name} with one line and exit 2`, { timeout: 60_000 }, async () => {
    const r = await options([...args]);
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.stdout, '');
    const lines = r.stderr.split('\n').filter(Boolean);
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0]!, message);
  });
}
