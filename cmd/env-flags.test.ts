import { it } from 'node:test';
import assert from 'node:assert/strict';
import { applyEnvFlags, childEnvironment, flagsOf } from './env-flags.js';
import { sidecarFlags } from './sidecar-settings.js';
import { statusFlags } from './status-command.js';
import { runFlags } from './run-command.js';

const COMMANDS = { sidecar: flagsOf(sidecarFlags), status: flagsOf(statusFlags), run: flagsOf(runFlags) };

it('maps LEASEHOLD_<FLAG> to --flag after the command word', () => {
  assert.deepEqual(applyEnvFlags(['sidecar', '--lease', 'x'], { LEASEHOLD_LEASE_DURATION: '30s' }, COMMANDS), [
    'sidecar',
    '--lease-duration=30s',
    '--lease',
    'x',
  ]);
});

it('lets the command line win', () => {
  assert.deepEqual(applyEnvFlags(['sidecar', '--lease=x'], { LEASEHOLD_LEASE: 'y' }, COMMANDS), ['sidecar', '--lease=x']);
  assert.deepEqual(applyEnvFlags(['sidecar', '--no-release-on-exit'], { LEASEHOLD_RELEASE_ON_EXIT: 'true' }, COMMANDS), ['sidecar', '--no-release-on-exit']);
  // In yargs' camelCase spelling too: the variable is not added beside it (a flag given twice).
  assert.deepEqual(applyEnvFlags(['sidecar', '--leaseDuration', '20s'], { LEASEHOLD_LEASE_DURATION: '30s' }, COMMANDS), ['sidecar', '--leaseDuration', '20s']);
  assert.deepEqual(applyEnvFlags(['sidecar', '--no-releaseOnExit'], { LEASEHOLD_RELEASE_ON_EXIT: 'true' }, COMMANDS), ['sidecar', '--no-releaseOnExit']);
});

it('refuses an empty variable it would read, naming it; one the command line overrides is not read', () => {
  assert.throws(() => applyEnvFlags(['sidecar'], { LEASEHOLD_STATUS_DIR: '' }, COMMANDS), {
    message: 'invalid LEASEHOLD_STATUS_DIR "" (for --status-dir): must be non-empty (unset the variable for the default)',
  });
  assert.deepEqual(applyEnvFlags(['sidecar', '--status-dir', '/s'], { LEASEHOLD_STATUS_DIR: '' }, COMMANDS), ['sidecar', '--status-dir', '/s']);
  // Inside a `run` command the parent's term variables are not read at all.
  assert.deepEqual(applyEnvFlags(['sidecar'], { LEASEHOLD_FENCING_TOKEN: '3', LEASEHOLD_STATUS_DIR: '' }, COMMANDS), ['sidecar']);
});

it('ignores variables that are not flags, such as the token handed to a child', () => {
  assert.deepEqual(applyEnvFlags(['status'], { LEASEHOLD_FENCING_TOKEN: '7', LEASEHOLD_TEST_X: '1' }, COMMANDS), ['status']);
});

it("reads only the variables of the command's own flags", () => {
  const env = { LEASEHOLD_IDENTITY: 'x', LEASEHOLD_LISTEN: ':1', LEASEHOLD_STATUS_DIR: '/s', LEASEHOLD_ONCE: 'true', LEASEHOLD_JSON: 'true' };
  assert.deepEqual(applyEnvFlags(['status'], env, COMMANDS), ['status', '--json=true', '--status-dir=/s']);
  assert.deepEqual(applyEnvFlags(['sidecar'], env, COMMANDS), ['sidecar', '--identity=x', '--status-dir=/s', '--listen=:1']);
});

