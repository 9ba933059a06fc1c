import { test } from 'node:test';
import assert from 'node:assert/strict';
import { INJECTED_LEASE, INJECTED_MARK, INJECTED_POD_LABEL } from './annotations.js';
import { injectionMark } from './injection-mark.js';
import {
  DATA,
  MAX_DROPPED,
  checkMark,
  keyringData,
  markKey,
  mergeKeyrings,
  parseKeyring,
  rotateKeyring,
  withoutUnneeded,
  type Keyring,
} from './mark-keyring.js';

const A = Buffer.alloc(32, 1);
const B = Buffer.alloc(32, 2);
const C = Buffer.alloc(32, 3);
const T = Date.parse('2026-12-02T09:00:00Z');
const ring = (current: Buffer, retired: [Buffer, number][] = [], since = T, dropped: string[] = []): Keyring => ({
  current: markKey(current),
  retired: retired.map(([k, at]) => markKey(k, at)),
  since,
  dropped,
});
const idsOf = (r: Keyring) => [r.current.id, ...r.retired.map((k) => k.id)];

function markedPod(key: Buffer, created: number) {
  const fields = { namespace: 'app', serviceAccount: 'web', lease: 'web', podLabel: false };
  return {
    metadata: {
      namespace: 'app',
      creationTimestamp: new Date(created).toISOString(),
      annotations: { [INJECTED_LEASE]: 'web', [INJECTED_POD_LABEL]: 'false', [INJECTED_MARK]: injectionMark(key, fields) },
    },
    spec: { serviceAccountName: 'web' },
  };
}

test('a keyring goes into the Secret and back; a Secret of one key (every earlier version) is a ring of one', () => {
  const r = ring(A, [[B, T + 5_000]], T - 1_000, ['0123456789abcdef']);
  const back = parseKeyring({ data: keyringData(r) }, 'ops/m');
  assert.ok(!('error' in back));
  assert.deepEqual(idsOf(back), idsOf(r));
  assert.equal(back.retired[0]!.retiredAt, T + 5_000);
  assert.equal(back.since, T - 1_000);
  assert.deepEqual(back.dropped, ['0123456789abcdef']);
  // mark.key alone: the record begins with the Secret.
  const old = parseKeyring({ metadata: { creationTimestamp: '2026-12-01T00:00:00Z' }, data: { [DATA.current]: A.toString('base64') } }, 'ops/m');
  assert.ok(!('error' in old));
  assert.deepEqual(idsOf(old), [markKey(A).id]);
  assert.equal(old.since, Date.parse('2026-12-01T00:00:00Z'));
});

test('a Secret without a whole key, or with a malformed retired list, is named, never signed with', () => {
  assert.deepEqual(parseKeyring({ data: { [DATA.current]: Buffer.alloc(8).toString('base64') } }, 'ops/m'), {
    error: 'Secret ops/m has no mark.key of 32 bytes: delete it to have a new key made',
  });
  const bad = { [DATA.current]: A.toString('base64'), [DATA.retired]: Buffer.from('[{"key":"AAAA"}]').toString('base64') };
  assert.match((parseKeyring({ data: bad }, 'ops/m') as { error: string }).error, /Secret ops\/m has a malformed mark\.retired/);
});

test('the Secret made again by a replica that held nothing: the keys of the others come back, retired, and the record reaches back', () => {
  const mine = ring(A, [], T);
  const fresh = ring(B, [], T + 3_600_000);
  const merged = mergeKeyrings(mine, fresh, T + 3_700_000);
  assert.equal(merged.current.id, markKey(B).id, "the Secret's signing key stays: every replica converges on one");
  assert.deepEqual(
    merged.retired.map((k) => [k.id, k.retiredAt]),
    [[markKey(A).id, T + 3_700_000]],
  );
  assert.equal(merged.since, T, 'the keys reach back to the earlier record');
  // The replica that made it fresh then reads the merged ring, and takes it as it is.
  const back = mergeKeyrings(fresh, merged, T + 3_800_000);
  assert.deepEqual(idsOf(back), idsOf(merged));
  assert.equal(back.since, T);
});

test('a key dropped on purpose does not come back from a replica that still holds it', () => {
  const held = ring(B, [[A, T]], T);
  const theirs = ring(B, [], T, [markKey(A).id]);
  assert.deepEqual(idsOf(mergeKeyrings(held, theirs, T + 1)), [markKey(B).id]);
  // Nor does the record move later on a replica's word.
  const later = ring(C, [], T + 10_000, [markKey(A).id, markKey(B).id]);
  assert.equal(mergeKeyrings(held, later, T + 20_000).since, T + 10_000, 'nothing shared, nothing back: theirs as it is');
  assert.equal(mergeKeyrings(ring(C, [], T), later, T + 20_000).since, T, 'a key shared: the earlier record');
});

test('a rotation retires the signing key; it goes once no pod needs it and its grace has passed, and is remembered as dropped', () => {
  const r = rotateKeyring(ring(A), B, T + 1_000);
  assert.equal(r.current.id, markKey(B).id);
  assert.deepEqual(
    r.retired.map((k) => [k.id, k.retiredAt]),
    [[markKey(A).id, T + 1_000]],
  );
  const grace = 30_000;
  assert.equal(withoutUnneeded(r, new Set(), T + 1_000 + grace - 1, grace), r, 'within its grace a replica may still sign with it');
  assert.equal(withoutUnneeded(r, new Set([markKey(A).id]), T + 1_000 + grace, grace), r, 'a pod needs it');
  const dropped = withoutUnneeded(r, new Set(), T + 1_000 + grace, grace);
  assert.deepEqual(idsOf(dropped), [markKey(B).id]);
  assert.deepEqual(dropped.dropped, [markKey(A).id]);
  const many = { ...r, dropped: Array.from({ length: MAX_DROPPED }, (_, i) => String(i)) };
  assert.equal(withoutUnneeded(many, new Set(), T + 1_000 + grace, grace).dropped.length, MAX_DROPPED, 'a bounded memory');
});

test("a mark's check: the signing key, a retired one for the pods made before it stopped, and a lost one only for pods older than the record", () => {
  const grace = 30_000;
  const r = ring(B, [[A, T]], T - 86_400_000);
  assert.deepEqual(checkMark(r, markedPod(B, T + 999_999), grace), { valid: true, keyId: markKey(B).id });
  assert.deepEqual(checkMark(r, markedPod(A, T + grace - 1_000), grace), { valid: true, keyId: markKey(A).id });
  const late = checkMark(r, markedPod(A, T + grace), grace);
  assert.equal(late.valid, false);
  assert.match((late as { reason: string }).reason, /retired at 2026-12-02T09:00:00\.000Z, and the pod was made after that key stopped signing/);
  const lost = checkMark(r, markedPod(C, T - 86_400_001), grace);
  assert.deepEqual([lost.valid, (lost as { lostKey: boolean }).lostKey], [false, true]);
  const forged = checkMark(r, markedPod(C, T - 86_400_000), grace);
  assert.deepEqual([forged.valid, (forged as { lostKey: boolean }).lostKey], [false, false], 'from the record on, an unknown mark is a forged one');
  const unmarked = markedPod(C, T - 90_000_000);
  delete (unmarked.metadata.annotations as Record<string, string>)[INJECTED_MARK];
  assert.equal((checkMark(r, unmarked, grace) as { lostKey: boolean }).lostKey, false, 'no mark at all is not a lost one');
});
