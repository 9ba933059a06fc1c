import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import type { KubeClient, RawWatchEvent } from '../../kube/api-client.js';
import { apiError } from '../../kube/api-errors.js';
import { GroupWatchCache } from './group-watch-cache.js';
import type { Lease } from './lease-object.js';

/** Lets the promises queued so far settle. */
const turns = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

const lease = (name: string, rv: string): Lease => ({ metadata: { name, resourceVersion: rv } });

/** A client that answers each LIST with the Leases given, and keeps each watch for the test to feed. */
function fakeClient(items: () => Lease[], listRv: () => string) {
  const log: string[] = [];
  const watches: { query: Record<string, string>; onEvent: (e: RawWatchEvent) => void; onEnd: (err?: Error) => void; aborted: boolean }[] = [];
  let refuseNextWatch: Error | null = null;
  const client = {
    request: async (method: string, path: string) => {
      log.push(`${method} ${path}`);
      return { metadata: { resourceVersion: listRv() }, items: items() };
    },
    watch: async (_path: string, query: Record<string, string>, onEvent: (e: RawWatchEvent) => void, onEnd: (err?: Error) => void) => {
      log.push(`WATCH from ${query.resourceVersion}`);
      if (refuseNextWatch) {
        const err = refuseNextWatch;
        refuseNextWatch = null;
        throw err;
      }
      const w = { query, onEvent, onEnd, aborted: false };
      watches.push(w);
      return { abort: () => void (w.aborted = true) };
    },
  } as unknown as KubeClient;
  return {
    client,
    log,
    watches,
    refuseNextWatch: (err: Error) => void (refuseNextWatch = err),
    last: () => watches[watches.length - 1]!,
  };
}

function cacheOn(client: KubeClient): GroupWatchCache {
  return new GroupWatchCache(
    client,
    '/leases',
    'leasehold.io/group=g',
    (l) => !l.metadata?.name?.startsWith('foreign'),
    () => {},
    () => {},
  );
}

const names = (c: { leases: Lease[] }) => c.leases.map((l) => l.metadata!.name).sort();

describe('GroupWatchCache', () => {
  it('lists once, then answers every read from the watch: only what changed since the cursor, a deletion in full, with no request', async (t) => {
    const fake = fakeClient(
      () => [lease('g', '3'), lease('g-member-0000', '4'), lease('foreign-x', '5')],
      () => '5',
    );
    const cache = cacheOn(fake.client);
    t.after(() => cache.close());
    const first = await cache.read(undefined);
    assert.equal(first.full, true);
    assert.deepEqual(names(first), ['g', 'g-member-0000'], 'a Lease that is not a record of the group is not kept');
    await turns();
    assert.deepEqual(fake.log, ['GET /leases?labelSelector=leasehold.io%2Fgroup%3Dg', 'WATCH from 5']);
    assert.equal(fake.last().query.allowWatchBookmarks, 'true');

    fake.last().onEvent({ type: 'MODIFIED', object: lease('g-member-0000', '6') });
    fake.last().onEvent({ type: 'ADDED', object: lease('g-shard-0001', '7') });
    const next = await cache.read(first.cursor);
    assert.deepEqual({ full: next.full, names: names(next), total: next.total }, { full: false, names: ['g-member-0000', 'g-shard-0001'], total: 3 });
    const idle = await cache.read(next.cursor);
    assert.deepEqual({ full: idle.full, names: names(idle) }, { full: false, names: [] }, 'nothing changed, yet a record came back');

    fake.last().onEvent({ type: 'DELETED', object: lease('g-shard-0001', '8') });
    const afterDelete = await cache.read(idle.cursor);
    assert.deepEqual({ full: afterDelete.full, names: names(afterDelete) }, { full: true, names: ['g', 'g-member-0000'] });
    // A cursor from another copy (another process, a restart) is not continued from.
    assert.equal((await cacheOn(fake.client).read(afterDelete.cursor)).full, true);
    assert.equal(fake.log.filter((l) => l.startsWith('GET')).length, 2, 'only the other copy listed');
  });

  it('a watch the server ended resumes from the last event or bookmark without a LIST; after 410 Gone, or a resume refused, it lists', async (t) => {
    mock.timers.enable({ apis: ['setTimeout'] });
    t.after(() => mock.timers.reset());
    let rv = '10';
    const fake = fakeClient(
      () => [lease('g', rv)],
      () => rv,
    );
    const cache = cacheOn(fake.client);
    t.after(() => cache.close());
    const hints: number[] = [];
    cache.subscribe(() => hints.push(1));
    const first = await cache.read(undefined);
    await turns();
    fake.last().onEvent({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '15' } } });
    fake.last().onEnd(); // the server's timeout
    mock.timers.tick(5_000);
    await turns();
    assert.deepEqual(fake.log.slice(1), ['WATCH from 10', 'WATCH from 15'], 'the resume starts from the bookmark, with no LIST');
    assert.equal((await cache.read(first.cursor)).full, false, 'a resume is not a relist: the cursor still continues');

    fake.last().onEnd(apiError(410, 'too old resource version: 15 (40)', 'Expired'));
    rv = '40';
    mock.timers.tick(5_000);
    await turns();
    assert.deepEqual(fake.log.slice(3), ['GET /leases?labelSelector=leasehold.io%2Fgroup%3Dg', 'WATCH from 40']);
    assert.equal((await cache.read(first.cursor)).full, true, 'after a relist every caller reads in full');

    fake.last().onEnd();
    fake.refuseNextWatch(apiError(410, 'too old resource version', 'Expired'));
    rv = '50';
    mock.timers.tick(5_000);
    await turns();
    mock.timers.tick(5_000);
    await turns();
    assert.deepEqual(fake.log.slice(5), ['WATCH from 40', 'GET /leases?labelSelector=leasehold.io%2Fgroup%3Dg', 'WATCH from 50']);
    assert.ok(hints.length >= 3, 'each (re)connect is a hint');
  });

  it("a read waits until the watch has brought this store's own last write", async (t) => {
    const fake = fakeClient(
      () => [lease('g', '3')],
      () => '3',
    );
    const cache = cacheOn(fake.client);
    t.after(() => cache.close());
    const first = await cache.read(undefined);
    await turns();
    cache.wrote('9'); // our heartbeat's answer, before its event
    let answered: { leases: Lease[] } | null = null;
    const pending = cache.read(first.cursor).then((c) => (answered = c));
    await turns();
    assert.equal(answered, null, 'answered from a copy without our own write: the member would read its write undone');
    fake.last().onEvent({ type: 'MODIFIED', object: lease('g-member-0000', '9') });
    await pending;
    assert.deepEqual(names(answered!), ['g-member-0000']);
    // Bounded by the caller's signal.
    cache.wrote('12');
    await assert.rejects(cache.read(first.cursor, AbortSignal.abort()));
  });
});
