import { test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import { issue } from './x509.js';

const day = 86_400_000;
const now = new Date('2026-01-01T00:00:00Z');

test('a CA and a server certificate it signs parse and verify with node:crypto', () => {
  const ca = issue({ commonName: 'leasehold-operator-ca', notBefore: now, notAfter: new Date(now.getTime() + 3650 * day) });
  const server = issue({
    commonName: 'leasehold-operator.ops.svc',
    notBefore: now,
    notAfter: new Date(now.getTime() + 90 * day),
    hosts: ['leasehold-operator.ops.svc', '127.0.0.1'],
    issuer: { ...ca, commonName: 'leasehold-operator-ca' },
  });
  const caCert = new X509Certificate(ca.certPem);
  const cert = new X509Certificate(server.certPem);
  assert.equal(caCert.ca, true);
  assert.equal(cert.ca, false);
  assert.ok(caCert.verify(caCert.publicKey), 'the CA is self-signed');
  assert.ok(cert.verify(caCert.publicKey), 'the server certificate is signed by the CA');
  assert.ok(cert.checkIssued(caCert));
  assert.equal(cert.checkHost('leasehold-operator.ops.svc'), 'leasehold-operator.ops.svc');
  assert.equal(cert.checkIP('127.0.0.1'), '127.0.0.1');
  assert.equal(cert.checkHost('other.ops.svc'), undefined);
  assert.equal(new Date(cert.validTo).getTime(), now.getTime() + 90 * day);
  assert.equal(new Date(cert.validFrom).getTime(), now.getTime());
  assert.ok(cert.checkPrivateKey(createPrivateKey(server.keyPem)));
  assert.deepEqual(cert.keyUsage ?? ['1.3.6.1.5.5.7.3.1'], ['1.3.6.1.5.5.7.3.1']);
});

test('a certificate signed by another CA of the same name does not verify', () => {
  const a = issue({ commonName: 'ca', notBefore: now, notAfter: new Date(now.getTime() + day) });
  const b = issue({ commonName: 'ca', notBefore: now, notAfter: new Date(now.getTime() + day) });
  const cert = new X509Certificate(
    issue({ commonName: 's', notBefore: now, notAfter: new Date(now.getTime() + day), hosts: ['s'], issuer: { ...a, commonName: 'ca' } }).certPem,
  );
  assert.ok(cert.verify(new X509Certificate(a.certPem).publicKey));
  assert.ok(!cert.verify(new X509Certificate(b.certPem).publicKey));
});

test('dates after 2049 are GeneralizedTime', () => {
  const far = new Date('2060-06-01T12:00:00Z');
  const ca = new X509Certificate(issue({ commonName: 'ca', notBefore: now, notAfter: far }).certPem);
  assert.equal(new Date(ca.validTo).getTime(), far.getTime());
});

test('every serial number is minimal DER: a thousand certificates all load into a TLS context', () => {
  const ca = issue({ commonName: 'ca', notBefore: now, notAfter: new Date(now.getTime() + day) });
  for (let i = 0; i < 1000; i++) {
    const c = issue({ commonName: 's', notBefore: now, notAfter: new Date(now.getTime() + day), hosts: ['s'], issuer: { ...ca, commonName: 'ca' } });
    assert.doesNotThrow(() => createSecureContext({ cert: c.certPem, key: c.keyPem }), `certificate ${i}`);
  }
});
