import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { httpBounds, openDescriptors, openFilesLimit } from './connection-budget.js';

describe('the HTTP bounds from the descriptors left', () => {
  it('streams plus room for probes, below the descriptors left after room for the store', () => {
    const cases: [string, number | null, number | null, number | undefined, { maxConnections: number; maxStreams: number }][] = [
      ['no limit known', null, null, undefined, { maxConnections: 1088, maxStreams: 1024 }],
      ['plenty of descriptors', 1_048_576, 30, undefined, { maxConnections: 1088, maxStreams: 1024 }],
      ['a hard limit of 1024', 1024, 30, undefined, { maxConnections: 930, maxStreams: 866 }],
      ['a configured stream bound', 1_048_576, 30, 2, { maxConnections: 66, maxStreams: 2 }],
      ['few left: half stay for requests', 200, 30, undefined, { maxConnections: 106, maxStreams: 53 }],
      ['none left: still a bound, never 0 (no bound to node:http)', 64, 30, undefined, { maxConnections: 2, maxStreams: 1 }],
    ];
    for (const [name, limit, open, streams, want] of cases) assert.deepEqual(httpBounds(limit, open, streams), want, name);
  });

  it('reads the soft open-files limit; none where it cannot', () => {
    const limits =
      'Limit                     Soft Limit           Hard Limit           Units\nMax open files            1024                 4096                 files\n';
    assert.equal(
      openFilesLimit(() => limits),
      1024,
    );
    assert.equal(
      openFilesLimit(() => limits.replace('1024 ', 'unlimited ')),
      null,
    );
    assert.equal(
      openFilesLimit(() => {
        throw new Error('ENOENT');
      }),
      null,
    );
    assert.equal(
      openDescriptors(() => ['0', '1', '2']),
      3,
    );
    assert.ok((openFilesLimit() ?? 1) > 0);
  });
});
