import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { admissionVerdict, describeBucket, fractionAtOrUnder, histogramDelta, histogramSum, msText, parseHistogram, quantileBucket } from './latency-stats.js';

const APISERVER = `# HELP apiserver_admission_webhook_admission_duration_seconds [STABLE] Admission webhook latency
# TYPE apiserver_admission_webhook_admission_duration_seconds histogram
apiserver_admission_webhook_admission_duration_seconds_bucket{name="inject.leasehold.io",operation="CREATE",rejected="false",type="admit",le="0.005"} 90
apiserver_admission_webhook_admission_duration_seconds_bucket{name="inject.leasehold.io",operation="CREATE",rejected="false",type="admit",le="0.025"} 99
apiserver_admission_webhook_admission_duration_seconds_bucket{name="inject.leasehold.io",operation="CREATE",rejected="false",type="admit",le="+Inf"} 100
apiserver_admission_webhook_admission_duration_seconds_sum{name="inject.leasehold.io",operation="CREATE",rejected="false",type="admit"} 0.4
apiserver_admission_webhook_admission_duration_seconds_count{name="inject.leasehold.io",operation="CREATE",rejected="false",type="admit"} 100
apiserver_admission_webhook_admission_duration_seconds_bucket{name="inject.leasehold.io",operation="CREATE",rejected="true",type="admit",le="0.005"} 1
apiserver_admission_webhook_admission_duration_seconds_bucket{name="inject.leasehold.io",operation="CREATE",rejected="true",type="admit",le="0.025"} 1
apiserver_admission_webhook_admission_duration_seconds_bucket{name="inject.leasehold.io",operation="CREATE",rejected="true",type="admit",le="+Inf"} 1
apiserver_admission_webhook_admission_duration_seconds_sum{name="inject.leasehold.io",operation="CREATE",rejected="true",type="admit"} 0.001
apiserver_admission_webhook_admission_duration_seconds_count{name="inject.leasehold.io",operation="CREATE",rejected="true",type="admit"} 1
apiserver_admission_webhook_admission_duration_seconds_bucket{name="other.example.com",operation="CREATE",rejected="false",type="admit",le="0.005"} 50
apiserver_admission_webhook_admission_duration_seconds_bucket{name="other.example.com",operation="CREATE",rejected="false",type="admit",le="0.025"} 50
apiserver_admission_webhook_admission_duration_seconds_bucket{name="other.example.com",operation="CREATE",rejected="false",type="admit",le="+Inf"} 50
apiserver_admission_webhook_admission_duration_seconds_sum{name="other.example.com",operation="CREATE",rejected="false",type="admit"} 0.1
apiserver_admission_webhook_admission_duration_seconds_count{name="other.example.com",operation="CREATE",rejected="false",type="admit"} 50
apiserver_admission_webhook_admission_duration_seconds_total_other 3
`;

describe('Prometheus histograms', () => {
  it("sums the series that match the labels asked for, and ignores other webhooks and other metrics' lines", () => {
    const h = parseHistogram(APISERVER, 'apiserver_admission_webhook_admission_duration_seconds', { name: 'inject.leasehold.io' });
    assert.deepEqual(h.buckets, [
      { le: 0.005, count: 91 },
      { le: 0.025, count: 100 },
      { le: Infinity, count: 101 },
    ]);
    assert.equal(h.count, 101);
    assert.ok(Math.abs(h.sum - 0.401) < 1e-12);
  });

  it('reads an absent metric as empty', () => {
    assert.deepEqual(parseHistogram(APISERVER, 'leasehold_operator_admission_seconds'), { buckets: [], sum: 0, count: 0 });
  });

  it('subtracts an earlier reading bucket by bucket, and adds replicas', () => {
    const before = {
      buckets: [
        { le: 0.001, count: 2 },
        { le: Infinity, count: 3 },
      ],
      sum: 0.01,
      count: 3,
    };
    const after = {
      buckets: [
        { le: 0.001, count: 10 },
        { le: Infinity, count: 13 },
      ],
      sum: 0.05,
      count: 13,
    };
    const d = histogramDelta(before, after);
    assert.deepEqual(d.buckets, [
      { le: 0.001, count: 8 },
      { le: Infinity, count: 10 },
    ]);
    assert.equal(d.count, 10);
    assert.deepEqual(histogramSum([d, d]).buckets, [
      { le: 0.001, count: 16 },
      { le: Infinity, count: 20 },
    ]);
    assert.equal(histogramSum([d, d]).count, 20);
  });

  it('bounds a quantile by its bucket: p99 of 91 ≤ 5 ms, 100 ≤ 25 ms, 101 in all lies in (5 ms, 25 ms]', () => {
    const h = parseHistogram(APISERVER, 'apiserver_admission_webhook_admission_duration_seconds', { name: 'inject.leasehold.io' });
    assert.deepEqual(quantileBucket(h, 0.99), { lower: 0.005, upper: 0.025 });
    assert.deepEqual(quantileBucket(h, 0.5), { lower: 0, upper: 0.005 });
    assert.deepEqual(quantileBucket(h, 1), { lower: 0.025, upper: Infinity });
    assert.equal(fractionAtOrUnder(h, 0.005), 91 / 101);
    assert.ok(Number.isNaN(fractionAtOrUnder(h, 0.01)));
    assert.equal(quantileBucket({ buckets: [], sum: 0, count: 0 }, 0.99), null);
  });
});

describe('the admission goal', () => {
  it('writes buckets in milliseconds', () => {
    assert.equal(msText(0.00025), '0.25');
    assert.equal(msText(0.005), '5');
    assert.equal(describeBucket({ lower: 0.005, upper: 0.025 }), '(5, 25] ms');
    assert.equal(describeBucket({ lower: 0.1, upper: Infinity }), '(100, ∞] ms');
    assert.equal(describeBucket(null), 'n/a (no call observed)');
  });

  it("is decided by the API server's bucket when it lies wholly under or over the goal, else by the client's latencies", () => {
    assert.deepEqual(admissionVerdict({ lower: 0, upper: 0.005 }, 40, 10), { met: true, by: 'the API server histogram' });
    assert.deepEqual(admissionVerdict({ lower: 0.025, upper: 0.1 }, 1, 10), { met: false, by: 'the API server histogram' });
    assert.deepEqual(admissionVerdict({ lower: 0.005, upper: 0.025 }, 3.2, 10), { met: true, by: 'the client latencies' });
    assert.deepEqual(admissionVerdict({ lower: 0.005, upper: 0.025 }, 12, 10), { met: false, by: 'the client latencies' });
    assert.deepEqual(admissionVerdict(null, 2, 10), { met: true, by: 'the client latencies' });
  });
});
