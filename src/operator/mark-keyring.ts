import { createHash } from 'node:crypto';
import { INJECTED_MARK } from './annotations.js';
import { claimedFields, markKeyOf } from './injection-mark.js';
import type { Pod } from './pod-types.js';

/**
 * The keys of the injection marks, as the Secret `--mark-secret` keeps them: one that signs,
 * those retired by a rotation that only verify, and when the record begins. Pure: reading and
 * writing the Secret is src/operator/mark-key.ts.
 *
 * Why a ring and not one key: a mark is checked on every reconcile pass for as long as its pod
 * lives, so a key that changed under running pods would take back every grant they hold
 * (issue 36). A retired key keeps verifying the pods made before it stopped signing, and is
 * dropped only once no such pod is left.
 */
export interface MarkKey {
  key: Buffer;
  /** 16 hex digits of the key's SHA-256: names it in logs and in `dropped`, and reveals nothing of it. */
  id: string;
  /** When a rotation (or a merge) stopped it signing, ms since the epoch; absent for the signing key. */
  retiredAt?: number;
}

export interface Keyring {
  current: MarkKey;
  retired: MarkKey[];
  /**
   * Every mark on a pod created from this moment on (ms since the epoch) was signed by a key
   * here, or by one dropped because no pod needed it. A pod created before it whose mark no key
   * here verifies may carry a mark of a key that was lost (its Secret deleted with every replica
   * that held it): the reconciler keeps, never widens, what such a pod's ServiceAccount holds.
   */
  since: number;
  /** Ids of keys dropped on purpose, newest last: a replica that still holds one must not bring it back. */
  dropped: string[];
}

/** The Secret's data keys. `mark.key` alone is what every earlier version wrote and reads. */
export const DATA = { current: 'mark.key', retired: 'mark.retired', dropped: 'mark.dropped', since: 'mark.since' } as const;
/** The annotation on the Secret that asks the elected replica for a new signing key. */
export const ROTATE_ANNOTATION = 'leasehold.io/rotate';
/** A 256-bit key: HMAC-SHA256's block input is longer, its security no greater. */
export const KEY_BYTES = 32;
/** Dropped ids remembered: rotations are rare, and a replica that missed 32 of them has not read the Secret in ages. */
export const MAX_DROPPED = 32;

export interface SecretLike {
  metadata?: { creationTimestamp?: string; annotations?: Record<string, string>; resourceVersion?: string };
  data?: Record<string, string>;
}

export const keyId = (key: Buffer): string => createHash('sha256').update(key).digest('hex').slice(0, 16);
export const markKey = (key: Buffer, retiredAt?: number): MarkKey => ({ key, id: keyId(key), ...(retiredAt === undefined ? {} : { retiredAt }) });

const b64 = (s: string) => Buffer.from(s, 'base64');
const text = (data: Record<string, string>, k: string) => (data[k] === undefined ? undefined : b64(data[k]).toString('utf8'));

/** The keyring a Secret holds, or why it cannot be one (named, without any key's bytes). */
export function parseKeyring(secret: SecretLike, where: string): Keyring | { error: string } {
  const data = secret.data ?? {};
  const current = b64(data[DATA.current] ?? '');
  if (current.length < KEY_BYTES) return { error: `Secret ${where} has no ${DATA.current} of ${KEY_BYTES} bytes: delete it to have a new key made` };
  let retired: MarkKey[];
  let dropped: string[];
  try {
    const r = JSON.parse(text(data, DATA.retired) ?? '[]') as unknown;
    if (!Array.isArray(r)) throw new Error();
    retired = r.map((e: { key?: unknown; retiredAt?: unknown }) => {
      const key = typeof e?.key === 'string' ? b64(e.key) : Buffer.alloc(0);
      const at = typeof e?.retiredAt === 'string' ? Date.parse(e.retiredAt) : NaN;
      if (key.length < KEY_BYTES || Number.isNaN(at)) throw new Error();
      return markKey(key, at);
    });
    const d = JSON.parse(text(data, DATA.dropped) ?? '[]') as unknown;
    if (!Array.isArray(d) || d.some((x) => typeof x !== 'string')) throw new Error();
    dropped = d as string[];
  } catch {
    return { error: `Secret ${where} has a malformed ${DATA.retired} or ${DATA.dropped}: each retired key ${KEY_BYTES} bytes with its retiredAt` };
  }
  // Absent: the Secret's own creation (the first key was made with it). Neither known: 0, so no
  // pod counts as older than the ring, which only ever takes grants back, never keeps one.
  const sinceText = text(data, DATA.since) ?? secret.metadata?.creationTimestamp;
  const since = sinceText === undefined ? 0 : Date.parse(sinceText);
  return { current: markKey(current), retired: retired.filter((k) => k.id !== keyId(current)), since: Number.isNaN(since) ? 0 : since, dropped };
}

