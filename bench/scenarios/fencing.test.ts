import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fenceRounds } from './fencing.js';

describe('fenceRounds', () => {
  it('spreads a row over rounds of at most 2 s, every mode once a round, each round starting with the next', () => {
    const modes = ['plain', 'transaction', 'fenced', 'fenced-previous'] as const;
    const { sliceMs, order } = fenceRounds(15, modes);
    assert.equal(order.length, 8);
    assert.equal(sliceMs, 1875);
    for (const round of order) assert.deepEqual([...round].sort(), [...modes].sort());
    assert.deepEqual(
      order.map((r) => r[0]),
      ['plain', 'transaction', 'fenced', 'fenced-previous', 'plain', 'transaction', 'fenced', 'fenced-previous'],
    );
  });

  it('one round for a short row', () => {
    assert.deepEqual(fenceRounds(1, ['plain', 'fenced']), { sliceMs: 1000, order: [['plain', 'fenced']] });
  });
});
