import { it } from 'node:test';
import assert from 'node:assert/strict';
import { apiError, httpReason, httpStatus, transportError } from './api-errors.js';
import { BackendUnavailableError } from '../errors.js';

it('an HTTP status picks the coded class, and the error keeps the status and reason', () => {
  const cases: [number, string][] = [
    [401, 'LEASEHOLD_ERR_UNAUTHORIZED'],
    [403, 'LEASEHOLD_ERR_FORBIDDEN'],
    [404, 'LEASEHOLD_ERR_NOT_FOUND'],
    [409, 'LEASEHOLD_ERR_CONFLICT'],
    [422, 'LEASEHOLD_ERR_INVALID_RECORD'],
    [429, 'LEASEHOLD_ERR_BACKEND_UNAVAILABLE'],
    [503, 'LEASEHOLD_ERR_BACKEND_UNAVAILABLE'],
    [400, 'LEASEHOLD_ERR_BACKEND'],
  ];
  for (const [status, code] of cases) {
    const err = apiError(status, 'said the server', 'Why');
    assert.equal(err.code, code, `HTTP ${status}`);
    assert.equal(httpStatus(err), status);
    assert.equal(httpReason(err), 'Why');
    assert.equal(err.message, 'said the server');
  }
});

it('a refused server certificate is a misconfiguration, not an outage; other transport failures are unavailability', () => {
  for (const code of [
    'DEPTH_ZERO_SELF_SIGNED_CERT',
    'SELF_SIGNED_CERT_IN_CHAIN',
    'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
    'CERT_HAS_EXPIRED',
    'ERR_TLS_CERT_ALTNAME_INVALID',
  ]) {
    const err = transportError('GET /x', Object.assign(new Error('certificate trouble'), { code }));
    assert.equal(err.code, 'LEASEHOLD_ERR_STORE_OPEN', code);
    assert.match(
      err.message,
      /^GET \/x: the API server's certificate was refused \(certificate trouble: [A-Z_]+\): check the kubeconfig's certificate-authority/,
    );
    assert.equal(httpStatus(err), undefined);
  }
  for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND']) {
    const cause = Object.assign(new Error(`connect ${code}`), { code });
    const err = transportError('GET /x', cause);
    assert.equal(err.code, 'LEASEHOLD_ERR_BACKEND_UNAVAILABLE', code);
    assert.equal(err.cause, cause);
  }
  const already = new BackendUnavailableError('kubernetes get timed out after 5000 ms');
  assert.equal(transportError('GET /x', already), already, 'a cancellation keeps its own reason');
});
