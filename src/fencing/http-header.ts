/**
 * The fencing claim on the wire (docs/fencing.md, "Your own HTTP service"): two request headers,
 *   Leasehold-Fence-Key: orders/shard-7          (the resource key, percent-encoded UTF-8)
 *   Leasehold-Fencing-Token: 12                  (a positive decimal integer, no sign, no leading 0)
 * Two headers, not one with parameters, so `curl -H` and any HTTP client can send them without a
 * quoting rule. HTTP header values are ASCII in practice, so the key is sent percent-encoded:
 * every byte outside the unreserved and path characters of RFC 3986 (and `%` itself) as `%XX`
 * of its UTF-8; plain ASCII keys such as `orders/shard-7` are sent as they are.
 */
import type { IncomingHttpHeaders } from 'node:http';

export const FENCE_KEY_HEADER = 'Leasehold-Fence-Key';
export const FENCING_TOKEN_HEADER = 'Leasehold-Fencing-Token';

/** What a writer presents: the resource key it writes and the token of its term. */
export interface WireClaim {
  key: string;
  token: number;
}

export type ParsedFenceHeaders = { ok: true; claim: WireClaim } | { ok: false; reason: string };

/** Characters sent as they are: RFC 3986 unreserved, sub-delims, ':' '@' '/' (a path segment's). */
const PLAIN = /[A-Za-z0-9\-._~!$&'()*+,;=:@/]/;
/** What a header value may hold at all: visible ASCII (no space, no control character, no byte above 0x7e). */
const VISIBLE_ASCII = /^[\x21-\x7e]+$/;
const TOKEN = /^[1-9][0-9]{0,15}$/;

/** The key as sent in Leasehold-Fence-Key. */
export function encodeFenceKey(key: string): string {
  let out = '';
  for (const ch of key) {
    if (PLAIN.test(ch)) out += ch;
    else for (const b of Buffer.from(ch, 'utf8')) out += `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** The two headers for a claim, ready for fetch() or http.request(). */
export function fenceHeaders(claim: WireClaim): Record<string, string> {
  return { [FENCE_KEY_HEADER]: encodeFenceKey(claim.key), [FENCING_TOKEN_HEADER]: String(claim.token) };
}

/**
 * Reads the claim from a request's headers (Node lower-cases their names). Refuses, naming the
 * header and the rule: a missing or repeated header, a key that is not percent-encoded visible
 * ASCII or does not decode to UTF-8, and a token that is not a positive safe integer in decimal.
 * The key's length and characters are then checked by the fence itself (withSqliteFence,
 * withPostgresFence), so the rule lives in one place.
 */
export function parseFenceHeaders(headers: IncomingHttpHeaders): ParsedFenceHeaders {
  const key = single(headers, FENCE_KEY_HEADER);
  if (!key.ok) return key;
  const token = single(headers, FENCING_TOKEN_HEADER);
  if (!token.ok) return token;
  if (!VISIBLE_ASCII.test(key.value))
    return { ok: false, reason: `${FENCE_KEY_HEADER} must be percent-encoded visible ASCII, got ${JSON.stringify(key.value)}` };
  let decoded: string;
  try {
    decoded = decodeURIComponent(key.value);
  } catch {
    return { ok: false, reason: `${FENCE_KEY_HEADER} ${JSON.stringify(key.value)} is not valid percent-encoded UTF-8` };
  }
  if (!TOKEN.test(token.value) || !Number.isSafeInteger(Number(token.value))) {
    return { ok: false, reason: `${FENCING_TOKEN_HEADER} must be a positive safe integer in decimal, got ${JSON.stringify(token.value)}` };
  }
  return { ok: true, claim: { key: decoded, token: Number(token.value) } };
}

function single(headers: IncomingHttpHeaders, name: string): { ok: true; value: string } | { ok: false; reason: string } {
  const v = headers[name.toLowerCase()];
  if (v === undefined || v === '') return { ok: false, reason: `missing ${name} header` };
  // Node joins repeated custom headers with ", "; an array only for a few known names.
  if (Array.isArray(v) || v.includes(', ')) return { ok: false, reason: `${name} must be sent once` };
  return { ok: true, value: v };
}
