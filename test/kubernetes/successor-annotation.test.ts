import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { freshNamespace, kubectl, rawLease, storeFor } from '../support/kube.js';
import type { VersionedRecord, WatchEvent } from '../../src/backends/lease-store.js';
import { leaseRecord } from '../support/lease-record.js';
import { waitFor } from '../support/cli.js';

// The successor claim as the leasehold.io/successor annotation, on a real kube-apiserver: the
// store owns that one annotation and nothing else on the Lease's metadata.
const claimedAt = new Date('2026-12-02T09:15:26.456Z');
const rec = leaseRecord;
const KEY = 'leasehold.io/successor';

function metadataOf(ns: string, name: string): { annotations: Record<string, string>; labels: Record<string, string> } {
  const m = rawLease(ns, name).metadata as { annotations?: Record<string, string>; labels?: Record<string, string> };
  return { annotations: m.annotations ?? {}, labels: m.labels ?? {} };
}

describe('the successor claim as a Lease annotation', () => {
  let ns = '';
  before(async () => {
    ns = await freshNamespace('successor');
  });

  it("a claim write and a claim clear keep a neighbour's annotations and labels", async () => {
    const s = storeFor(ns);
    try {
      await s.create('n1', rec());
      kubectl(['annotate', 'lease', 'n1', '-n', ns, 'example.com/owner=team-a', 'note=keep me']);
      kubectl(['label', 'lease', 'n1', '-n', ns, 'app=web', 'tier=backend']);
      const neighbours = metadataOf(ns, 'n1');

      const read = (await s.get('n1'))!;
      const v2 = await s.update('n1', rec({ successor: { identity: 'b', claimedAt } }), read.version);
      const claimed = metadataOf(ns, 'n1');
      assert.deepEqual(claimed.labels, neighbours.labels);
      assert.deepEqual(claimed.annotations, { ...neighbours.annotations, [KEY]: '{"identity":"b","claimedAt":"2026-12-02T09:15:26.456Z"}' });

      await s.update('n1', rec({ successor: null }), v2);
      assert.deepEqual(metadataOf(ns, 'n1'), neighbours, 'only our annotation is removed');
      assert.equal(Object.hasOwn((await s.get('n1'))!.record, 'successor'), false);
    } finally {
      await s.close();
    }
  });

  it('an annotation that is not a well-formed claim reads as no claim; the lease itself is still read', async () => {
    const s = storeFor(ns);
    const watched: WatchEvent[] = [];
    let healthy = false;
    const stop = s.watch(
      'n2',
      (e) => watched.push(e),
      (h) => (healthy = h),
    );
    try {
      await s.create('n2', rec({ leaseTransitions: 4 }));
      await waitFor('the watch to connect', () => healthy, 10_000);
      const annotate = async (value: string): Promise<{ got: VersionedRecord; event: VersionedRecord }> => {
        kubectl(['annotate', '--overwrite', 'lease', 'n2', '-n', ns, `${KEY}=${value}`]);
        const got = (await s.get('n2'))!;
        const event = await waitFor(
          `a watch event for ${value}`,
          () => watched.map((e) => e.record).find((r): r is VersionedRecord => !!r && r.version === got.version),
          10_000,
        );
        return { got, event };
      };

      // Well-formed, written by someone else (a client-go peer has no part in it): read as a claim.
      const good = await annotate('{"identity":"b","claimedAt":"2026-12-02T09:15:26.456Z"}');
      assert.deepEqual(good.got.record, rec({ leaseTransitions: 4, successor: { identity: 'b', claimedAt } }));
      assert.deepEqual(good.event.record, good.got.record, 'a watch event carries the claim too');

      const malformed = [
        'not json',
        'null',
        '"b"',
        '["b","2026-12-02T09:15:26.456Z"]',
        '{}',
        '{"identity":"b"}',
        '{"identity":5,"claimedAt":"2026-12-02T09:15:26.456Z"}',
        '{"identity":"b","claimedAt":1796202926456}',
        '{"identity":"b","claimedAt":"yesterday"}',
        '{"identity":"b","claimedAt":"2026-13-45T09:15:26.456Z"}',
        '{"identity":"b","claimedAt":"Wed, 02 Dec 2026 09:15:26 GMT"}',
        '{"identity":"","claimedAt":"2026-12-02T09:15:26.456Z"}',
        '{"identity":"   ","claimedAt":"2026-12-02T09:15:26.456Z"}',
        '{"identity":"b\\nc","claimedAt":"2026-12-02T09:15:26.456Z"}',
        `{"identity":"${'x'.repeat(254)}","claimedAt":"2026-12-02T09:15:26.456Z"}`,
      ];
      for (const value of malformed) {
        const { got, event } = await annotate(value);
        assert.deepEqual(got.record, rec({ leaseTransitions: 4 }), `get of ${value}`);
        assert.equal(Object.hasOwn(got.record, 'successor'), false, `no successor key for ${value}`);
        assert.deepEqual(event.record, got.record, `watch event of ${value}`);
      }
    } finally {
      stop();
      await s.close();
    }
  });
});
