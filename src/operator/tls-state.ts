/**
 * The webhook's certificates as kept in one Secret, and how they move forward in time. Pure:
 * `nextTlsState` takes what the Secret holds and the time, and returns what it should hold.
 *
 * No admission fails during a rotation, because the API server trusts every CA in the webhook
 * configuration's caBundle, and the bundle changes before anything is signed differently:
 * - the serving certificate is renewed with a third of its life left, signed by the same CA, so
 *   replicas that still serve the old one and replicas that serve the new one are both trusted;
 * - the CA is renewed with a third of its life left: the new CA joins the bundle first (old and
 *   new both trusted); only `propagationMs` later does it sign a serving certificate; the old CA
 *   leaves the bundle when it expires, long after every replica reloaded.
 */
import { X509Certificate } from 'node:crypto';
import { issue } from './x509.js';

export interface TlsState {
  caCert: string;
  caKey: string;
  /** Every CA the webhook configuration trusts, PEM, concatenated. */
  caBundle: string;
  /** A CA in the bundle not yet used to sign: it signs once the bundle has been out `propagationMs`. */
  nextCaCert?: string | undefined;
  nextCaKey?: string | undefined;
  /** When caBundle last changed (ms since the epoch). */
  bundleSince: number;
  tlsCert: string;
  tlsKey: string;
}

export interface TlsPolicy {
  /** The serving certificate's names: the Service's DNS names (and 127.0.0.1 in tests). */
  hosts: string[];
  caValidityMs: number;
  certValidityMs: number;
  /** How long a bundle change is given to reach every API server before a new CA signs. */
  propagationMs: number;
}

export const CA_NAME = 'leasehold-operator-ca';

const validity = (pem: string) => {
  const c = new X509Certificate(pem);
  return { from: new Date(c.validFrom).getTime(), to: new Date(c.validTo).getTime(), cert: c };
};

/** A remaining life under a third of the whole is due for renewal. */
const due = (pem: string, now: number) => {
  const v = validity(pem);
  return now >= v.to - (v.to - v.from) / 3;
};

function splitPem(bundle: string): string[] {
  return bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\n?/g)?.map((s) => (s.endsWith('\n') ? s : `${s}\n`)) ?? [];
}

function newCa(now: number, p: TlsPolicy) {
  return issue({ commonName: CA_NAME, notBefore: new Date(now), notAfter: new Date(now + p.caValidityMs) });
}

function serving(ca: { certPem: string; keyPem: string }, now: number, p: TlsPolicy) {
  return issue({
    commonName: p.hosts[0] ?? 'leasehold-operator',
    hosts: p.hosts,
    notBefore: new Date(now),
    notAfter: new Date(now + p.certValidityMs),
    issuer: { ...ca, commonName: CA_NAME },
  });
}

function servesHosts(certPem: string, hosts: string[]): boolean {
  const c = new X509Certificate(certPem);
  return hosts.every((h) => (/^[0-9.]+$/.test(h) ? c.checkIP(h) !== undefined : c.checkHost(h) !== undefined));
}

/**
 * What the Secret should hold at `now`; the same object when nothing changes. `forceRenewal`
 * renews the serving certificate (same CA) whatever its age.
 */
export function nextTlsState(current: TlsState | null, now: number, p: TlsPolicy, forceRenewal = false): TlsState {
  if (!current) {
    const ca = newCa(now, p);
    const cert = serving(ca, now, p);
    return { caCert: ca.certPem, caKey: ca.keyPem, caBundle: ca.certPem, bundleSince: now, tlsCert: cert.certPem, tlsKey: cert.keyPem };
  }
  let s: TlsState = current;
  // Expired CAs leave the bundle (never the one that signs).
  const kept = splitPem(s.caBundle).filter((pem) => pem.trim() === s.caCert.trim() || validity(pem).to > now);
  if (kept.join('') !== s.caBundle) s = { ...s, caBundle: kept.join(''), bundleSince: now };
  if (!s.nextCaCert && due(s.caCert, now)) {
    const next = newCa(now, p);
    s = { ...s, nextCaCert: next.certPem, nextCaKey: next.keyPem, caBundle: s.caBundle + next.certPem, bundleSince: now };
  }
  let signWithNew = false;
  if (s.nextCaCert && s.nextCaKey && now - s.bundleSince >= p.propagationMs) {
    s = { ...s, caCert: s.nextCaCert, caKey: s.nextCaKey, nextCaCert: undefined, nextCaKey: undefined };
    signWithNew = true;
  }
  const cert = validity(s.tlsCert).cert;
  const signedByCurrent = cert.verify(new X509Certificate(s.caCert).publicKey);
  if (forceRenewal || signWithNew || !signedByCurrent || due(s.tlsCert, now) || !servesHosts(s.tlsCert, p.hosts)) {
    const fresh = serving({ certPem: s.caCert, keyPem: s.caKey }, now, p);
    s = { ...s, tlsCert: fresh.certPem, tlsKey: fresh.keyPem };
  }
  return s;
}

/** The Secret's data keys, base64 as the API wants them. */
export function toSecretData(s: TlsState): Record<string, string> {
  const b = (v: string) => Buffer.from(v).toString('base64');
  const data: Record<string, string> = {
    'ca.crt': b(s.caCert),
    'ca.key': b(s.caKey),
    'ca-bundle.crt': b(s.caBundle),
    'bundle-since': b(String(s.bundleSince)),
    'tls.crt': b(s.tlsCert),
    'tls.key': b(s.tlsKey),
  };
  if (s.nextCaCert && s.nextCaKey) Object.assign(data, { 'next-ca.crt': b(s.nextCaCert), 'next-ca.key': b(s.nextCaKey) });
  return data;
}

/** The state in a Secret's data, or null when it holds none (or a partial one: it is remade). */
export function fromSecretData(data: Record<string, string> | undefined): TlsState | null {
  const t = (k: string) => (data?.[k] === undefined ? undefined : Buffer.from(data[k], 'base64').toString());
  const [caCert, caKey, caBundle, since, tlsCert, tlsKey] = ['ca.crt', 'ca.key', 'ca-bundle.crt', 'bundle-since', 'tls.crt', 'tls.key'].map(t);
  if (!caCert || !caKey || !caBundle || !since || !tlsCert || !tlsKey) return null;
  return { caCert, caKey, caBundle, bundleSince: Number(since), tlsCert, tlsKey, nextCaCert: t('next-ca.crt'), nextCaKey: t('next-ca.key') };
}
