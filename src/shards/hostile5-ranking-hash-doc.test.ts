/**
 * Hostile review (branch hostile5): docs/design.md, "Assignment", says a member keeps "the ones it
 * ranks highest by rendezvous hash, FNV-1a 64 of `G/s/identity`". Issue 43 named this mismatch
 * ("design.md says the ranking hash is FNV-1a 64 of G/s/identity; the code uses FNV-1a 32 of
 * other inputs") and it is still there: assignShards seeds FNV-1a 32 with `G/identity/<session
 * key>` and mixes the shard in with murmur3's finaliser, so a member's ranking also changes with
 * each session (a restart or a rejoin under the same identity ranks the shards differently).
 * These assert what the document says, so they fail today (either the code or the document must
 * change).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assignShards } from './assignment.js';
import { fnv1a64 } from './key-to-shard.js';

const G = 'workers';
const N = 16;

/** The shards `identity` keeps of all N it holds when a newcomer joins (quota N/2). */
function kept(identityKey: string): number[] {
  const target = assignShards(
    G,
    N,
    [
      { key: identityKey, identity: 'a' },
      { key: 'newcomer', identity: 'b' },
    ],
    new Array<string>(N).fill(identityKey),
  );
  return target.flatMap((owner, s) => (owner === identityKey ? [s] : []));
}

describe('hostile5: the ranking hash docs/design.md describes', () => {
  it('a member keeps the shards ranked highest by FNV-1a 64 of G/s/identity', () => {
    const byDoc = Array.from({ length: N }, (_, s) => s)
      .sort((x, y) => {
        const hx = fnv1a64(`${G}/${x}/a`);
        const hy = fnv1a64(`${G}/${y}/a`);
        return hx === hy ? x - y : hy > hx ? 1 : -1;
      })
      .slice(0, N / 2)
      .sort((x, y) => x - y);
    assert.deepEqual(kept('0/1'), byDoc);
  });

  it("the ranking is the identity's: the same for another session of the same member", () => {
    assert.deepEqual(kept('0/1'), kept('0/2'));
  });
});