it("inside `leasehold run` (LEASEHOLD_FENCING_TOKEN set) the parent's lease, identity and status dir are not flags", () => {
  const env = { LEASEHOLD_FENCING_TOKEN: '3', LEASEHOLD_LEASE: 'billing', LEASEHOLD_IDENTITY: 'parent', LEASEHOLD_STATUS_DIR: '/s', LEASEHOLD_DB: '/x.db' };
  assert.deepEqual(applyEnvFlags(['run', '--', 'true'], env, COMMANDS), ['run', '--db=/x.db', '--', 'true']);
  // `status` writes nothing: there they name the parent's lease and the parent's own candidate.
  assert.deepEqual(applyEnvFlags(['status'], env, COMMANDS), ['status', '--lease=billing', '--db=/x.db', '--status-dir=/s']);
});

it('does not look past "--" (those are the child command\'s arguments)', () => {
  assert.deepEqual(applyEnvFlags(['run', '--', 'cmd', '--lease', 'z'], { LEASEHOLD_LEASE: 'y' }, COMMANDS), ['run', '--lease=y', '--', 'cmd', '--lease', 'z']);
});

it("the command's environment drops the parent's configuration and carries the term", () => {
  const env = childEnvironment(
    { PATH: '/bin', LEASEHOLD_LISTEN: ':4040', LEASEHOLD_DB: '/x.db', LEASEHOLD_FENCING_TOKEN: '1', LEASEHOLD_OTHER: 'kept' },
    COMMANDS.run,
    {
      LEASEHOLD_FENCING_TOKEN: '9',
      LEASEHOLD_LEASE: 'billing',
      LEASEHOLD_IDENTITY: 'me',
      LEASEHOLD_STATUS_DIR: undefined,
    },
  );
  assert.deepEqual(env, { PATH: '/bin', LEASEHOLD_OTHER: 'kept', LEASEHOLD_FENCING_TOKEN: '9', LEASEHOLD_LEASE: 'billing', LEASEHOLD_IDENTITY: 'me' });
});

it("a `run` command never inherits the parent's database password (LEASEHOLD_POSTGRES_URL)", () => {
  const env = childEnvironment({ PATH: '/bin', LEASEHOLD_POSTGRES_URL: 'postgres://u:secret@h/db' }, COMMANDS.run, {
    LEASEHOLD_FENCING_TOKEN: '3',
    LEASEHOLD_LEASE: 'jobs',
    LEASEHOLD_IDENTITY: 'me',
    LEASEHOLD_STATUS_DIR: undefined,
  });
  assert.equal(env.LEASEHOLD_POSTGRES_URL, undefined);
  assert.equal(env.PATH, '/bin');
});

it('with --backend postgres, the command inherits none of the credentials leasehold connected with; other backends leave them alone', () => {
  const parent = {
    PATH: '/bin',
    LEASEHOLD_POSTGRES_URL: 'postgres://u:secret@h/db',
    PGPASSWORD: 'secret',
    PGPASSFILE: '/etc/leasehold/pgpass',
    PGSERVICEFILE: '/etc/leasehold/pg_service.conf',
    PGSSLKEY: '/etc/leasehold/client.key',
    PGHOST: 'db.internal',
    PGUSER: 'leasehold',
  };
  const term = { LEASEHOLD_FENCING_TOKEN: '3', LEASEHOLD_LEASE: 'jobs', LEASEHOLD_IDENTITY: 'me', LEASEHOLD_STATUS_DIR: undefined };
  const env = childEnvironment(parent, COMMANDS.run, term, 'postgres');
  for (const name of ['LEASEHOLD_POSTGRES_URL', 'PGPASSWORD', 'PGPASSFILE', 'PGSERVICEFILE', 'PGSSLKEY']) assert.equal(env[name], undefined, name);
  assert.equal(env.PGHOST, 'db.internal', 'a server name is not a secret');
  assert.equal(env.PGUSER, 'leasehold');
  assert.equal(childEnvironment(parent, COMMANDS.run, term, 'sqlite').PGPASSWORD, 'secret', "not leasehold's credential with another backend");
});
