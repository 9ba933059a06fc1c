/**
 * Just enough X.509 to run a webhook without cert-manager: a self-signed CA and server
 * certificates it signs, ECDSA P-256 with SHA-256, DER-encoded here and signed by node:crypto.
 * node:crypto signs and parses certificates (X509Certificate) but cannot build one, the image
 * has no openssl, and the packages that build them bring an ASN.1 library or a whole crypto
 * suite into the image for what is ~100 lines of DER: so it is written here, and its output is
 * checked by node:crypto's parser and the API server's Go verifier (test/kubernetes/operator*).
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { isIP } from 'node:net';

const tlv = (tag: number, body: Buffer) => {
  const n = body.length;
  const len = n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), len, body]);
};
const seq = (...items: Buffer[]) => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]) => tlv(0x31, Buffer.concat(items));
const int = (bytes: Buffer) => tlv(0x02, bytes[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes);
const bool = (v: boolean) => tlv(0x01, Buffer.from([v ? 0xff : 0]));
const octets = (b: Buffer) => tlv(0x04, b);
const bits = (b: Buffer, unused = 0) => tlv(0x03, Buffer.concat([Buffer.from([unused]), b]));
const utf8 = (s: string) => tlv(0x0c, Buffer.from(s, 'utf8'));
const explicit = (n: number, inner: Buffer) => tlv(0xa0 + n, inner);

function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number);
  const out = [a! * 40 + b!];
  for (const v of rest) {
    const chunk = [v & 0x7f];
    for (let x = v >> 7; x > 0; x >>= 7) chunk.unshift((x & 0x7f) | 0x80);
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}

/** UTCTime through 2049, GeneralizedTime after, as RFC 5280 asks; whole seconds, UTC. */
function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14) + 'Z';
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(iso.slice(2))) : tlv(0x18, Buffer.from(iso));
}

const ECDSA_SHA256 = seq(oid('1.2.840.10045.4.3.2'));
const name = (cn: string) => seq(set(seq(oid('2.5.4.3'), utf8(cn))));
const ext = (id: string, critical: boolean, value: Buffer) => seq(oid(id), ...(critical ? [bool(true)] : []), octets(value));

export interface KeyPair {
  certPem: string;
  keyPem: string;
}

export interface IssueOptions {
  commonName: string;
  notBefore: Date;
  notAfter: Date;
  /** For a server certificate: its DNS names and IP addresses (subjectAltName). */
  hosts?: string[];
  /** The signing CA; absent for a self-signed CA. */
  issuer?: { certPem: string; keyPem: string; commonName: string };
}

/** The subjectKeyIdentifier of RFC 5280 method 1: SHA-1 of the public key's bits. */
function keyId(spki: Buffer): Buffer {
  // The key's BIT STRING is the last element of the SubjectPublicKeyInfo; for P-256 it is the
  // last 65 bytes (an uncompressed point).
  return createHash('sha1')
    .update(spki.subarray(spki.length - 65))
    .digest();
}

/** The SubjectPublicKeyInfo (DER) of a private key's public half. */
function publicSpki(keyPem: string): Buffer {
  return createPublicKey(createPrivateKey(keyPem)).export({ type: 'spki', format: 'der' });
}

/** Issues one certificate: a CA (no issuer: self-signed, may sign others) or a server certificate. */
export function issue(o: IssueOptions): KeyPair {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const spki = publicSpki(keyPem);
  const isCa = !o.issuer;
  const signer: KeyObject = o.issuer ? createPrivateKey(o.issuer.keyPem) : privateKey;
  const issuerSpki = o.issuer ? publicSpki(o.issuer.keyPem) : spki;
  const serial = randomBytes(16);
  // Positive (top bit clear) and minimal (a leading zero byte would be illegal DER padding).
  serial[0] = (serial[0]! & 0x7f) | 0x40;
  const extensions = [
    ext('2.5.29.19', true, isCa ? seq(bool(true)) : seq()),
    // keyUsage: keyCertSign + cRLSign for the CA, digitalSignature for an ECDSA server key.
    ext('2.5.29.15', true, isCa ? bits(Buffer.from([0x06]), 1) : bits(Buffer.from([0x80]), 7)),
    ext('2.5.29.14', false, octets(keyId(spki))),
    ext('2.5.29.35', false, seq(tlv(0x80, keyId(issuerSpki)))),
  ];
  if (!isCa) {
    extensions.push(ext('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1'))));
    const alt = (o.hosts ?? []).map((h) => {
      const family = isIP(h);
      if (family === 4) return tlv(0x87, Buffer.from(h.split('.').map(Number)));
      if (family === 6) throw new Error(`IPv6 subjectAltNames are not supported: ${h}`);
      return tlv(0x82, Buffer.from(h, 'ascii'));
    });
    if (alt.length > 0) extensions.push(ext('2.5.29.17', false, seq(...alt)));
  }
  const tbs = seq(
    explicit(0, int(Buffer.from([2]))),
    int(serial),
    ECDSA_SHA256,
    name(o.issuer?.commonName ?? o.commonName),
    seq(time(o.notBefore), time(o.notAfter)),
    name(o.commonName),
    spki,
    explicit(3, seq(...extensions)),
  );
  const signature = sign('sha256', tbs, signer);
  const der = seq(tbs, ECDSA_SHA256, bits(signature));
  const b64 = der
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .trimEnd();
  return { certPem: `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`, keyPem };
}
