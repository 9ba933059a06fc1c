import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assignShards, type AssignedMember } from './assignment.js';
import { prng } from '../../test/support/prng.js';

const G = 'workers';
const member = (i: number): AssignedMember => ({ key: `m${i}/1`, identity: `pod-${i}` });
const counts = (target: (string | null)[]) => {
  const c = new Map<string, number>();
  for (const t of target) if (t !== null) c.set(t, (c.get(t) ?? 0) + 1);
  return c;
};
const moved = (a: (string | null)[], b: (string | null)[]) => a.filter((x, s) => x !== b[s]).length;

function assertBalanced(target: (string | null)[], members: AssignedMember[], what: string) {
  const n = target.length;
  assert.ok(
    target.every((t) => t !== null && members.some((m) => m.key === t)),
    `${what}: every shard has a live owner`,
  );
  const lo = Math.floor(n / members.length);
  const hi = Math.ceil(n / members.length);
  for (const m of members) {
    const got = counts(target).get(m.key) ?? 0;
    assert.ok(got === lo || got === hi, `${what}: ${m.key} owns ${got}, not ${lo} or ${hi}`);
  }
}

describe('the shard assignment', () => {
  it('no member: no owner', () => {
    assert.deepEqual(assignShards(G, 3, [], [null, null, null]), [null, null, null]);
  });

  it('balanced for every N and M: each member floor(N/M) or ceil(N/M), every shard owned', () => {
    for (const n of [1, 2, 16, 64, 255, 1024, 4096]) {
      for (const m of [1, 2, 3, 7, 8, 32, 40]) {
        const members = Array.from({ length: m }, (_, i) => member(i));
        assertBalanced(assignShards(G, n, members, new Array(n).fill(null)), members, `N ${n}, M ${m}`);
      }
    }
  });

  it('the same for every member: the order of the members list changes nothing', () => {
    const members = Array.from({ length: 9 }, (_, i) => member(i));
    const owners = assignShards(G, 100, members.slice(0, 5), new Array(100).fill(null));
    const a = assignShards(G, 100, members, owners);
    const b = assignShards(G, 100, [...members].reverse(), owners);
    assert.deepEqual(a, b);
  });

  it('a settled assignment is its own target: nothing moves without a change of members', () => {
    const members = Array.from({ length: 6 }, (_, i) => member(i));
    const t = assignShards(G, 64, members, new Array(64).fill(null));
    assert.deepEqual(assignShards(G, 64, members, t), t);
  });

  it('64 shards, members 1 -> 4 -> 3 (a leave) -> 4 -> 3 (a crash): 64, 16, 21 or 22, and only the shards that must move move', () => {
    const all = Array.from({ length: 5 }, (_, i) => member(i));
    let owners: (string | null)[] = new Array<string | null>(64).fill(null);
    const step = (members: AssignedMember[], wantMax: number) => {
      const before = owners.map((o) => (o !== null && members.some((m) => m.key === o) ? o : null));
      const t = assignShards(G, 64, members, before);
      assertBalanced(t, members, `${members.length} members`);
      const moves = moved(t, owners);
      assert.ok(moves <= wantMax, `${moves} moves, at most ${wantMax}`);
      owners = t;
      return moves;
    };
    assert.equal(step(all.slice(0, 1), 64), 64);
    assert.equal(step(all.slice(0, 4), 48), 48, 'three joins: each newcomer gets its 16');
    assert.equal(step(all.slice(0, 3), 16), 16, 'a leave moves the leaver’s 16 only');
    const join = step([...all.slice(0, 3), all[4]!], 16);
    assert.equal(join, 16, 'a join moves the newcomer’s share only');
    assert.equal(step([all[0]!, all[2]!, all[4]!], 16), 16, 'a crash moves the dead member’s shards only');
  });

  it('a join moves exactly the newcomer’s share (at most ceil(N/M)), a leave exactly the leaver’s shards, for random N and M', () => {
    const rand = prng(7);
    for (let round = 0; round < 200; round++) {
      const n = 1 + Math.floor(rand() * 1024);
      const m = 1 + Math.floor(rand() * 20);
      const members = Array.from({ length: m + 1 }, (_, i) => member(i + round * 100));
      const settled = assignShards(G, n, members.slice(0, m), new Array(n).fill(null));
      const joined = assignShards(G, n, members, settled);
      const newcomer = members[m]!.key;
      assert.equal(moved(joined, settled), counts(joined).get(newcomer) ?? 0, `N ${n}, M ${m} -> ${m + 1}: only shards to the newcomer move`);
      assert.ok((counts(joined).get(newcomer) ?? 0) <= Math.ceil(n / (m + 1)));
      const leaver = members[Math.floor(rand() * (m + 1))]!;
      const rest = members.filter((x) => x !== leaver);
      if (rest.length === 0) continue;
      const left = assignShards(
        G,
        n,
        rest,
        joined.map((o) => (o === leaver.key ? null : o)),
      );
      assert.equal(moved(left, joined), counts(joined).get(leaver.key) ?? 0, `N ${n}: only the leaver's shards move`);
      assertBalanced(left, rest, `N ${n}, after a leave`);
    }
  });

  it('while a move is under way (shards freed and taken one by one), the target does not change: no extra moves', () => {
    const members = Array.from({ length: 4 }, (_, i) => member(i));
    const settled = assignShards(G, 64, members.slice(0, 3), new Array(64).fill(null));
    const goal = assignShards(G, 64, members, settled);
    const now = [...settled];
    for (let s = 0; s < 64; s++) {
      if (now[s] === goal[s]) continue;
      now[s] = null; // the old owner released it
      assert.deepEqual(assignShards(G, 64, members, now), goal, `after shard ${s} was freed`);
      now[s] = goal[s]!; // the newcomer took it
      assert.deepEqual(assignShards(G, 64, members, now), goal, `after shard ${s} was taken`);
    }
  });

  it('the rendezvous hash is the one docs/design.md writes down: FNV-1a 32 of G/identity/slot/session, mixed with the shard by murmur3', () => {
    // The design's formula, written again here: a member that owns all 16 keeps the 8 it ranks
    // highest when a newcomer joins.
    const seed = (text: string) => {
      let h = 0x811c9dc5;
      for (const ch of text) {
        const c = ch.codePointAt(0)!;
        h = Math.imul(h ^ (c & 0xff), 0x01000193);
        if (c > 0xff) h = Math.imul(h ^ (c >>> 8), 0x01000193);
      }
      return h >>> 0;
    };
    const weight = (sd: number, shard: number) => {
      let h = (sd ^ Math.imul(shard + 1, 0x9e3779b1)) >>> 0;
      h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
      h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
      return (h ^ (h >>> 16)) >>> 0;
    };
    const N = 16;
    const kept = (key: string) => {
      const target = assignShards(
        G,
        N,
        [
          { key, identity: 'pod-é' },
          { key: 'newcomer/1', identity: 'pod-b' },
        ],
        new Array<string>(N).fill(key),
      );
      return target.flatMap((owner, s) => (owner === key ? [s] : []));
    };
    for (const key of ['0/1', '0/2', '3/7']) {
      const sd = seed(`${G}/pod-é/${key}`);
      const byFormula = Array.from({ length: N }, (_, s) => s)
        .sort((x, y) => weight(sd, y) - weight(sd, x) || x - y)
        .slice(0, N / 2)
        .sort((x, y) => x - y);
      assert.deepEqual(kept(key), byFormula, `session ${key}`);
    }
    // The session is in the seed: another session of the same identity ranks the shards its own way.
    assert.notDeepEqual(kept('0/1'), kept('0/2'));
  });
});
