import { it } from 'node:test';
import assert from 'node:assert/strict';
import { exitStatus } from './child-process-group.js';

it('a signal gives 128 + its number, for every signal (a shell gives 139 for SIGSEGV)', () => {
  assert.equal(exitStatus({ code: null, signal: 'SIGSEGV' }), 139);
  assert.equal(exitStatus({ code: null, signal: 'SIGABRT' }), 134);
  assert.equal(exitStatus({ code: null, signal: 'SIGUSR1' }), 138);
  assert.equal(exitStatus({ code: null, signal: 'SIGTERM' }), 143);
  assert.equal(exitStatus({ code: 7, signal: null }), 7);
});
