import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { clientGoGroupPerMin } from './client-go-shards.js';

describe("client-go's way, computed", () => {
  it('N × 30 renewals by the holders and N × (M − 1) × 30 reads by the others, a minute', () => {
    // The figures: about 61,000 requests a minute at N = 256, M = 8; 245,000 at M = 32.
    assert.deepEqual(clientGoGroupPerMin(256, 8), { updates: 7_680, gets: 53_760, requests: 61_440 });
    assert.deepEqual(clientGoGroupPerMin(256, 32), { updates: 7_680, gets: 238_080, requests: 245_760 });
    assert.deepEqual(clientGoGroupPerMin(4096, 2), { updates: 122_880, gets: 122_880, requests: 245_760 });
  });

  it('one member alone: only its renewals', () => {
    assert.deepEqual(clientGoGroupPerMin(16, 1), { updates: 480, gets: 0, requests: 480 });
  });
});
