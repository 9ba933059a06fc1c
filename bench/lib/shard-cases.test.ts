import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { formatShardCases, KUBE_CASES_DEFAULT, parseShardCases } from './shard-cases.js';

describe('the Kubernetes cases of the shards bench', () => {
  it("issue 43's: one chain per N, its member counts ascending", () => {
    assert.deepEqual(parseShardCases(KUBE_CASES_DEFAULT), [
      { shards: 256, members: [8, 32] },
      { shards: 4096, members: [2] },
    ]);
    assert.equal(formatShardCases(parseShardCases(KUBE_CASES_DEFAULT)!), KUBE_CASES_DEFAULT);
  });

  it('given in any order, grouped and sorted', () => {
    assert.deepEqual(parseShardCases('4096x2,256x32,16x2,256x8'), [
      { shards: 16, members: [2] },
      { shards: 256, members: [8, 32] },
      { shards: 4096, members: [2] },
    ]);
  });

  it('refuses what is not NxM within the bounds, and repeats', () => {
    for (const bad of ['', '256', '256x', 'x8', '256x8,', '256*8', '0x2', '4097x2', '16x1', '16x61', '256x8,256x8', ' 256x8', '-1x2'])
      assert.equal(parseShardCases(bad), undefined, bad);
  });
});
