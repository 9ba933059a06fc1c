import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { quantile, quantiles, summary } from './quantile.js';

describe('quantile', () => {
  it('takes the nearest rank: of 1..100, the median is 50, p10 10, p95 95, p99 99, max 100', () => {
    const xs = Array.from({ length: 100 }, (_, i) => 100 - i);
    assert.deepEqual(quantiles(xs), { n: 100, median: 50, p95: 95, p99: 99, max: 100 });
    assert.equal(quantile(xs, 0.1), 10);
    assert.equal(quantile(xs, 1), 100);
  });

  it('takes the lower middle of an even sample and the middle of an odd one', () => {
    assert.equal(quantile([4, 1, 3, 2], 0.5), 2);
    assert.equal(quantile([3, 1, 2], 0.5), 2);
  });

  it('gives the one value of a sample of one, and refuses an empty sample', () => {
    assert.deepEqual(quantiles([7]), { n: 1, median: 7, p95: 7, p99: 7, max: 7 });
    assert.equal(quantile([7], 0.01), 7);
    assert.throws(() => quantiles([]), /empty sample/);
    assert.throws(() => quantile([], 0.5), /empty sample/);
  });

  it('summary agrees with quantile and keeps the sample sorted, leaving its input as it was', () => {
    const xs = [30, 10, 20, 50, 40];
    assert.deepEqual(summary(xs), { min: 10, median: 30, p95: 50, samples: [10, 20, 30, 40, 50] });
    assert.deepEqual(xs, [30, 10, 20, 50, 40]);
  });
});