/** The Secret's data for a keyring. */
export function keyringData(ring: Keyring): Record<string, string> {
  const enc = (s: string) => Buffer.from(s).toString('base64');
  return {
    [DATA.current]: ring.current.key.toString('base64'),
    [DATA.retired]: enc(JSON.stringify(ring.retired.map((k) => ({ key: k.key.toString('base64'), retiredAt: new Date(k.retiredAt ?? 0).toISOString() })))),
    [DATA.dropped]: enc(JSON.stringify(ring.dropped)),
    [DATA.since]: enc(new Date(ring.since).toISOString()),
  };
}

const ids = (r: Keyring) => [r.current.id, ...r.retired.map((k) => k.id)];
export const sameKeyring = (a: Keyring, b: Keyring): boolean =>
  JSON.stringify([ids(a), a.retired.map((k) => k.retiredAt), a.since, a.dropped]) ===
  JSON.stringify([ids(b), b.retired.map((k) => k.retiredAt), b.since, b.dropped]);

/**
 * What the Secret (`theirs`) should hold once this replica's keys (`mine`) are in it: theirs,
 * plus every key of mine it neither holds nor dropped on purpose. A key of mine it lacks was
 * lost with a deleted Secret (or one written again by hand), and pods may carry marks of it:
 * it comes back as retired at `now`, verifying the pods made before. The signing key stays
 * theirs, so every replica converges on one. `since` goes back to the earlier of the two when
 * the rings share a key or one comes back, since the keys then reach that far back; it never
 * moves later on a replica's word.
 */
export function mergeKeyrings(mine: Keyring, theirs: Keyring, now: number): Keyring {
  const known = new Set(ids(theirs));
  const dropped = new Set(theirs.dropped);
  const back = [mine.current, ...mine.retired].filter((k) => !known.has(k.id) && !dropped.has(k.id));
  const shared = ids(mine).some((id) => known.has(id));
  return {
    current: theirs.current,
    retired: [...theirs.retired, ...back.map((k) => markKey(k.key, k.retiredAt ?? now))],
    since: back.length > 0 || shared ? Math.min(mine.since, theirs.since) : theirs.since,
    dropped: theirs.dropped,
  };
}

/** A new signing key; the one it replaces keeps verifying, retired at `now`. */
export function rotateKeyring(ring: Keyring, key: Buffer, now: number): Keyring {
  return { ...ring, current: markKey(key), retired: [...ring.retired, markKey(ring.current.key, now)] };
}

/**
 * The ring without the retired keys that no pod needs any more: retired at least `graceMs`
 * before `listedAt` (so no replica still signs with it and no pod made after can be verified by
 * it) and verifying none of the pods listed at `listedAt` (`needed`, by id).
 */
export function withoutUnneeded(ring: Keyring, needed: ReadonlySet<string>, listedAt: number, graceMs: number): Keyring {
  const gone = ring.retired.filter((k) => (k.retiredAt ?? 0) + graceMs <= listedAt && !needed.has(k.id));
  if (gone.length === 0) return ring;
  return {
    ...ring,
    retired: ring.retired.filter((k) => !gone.includes(k)),
    dropped: [...ring.dropped, ...gone.map((k) => k.id)].slice(-MAX_DROPPED),
  };
}

/** What the reconciler learns from one pod's mark. */
export type MarkCheck =
  /** Signed by a key of the ring, for the fields the pod claims: granted as the webhook signed it. */
  | { valid: true; keyId: string }
  /**
   * No key of the ring signed it, and the pod is older than the ring: its key may have been
   * lost. Its ServiceAccount keeps what it already holds, never more.
   */
  | { valid: false; lostKey: true; reason: string }
  | { valid: false; lostKey: false; reason: string };

const NOT_INJECTED = 'it carries no valid injection mark: it was not injected by this operator';

/**
 * Checks a pod's mark against the ring. A retired key verifies only pods created before it
 * stopped signing (its retiredAt, plus `graceMs` for the replicas that have not reread the
 * Secret yet): whoever learns a retired key cannot mark new pods with it.
 */
export function checkMark(ring: Keyring, pod: Pod & { metadata?: { creationTimestamp?: string } }, graceMs: number): MarkCheck {
  const created = Date.parse(pod.metadata?.creationTimestamp ?? '');
  const key = markKeyOf(pod, [ring.current, ...ring.retired]);
  if (key === ring.current) return { valid: true, keyId: key.id };
  if (key) {
    if (created < (key.retiredAt ?? 0) + graceMs) return { valid: true, keyId: key.id };
    return {
      valid: false,
      lostKey: false,
      reason: `its injection mark was signed with a key retired at ${new Date(key.retiredAt ?? 0).toISOString()}, and the pod was made after that key stopped signing`,
    };
  }
  const marked = claimedFields(pod) !== null && typeof pod.metadata?.annotations?.[INJECTED_MARK] === 'string';
  if (marked && created < ring.since)
    return {
      valid: false,
      lostKey: true,
      reason: `its injection mark was signed with a key this operator no longer holds (the pod is older than its keys, ${new Date(ring.since).toISOString()}: its Secret was deleted or replaced)`,
    };
  return { valid: false, lostKey: false, reason: NOT_INJECTED };
}
