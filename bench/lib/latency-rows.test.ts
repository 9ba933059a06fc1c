import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { LATENCY_ROWS, latencyKey, latencyNamespace, parseLatencyRow } from './latency-rows.js';

describe('latency rows', () => {
  it('parses one implementation, a leader and a standby, and a number of candidates', () => {
    assert.deepEqual(parseLatencyRow('leasehold:SIGTERM'), { leader: 'leasehold', standby: 'leasehold', candidates: 2, signal: 'SIGTERM' });
    assert.deepEqual(parseLatencyRow('leasehold:SIGTERM:3'), { leader: 'leasehold', standby: 'leasehold', candidates: 3, signal: 'SIGTERM' });
    assert.deepEqual(parseLatencyRow('client-go/leasehold:SIGKILL'), { leader: 'client-go', standby: 'leasehold', candidates: 2, signal: 'SIGKILL' });
  });

  it('names what is wrong in a bad spec', () => {
    assert.throws(() => parseLatencyRow('leasehold:SIGHUP'), /SIGNAL must be SIGTERM or SIGKILL/);
    assert.throws(() => parseLatencyRow('etcd:SIGTERM'), /unknown implementation "etcd"/);
    assert.throws(() => parseLatencyRow('leasehold:SIGTERM:1'), /CANDIDATES must be a whole number from 2 to 10/);
    assert.throws(() => parseLatencyRow('a/b/c:SIGTERM'), /at most one STANDBY/);
    assert.throws(() => parseLatencyRow('leasehold:SIGTERM:3:x'), /too many parts/);
  });

  it('keeps the keys the summary and the chart read, and gives every row its own key and namespace', () => {
    assert.equal(latencyKey(parseLatencyRow('leasehold:SIGTERM')), 'leasehold SIGTERM');
    assert.equal(latencyKey(parseLatencyRow('leasehold:SIGTERM:3')), 'leasehold SIGTERM, 3 candidates');
    assert.equal(latencyKey(parseLatencyRow('client-go/leasehold:SIGTERM')), 'client-go to leasehold SIGTERM');
    assert.equal(new Set(LATENCY_ROWS.map(latencyKey)).size, LATENCY_ROWS.length);
    const namespaces = LATENCY_ROWS.map(latencyNamespace);
    assert.equal(new Set(namespaces).size, LATENCY_ROWS.length);
    for (const ns of namespaces) assert.match(ns, /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/);
  });
});
