import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { kubeUsersNeeded } from './shards.js';
import { parseShardCases } from '../lib/shard-cases.js';

describe("the shards bench's Kubernetes users", () => {
  it('enough for every member a chain adds: its largest M, a joiner per M, two replaced before each next M', () => {
    // 256 at 8 then 32: m0..m7, m8 joins, two go; m9..m33 grow it to 32, m34 joins: 35 users.
    const needed = kubeUsersNeeded(parseShardCases('256x8,256x32,4096x2')!);
    assert.ok(needed >= 35, String(needed));
    assert.ok(needed < 50, `not a user per member ever started in any run: ${needed}`);
    assert.ok(kubeUsersNeeded(parseShardCases('16x2')!) >= 3);
  });
});
