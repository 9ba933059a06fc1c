import { it } from 'node:test';
import assert from 'node:assert/strict';
import { applyEnvFlags } from './env-flags.js';

it('maps LEASEHOLD_<FLAG> to --flag after the command word', () => {
  assert.deepEqual(applyEnvFlags(['sidecar', '--lease', 'x'], { LEASEHOLD_LEASE_DURATION: '30s' }), ['sidecar', '--lease-duration=30s', '--lease', 'x']);
});

it('lets the command line win', () => {
  assert.deepEqual(applyEnvFlags(['sidecar', '--lease=x'], { LEASEHOLD_LEASE: 'y' }), ['sidecar', '--lease=x']);
  assert.deepEqual(applyEnvFlags(['sidecar', '--no-release-on-exit'], { LEASEHOLD_RELEASE_ON_EXIT: 'true' }), ['sidecar', '--no-release-on-exit']);
});

it('ignores variables that are not flags, such as the token handed to a child', () => {
  assert.deepEqual(applyEnvFlags(['status'], { LEASEHOLD_FENCING_TOKEN: '7', LEASEHOLD_TEST_X: '1' }), ['status']);
});

it('does not look past "--" (those are the child command\'s arguments)', () => {
  assert.deepEqual(applyEnvFlags(['run', '--', 'cmd', '--lease', 'z'], { LEASEHOLD_LEASE: 'y' }), ['run', '--lease=y', '--', 'cmd', '--lease', 'z']);
});
