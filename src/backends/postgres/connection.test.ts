import { it } from 'node:test';
import assert from 'node:assert/strict';
import { BackendError, BackendUnavailableError, ConflictError, InvalidRecordError, StoreOpenError } from '../../errors.js';
import { codedError, connectionSettings } from './connection.js';

/** A driver error as node-postgres or node:net reports it: a message and a code. */
const failure = (message: string, code?: string) => Object.assign(new Error(message), code === undefined ? {} : { code });
const WHAT = 'postgres get on table public.leases on leasehold@db:5432/app';

it("the server bounds a statement inside the caller's bound, and a lock wait inside that", () => {
  const { config, statementTimeoutMs } = connectionSettings('postgres://leasehold@db:5432/app', 2_000, 5_000);
  assert.equal(statementTimeoutMs, 4_000);
  assert.equal(config.statement_timeout, 4_000);
  assert.equal(config.lock_timeout, 3_600);
  assert.equal(config.connectionTimeoutMillis, 2_000);
  assert.equal(connectionSettings('postgres://db/app').statementTimeoutMs, 4_000, 'the default request bound is 5 s');
});

it('a refused server certificate, a failed login or a missing database is a misconfiguration: StoreOpenError, naming the store', () => {
  for (const [err, says] of [
    [failure('self-signed certificate', 'DEPTH_ZERO_SELF_SIGNED_CERT'), /certificate was refused.*check sslmode and sslrootcert/],
    [failure("Hostname/IP does not match certificate's altnames", 'ERR_TLS_CERT_ALTNAME_INVALID'), /certificate was refused/],
    [failure('The server does not support SSL connections'), /sslmode asks for TLS/],
    [failure('password authentication failed for user "leasehold"', '28P01'), /authentication failed/],
    [failure('database "app" does not exist', '3D000'), /database "app" does not exist/],
    [failure('permission denied for database app', '42501'), /no permission/],
  ] as const) {
    const coded = codedError(err, WHAT, 4_000);
    assert.ok(coded instanceof StoreOpenError, `${err.message}: ${coded.name}`);
    assert.match(coded.message, says);
    assert.ok(coded.message.startsWith(`${WHAT}: `));
    assert.equal(coded.cause, err);
  }
});

it('an outage is BackendUnavailableError (the caller retries); a refused record is InvalidRecordError; the rest BackendError', () => {
  const timedOut = codedError(failure('canceling statement due to statement timeout', '57014'), WHAT, 4_000);
  assert.ok(timedOut instanceof BackendUnavailableError);
  assert.match(timedOut.message, /no answer within 4000 ms .*another session holding a lock/);
  assert.ok(codedError(failure('canceling statement due to lock timeout', '55P03'), WHAT, 4_000) instanceof BackendUnavailableError);
  assert.ok(codedError(failure('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'), WHAT, 4_000) instanceof BackendUnavailableError);
  assert.ok(codedError(failure('terminating connection due to administrator command', '57P01'), WHAT, 4_000) instanceof BackendUnavailableError);
  assert.ok(codedError(failure('Connection terminated unexpectedly'), WHAT, 4_000) instanceof BackendUnavailableError);
  assert.ok(codedError(failure('new row violates check constraint "x"', '23514'), WHAT, 4_000) instanceof InvalidRecordError);
  assert.ok(codedError(failure('bigint out of range', '22003'), WHAT, 4_000) instanceof InvalidRecordError);
  assert.ok(codedError(failure('syntax error', '42601'), WHAT, 4_000) instanceof BackendError);
  const coded = new ConflictError('lease x changed');
  assert.equal(codedError(coded, WHAT, 4_000), coded, 'a coded error passes through unchanged');
});
