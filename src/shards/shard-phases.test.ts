import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ShardPhases } from './shard-phases.js';
import { prng } from '../../test/support/prng.js';

const A = { slot: 0, session: 1 };
const OLD = { slot: 0, session: 0 };

describe('a member’s shard phases, in one map', () => {
  it('a shard is in one phase at a time; within a phase, shards come in the order they entered it', () => {
    const p = new ShardPhases();
    p.own(3, { token: 1, version: 'v3' });
    p.own(1, { token: 2, version: 'v1' });
    p.own(2, { token: 3, version: 'v2' });
    const e = p.end(3, A, 100)!;
    assert.deepEqual(p.ownedShards(), [1, 2], 'an ending shard is not owned');
    assert.equal(p.owned(3), undefined);
    assert.deepEqual(
      { token: e.token, version: e.version, session: e.session, renewedAtMono: e.renewedAtMono },
      { token: 1, version: 'v3', session: A, renewedAtMono: 100 },
    );
    assert.equal(p.end(3, A, 200), undefined, 'only an owned shard starts through the gate');
    p.end(1, A, 100);
    assert.deepEqual([...p.endingShards()], [3, 1], 'ending shards in the order they ended');
    p.keep(3, { session: A, token: 1, untilMono: 15_100, release: { end: 'given up', round: 0 } });
    assert.deepEqual([...p.keptShards()], [3]);
    assert.deepEqual([...p.endingShards()], [1]);
    assert.equal(p.ending(3), undefined, 'a kept shard is not ending');
  });

  it('the owned count follows every change of phase, as the owned list does', () => {
    const p = new ShardPhases();
    const agree = (why: string) => assert.equal(p.ownedCount(), p.ownedShards().length, why);
    p.own(1, { token: 1, version: 'v1' });
    p.own(2, { token: 2, version: 'v2' });
    p.own(2, { token: 3, version: 'v2b' });
    agree('owned twice is owned once');
    assert.equal(p.ownedCount(), 2);
    const e = p.end(1, A, 0)!;
    agree('ending');
    p.keep(1, { session: A, token: 1, untilMono: 1, release: { end: 'given up', round: 0 } });
    agree('kept');
    p.endingOver(1, e);
    p.keptOver(1);
    p.end(2, A, 0);
    agree('all given up');
    assert.equal(p.ownedCount(), 0);
  });

  it('the end of a gate forgets its own ending only: a shard kept meanwhile stays kept', () => {
    const p = new ShardPhases();
    p.own(5, { token: 4, version: 'v' });
    const e = p.end(5, A, 0)!;
    p.keep(5, { session: A, token: 4, untilMono: 15_000, release: { end: 'given up', round: 0 } });
    p.endingOver(5, e);
    assert.deepEqual([...p.keptShards()], [5]);
    p.keptOver(5);
    assert.deepEqual([...p.keptShards()], []);
    assert.equal(p.anyOwnedOrEnding(), false);
  });

  it('a write-back’s version given to the ending is the one its release writes from', () => {
    const p = new ShardPhases();
    p.own(0, { token: 1, version: 'v1' });
    p.end(0, A, 0);
    p.ending(0)!.version = 'v2';
    assert.equal(p.ending(0)!.version, 'v2');
  });

  it('held: owned (by the current session), then ending, then kept, each with its session; owned ones only with a session', () => {
    const p = new ShardPhases();
    p.own(7, { token: 9, version: 'v' });
    p.own(8, { token: 2, version: 'v' });
    p.end(7, OLD, 0);
    p.own(6, { token: 5, version: 'v' });
    p.end(6, OLD, 0);
    p.keep(6, { session: OLD, token: 5, untilMono: 1, release: { end: 'given up', round: 0 } });
    p.own(4, { token: 1, version: 'v' });
    assert.deepEqual(p.held(A), [
      { shard: 8, token: 2, session: A },
      { shard: 4, token: 1, session: A },
      { shard: 7, token: 9, session: OLD },
      { shard: 6, token: 5, session: OLD },
    ]);
    assert.equal(p.anyOwnedOrEnding(), true);
    assert.deepEqual(
      p.held(null).map((h) => h.shard),
      [7, 6],
    );
  });

  it('the lists, kept between moves, are those of the map as it stands after every change (random changes, a model beside)', () => {
    const rand = prng(43);
    const p = new ShardPhases();
    // The model: each shard's phase, in the order it entered it.
    const model = new Map<number, { phase: 'owned' | 'ending' | 'kept'; token: number }>();
    const enter = (s: number, v: { phase: 'owned' | 'ending' | 'kept'; token: number }) => {
      model.delete(s);
      model.set(s, v);
    };
    const inPhase = (phase: string) => [...model].filter(([, v]) => v.phase === phase).map(([s]) => s);
    let checks = 0;
    for (let step = 0; step < 3000; step++) {
      const s = Math.floor(rand() * 12);
      const token = step + 1;
      const op = rand();
      if (op < 0.35) {
        p.own(s, { token, version: `v${token}` });
        enter(s, { phase: 'owned', token });
      } else if (op < 0.6) {
        if (p.end(s, A, step)) enter(s, { phase: 'ending', token: model.get(s)!.token });
      } else if (op < 0.75) {
        const t = model.get(s)?.token ?? token;
        p.keep(s, { session: A, token: t, untilMono: step, release: { end: 'given up', round: 0 } });
        enter(s, { phase: 'kept', token: t });
      } else if (op < 0.88) {
        const e = p.ending(s);
        if (e) {
          p.endingOver(s, e);
          model.delete(s);
        }
      } else if (model.get(s)?.phase === 'kept') {
        p.keptOver(s);
        model.delete(s);
      }
      // Asked twice, as a turn does: the second answer comes from what the first built.
      for (let ask = 0; ask < 2; ask++) {
        assert.deepEqual(p.ownedShards(), inPhase('owned'), `step ${step}`);
        assert.deepEqual([...p.endingShards()], inPhase('ending'), `step ${step}`);
        assert.deepEqual([...p.keptShards()], inPhase('kept'), `step ${step}`);
        assert.deepEqual(
          p.keptEntries().map(([k]) => k),
          inPhase('kept'),
        );
        const odd = (x: number) => x % 2 === 1;
        assert.deepEqual(
          p.held(A, odd).map((h) => [h.shard, h.token]),
          [...inPhase('owned'), ...inPhase('ending'), ...inPhase('kept')].filter(odd).map((x) => [x, model.get(x)!.token]),
        );
        checks++;
      }
    }
    assert.ok(checks === 6000);
    assert.throws(() => (p.ownedShards() as number[]).push(99), 'the shared owned list is frozen');
  });
});
