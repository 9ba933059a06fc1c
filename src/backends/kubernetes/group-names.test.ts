import { it } from 'node:test';
import assert from 'node:assert/strict';
import { checkKubernetesGroupName, labelsOf, leaseNameOf, recordOfName } from './group-names.js';

it("names each record's Lease with its index zero-padded to 4 digits, and reads the names back", () => {
  assert.equal(leaseNameOf('orders', { kind: 'group', index: 0 }), 'orders');
  assert.equal(leaseNameOf('orders', { kind: 'member', index: 7 }), 'orders-member-0007');
  assert.equal(leaseNameOf('orders', { kind: 'shard', index: 4095 }), 'orders-shard-4095');
  for (const key of [
    { kind: 'group', index: 0 },
    { kind: 'member', index: 0 },
    { kind: 'shard', index: 123 },
  ] as const)
    assert.deepEqual(recordOfName('orders', leaseNameOf('orders', key)), key);
  for (const other of ['orders-x', 'orders-member-7', 'orders-member-00007', 'orders-shard-abcd', 'order', 'orders.v2-shard-0001', 'orders-member-0001x'])
    assert.equal(recordOfName('orders', other), null, other);
  assert.deepEqual(labelsOf('orders', { kind: 'shard' }), { 'leasehold.io/group': 'orders', 'leasehold.io/group-record': 'shard' });
});

it("refuses a group name no label can hold, or one named as another group's record, naming the rule", () => {
  checkKubernetesGroupName('a'.repeat(63));
  checkKubernetesGroupName('orders-member');
  for (const bad of ['a'.repeat(64), 'orders-member-0001', 'orders-shard-4095', 'Orders']) {
    assert.throws(
      () => checkKubernetesGroupName(bad),
      (e: { code: string; field: string; message: string }) => e.code === 'LEASEHOLD_ERR_INVALID_CONFIG' && e.field === 'group' && /group name/.test(e.message),
      bad,
    );
  }
  assert.throws(() => checkKubernetesGroupName('a'.repeat(64)), /at most 63 characters/);
});
