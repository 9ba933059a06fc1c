import { it } from 'node:test';
import assert from 'node:assert/strict';
import { parseNotification } from './postgres-store.js';
import { clientConfig, describeTarget, parseTableName } from './postgres-config.js';

it('a notification is a record (the trigger), a deletion with the last record, or a bare name (a hint)', () => {
  const row = {
    name: 'jobs',
    holder_identity: 'a',
    fencing_token: 7,
    renew_time: 1796461200.5,
    lease_duration_seconds: 15,
    acquire_time: 1796461100,
    version: 12,
  };
  assert.deepEqual(parseNotification(JSON.stringify(row)), {
    name: 'jobs',
    event: {
      record: {
        record: {
          holderIdentity: 'a',
          leaseTransitions: 7,
          leaseDurationSeconds: 15,
          renewTime: new Date(1796461200500),
          acquireTime: new Date(1796461100000),
        },
        version: '12',
      },
    },
  });
  const gone = parseNotification(JSON.stringify({ ...row, deleted: true }));
  assert.equal(gone.event.record, null);
  assert.equal(gone.event.deleted?.leaseTransitions, 7);
  assert.deepEqual(parseNotification('jobs'), { name: 'jobs', event: {} });
});

it('table names and URLs are checked without echoing a password', () => {
  assert.deepEqual(parseTableName('leases'), { schema: 'public', table: 'leases' });
  assert.deepEqual(parseTableName('ops.leases'), { schema: 'ops', table: 'leases' });
  for (const bad of ['Leases', 'a.b.c', 'x;drop', '', 'a.']) assert.throws(() => parseTableName(bad), /invalid --postgres-table/);
  assert.throws(
    () => clientConfig('postgres://u:hunter2@[x', 1000),
    (err: Error) => !err.message.includes('hunter2'),
  );
  assert.equal(describeTarget(clientConfig('postgres://u:hunter2@db.example:6543/leases?sslmode=require', 1000)), 'u@db.example:6543/leases');
});
