import { test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { fromSecretData, nextTlsState, toSecretData, type TlsPolicy, type TlsState } from './tls-state.js';

const day = 86_400_000;
const policy: TlsPolicy = { hosts: ['op.ops.svc', '127.0.0.1'], caValidityMs: 300 * day, certValidityMs: 30 * day, propagationMs: 60_000 };
const t0 = Date.parse('2026-01-01T00:00:00Z');

const trusts = (s: TlsState, certPem = s.tlsCert) => {
  const cert = new X509Certificate(certPem);
  return (s.caBundle.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? []).some((ca) => cert.verify(new X509Certificate(ca).publicKey));
};

test('a first state has a CA, a serving certificate it signs and a bundle of that CA', () => {
  const s = nextTlsState(null, t0, policy);
  assert.ok(trusts(s));
  assert.equal(nextTlsState(s, t0 + day, policy), s, 'nothing is due: the same state');
  assert.deepEqual(fromSecretData(toSecretData(s)), { ...s, nextCaCert: undefined, nextCaKey: undefined });
});

test('the serving certificate is renewed with a third of its life left, by the same CA', () => {
  const s = nextTlsState(null, t0, policy);
  assert.equal(nextTlsState(s, t0 + 19 * day, policy), s);
  const r = nextTlsState(s, t0 + 21 * day, policy);
  assert.notEqual(r.tlsCert, s.tlsCert);
  assert.equal(r.caBundle, s.caBundle, 'the bundle is unchanged: old and new certificates are both trusted');
  assert.ok(trusts(r, s.tlsCert) && trusts(r, r.tlsCert));
  assert.notEqual(nextTlsState(s, t0 + day, policy, true).tlsCert, s.tlsCert, 'a forced renewal renews at once');
});

test('a CA rotation never leaves a served certificate untrusted', () => {
  let s = nextTlsState(null, t0, policy);
  const oldCert = s.tlsCert;
  // Walk through a CA rotation a step at a time: at every step, the certificate any replica may
  // still serve (the one before the step) and the new one are both in the bundle.
  let now = t0;
  let rotated = false;
  for (let i = 0; i < 700 && !rotated; i++) {
    now += day / 2;
    const before = s;
    s = nextTlsState(s, now, policy);
    assert.ok(trusts(s, before.tlsCert), `step ${i}: the previous serving certificate is still trusted`);
    assert.ok(trusts(s), `step ${i}: the new serving certificate is trusted`);
    if (before.nextCaCert) assert.equal(s.caBundle, before.caBundle, 'no CA leaves while a new one is pending');
    rotated = !s.nextCaCert && s.caCert !== before.caCert;
  }
  assert.ok(rotated, 'the CA was rotated');
  assert.ok(trusts(s, oldCert), 'the old CA stays in the bundle until it expires');
  s = nextTlsState(s, t0 + 301 * day, policy);
  assert.ok(!trusts(s, oldCert), 'an expired CA leaves the bundle');
  assert.ok(trusts(s));
});

test('a new CA signs only once the bundle holding it has been out propagationMs', () => {
  const s = nextTlsState(null, t0, policy);
  const due = t0 + 201 * day;
  const a = nextTlsState(s, due, policy);
  assert.ok(a.nextCaCert, 'the new CA is pending');
  assert.equal(a.caCert, s.caCert, 'the old CA still signs');
  const b = nextTlsState(a, due + 30_000, policy);
  assert.equal(b.caCert, s.caCert, 'too early');
  const c = nextTlsState(a, due + 60_000, policy);
  assert.equal(c.caCert, a.nextCaCert);
  assert.ok(new X509Certificate(c.tlsCert).verify(new X509Certificate(a.nextCaCert).publicKey));
});

test('a serving certificate that does not name the hosts is reissued', () => {
  const s = nextTlsState(null, t0, policy);
  const r = nextTlsState(s, t0, { ...policy, hosts: ['other.ops.svc'] });
  assert.equal(new X509Certificate(r.tlsCert).checkHost('other.ops.svc'), 'other.ops.svc');
});
