import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { originalValues, originalWords, printfFormat } from './exact-bytes.js';
import { guardScript } from './child-process-group.js';

const FFFE = Buffer.from([0xff, 0xfe]);
/** What Node makes of FFFE. */
const LOSSY = FFFE.toString('utf8');

/** What /bin/sh's printf prints for `format`, as the guard runs it (the "." keeps trailing newlines). */
function printed(format: string): Buffer {
  return spawnSync('/bin/sh', ['-c', 'v=$(printf "$1"; printf .); printf %s "${v%.}"', 'sh', format]).stdout;
}

describe('the bytes of run’s command (exact-bytes.ts)', () => {
  it('printfFormat: /bin/sh prints back every byte, printf’s own characters and a leading "-" included', () => {
    const every = Buffer.from(Array.from({ length: 255 }, (_, i) => i + 1));
    assert.deepEqual(printed(printfFormat(every)), every);
    for (const text of ['-n x', '%s %d %%', 'a\\nb\\', 'trailing\n\n', 'plain words']) {
      assert.deepEqual(printed(printfFormat(Buffer.from(text))), Buffer.from(text), JSON.stringify(text));
    }
    assert.equal(printfFormat(Buffer.from('plain words')), 'plain words', 'printable ASCII stays as it is');
  });

  it('originalWords: the last words of the command line, when they decode to the words given', () => {
    const cmdline = () => [Buffer.from('node'), Buffer.from('leasehold.js'), Buffer.from('run'), Buffer.from('--'), Buffer.from('cmd'), FFFE];
    assert.deepEqual(originalWords(['cmd', LOSSY], cmdline), [Buffer.from('cmd'), FFFE]);
    // Words that are not that tail (argv changed since, or given another way) keep their UTF-8.
    assert.deepEqual(originalWords(['other', LOSSY], cmdline), [Buffer.from('other'), Buffer.from(LOSSY)]);
    // All UTF-8: the command line is not even read.
    assert.deepEqual(
      originalWords(['cmd', 'é'], () => assert.fail('read')),
      [Buffer.from('cmd'), Buffer.from('é')],
    );
    assert.deepEqual(
      originalWords([LOSSY], () => null),
      [Buffer.from(LOSSY)],
      'no /proc',
    );
  });

  it('originalValues: a value Node decoded with U+FFFD, found by its name and decoding in the environment', () => {
    const environ = () => [Buffer.from('PATH=/bin'), Buffer.concat([Buffer.from('WEIRD='), FFFE]), Buffer.concat([Buffer.from('OTHER='), FFFE])];
    const found = originalValues({ PATH: '/bin', WEIRD: LOSSY, CHANGED: LOSSY, OTHER: 'set by leasehold' }, environ);
    assert.deepEqual([...found], [['WEIRD', FFFE]], 'only values that hold U+FFFD and are the environment’s own');
  });

  it('guardScript: plain words and values go as they are; bytes Node cannot hold go through printf', () => {
    assert.deepEqual(guardScript(['echo', 'hi'], { PATH: '/bin' }, { words: [Buffer.from('echo'), Buffer.from('hi')], values: new Map() }).slice(1), [
      'leasehold-guard',
      'echo',
      'hi',
    ]);
    const [script, ...params] = guardScript(
      ['printf', LOSSY],
      { PATH: '/bin', leasehold_v: 'the app’s', WEIRD: LOSSY },
      {
        words: [Buffer.from('printf'), FFFE],
        values: new Map([
          ['WEIRD', FFFE],
          ['not-a-name', FFFE],
        ]),
      },
    );
    assert.deepEqual(params, ['leasehold-guard', '1', 'WEIRD', '\\377\\376', 'rprintf', 'o\\377\\376']);
    // The guard's own variables are never one of the command's.
    assert.match(script!, /leasehold_v_=/);
    assert.doesNotMatch(script!, /leasehold_v=/);
  });
});
