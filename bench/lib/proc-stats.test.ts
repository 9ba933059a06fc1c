import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseSchedstat } from './proc-stats.js';

describe('parseSchedstat', () => {
  it('reads time on a CPU, time waiting for one (ns) and timeslices', () => {
    assert.deepEqual(parseSchedstat('2416017 108802 7\n'), { cpuNs: 2416017, waitNs: 108802, slices: 7 });
  });

  it('refuses what is not a schedstat line', () => {
    assert.throws(() => parseSchedstat('0 1\n'), /not a schedstat line/);
  });
});
