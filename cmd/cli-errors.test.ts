import { it } from 'node:test';
import assert from 'node:assert/strict';
import { InvalidConfigError, StatusDirError, StoreOpenError } from '../src/errors.js';
import { badFlag, cliMessage, quoteValue } from './cli-errors.js';

it('leads a refusal with the flag its setting comes from, and adds the flag for a setting it advises', () => {
  assert.equal(
    cliMessage(new StoreOpenError('the database file x.db is not a regular file', { field: 'db' })),
    '--db: the database file x.db is not a regular file',
  );
  assert.equal(cliMessage(new StatusDirError('the status directory s is not a directory')), '--status-dir: the status directory s is not a directory');
  assert.equal(
    cliMessage(
      new StoreOpenError('the database file x.db is on a network filesystem (nfs): ... set the store setting allowNetworkFilesystem: true', { field: 'db' }),
    ),
    '--db: the database file x.db is on a network filesystem (nfs): ... set the store setting allowNetworkFilesystem: true (on the command line: --allow-network-filesystem)',
  );
  // A message that names its flag already (the CLI's own timing and flag checks) is left as it is.
  const named = new InvalidConfigError('invalid --lease "X": rule', { field: 'lease' });
  assert.equal(cliMessage(named), 'invalid --lease "X": rule');
  assert.equal(cliMessage(new Error('plain')), 'plain');
});

it("tells a refusal by where each value came from: the parse's origins, no state of its own", () => {
  const refusal = badFlag('lease-duration', 'xyz', 'expected a duration');
  assert.equal(refusal.message, 'invalid --lease-duration "xyz": expected a duration');
  assert.equal(cliMessage(refusal), 'invalid --lease-duration "xyz": expected a duration');
  const fromVariable = { 'lease-duration': { from: 'variable', variable: 'LEASEHOLD_LEASE_DURATION' } } as const;
  assert.equal(cliMessage(refusal, fromVariable), 'invalid LEASEHOLD_LEASE_DURATION "xyz" (for --lease-duration): expected a duration');
  assert.equal(cliMessage(refusal, { 'lease-duration': { from: 'flag' } }), 'invalid --lease-duration "xyz": expected a duration');
  const db = new StoreOpenError("the database's directory /proc/x cannot be created", { field: 'db' });
  assert.equal(
    cliMessage(db, { db: { from: 'variable', variable: 'LEASEHOLD_DB' } }),
    "LEASEHOLD_DB (for --db): the database's directory /proc/x cannot be created",
  );
  assert.equal(cliMessage(db, { db: { from: 'default' } }), "--db: the database's directory /proc/x cannot be created");
});

it('never quotes a value that may hold a password, nor the credentials of a URL', () => {
  assert.equal(
    badFlag('postgres-url', 'postgres://u:hunter2@h/db', 'rule').message,
    'invalid --postgres-url (its value is not shown: it may hold a password): rule',
  );
  assert.equal(badFlag('health-exec', 'curl -u u:hunter2 h', 'rule').message, 'invalid --health-exec (its value is not shown: it may hold a password): rule');
  assert.equal(badFlag('health-http', 'http://u:hunter2@h/', 'rule').message, 'invalid --health-http "http://<credentials hidden>@h/": rule');
  assert.equal(quoteValue(['x', 'https://u:hunter2@h']), '["x","https://<credentials hidden>@h"]');
});
