/**
 * The LeaseStore contract (src/backends/lease-store.ts) as one suite, run against every store
 * the way apiserver's storage/testing runs one suite against every storage backend:
 * - the in-memory store: src/testing/memory-store.contract.test.ts;
 * - SQLite, on a real file: src/backends/sqlite/store.contract.test.ts;
 * - PostgreSQL, on a real server: test/postgres/store.contract.test.ts;
 * - Kubernetes, on a real API server: test/kubernetes/store.contract.test.ts.
 * A store that breaks a promise here breaks the elector, which relies on nothing else.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { LeaseRecord, LeaseStore, WatchEvent } from '../backends/lease-store.js';
import { codeOf, until } from './contract-helpers.js';

/** One store under test, plus a second writer that reaches the same leases another way. */
export interface ContractSubject {
  store: LeaseStore;
  /** Another writer replaces the record (not through `store`), as a peer would. */
  writeElsewhere(name: string, record: LeaseRecord): Promise<void>;
  /** Another writer deletes the record (a `kubectl delete`, a `DELETE FROM`). */
  deleteElsewhere(name: string): Promise<void>;
  /** Frees what the subject opened (files, clients). */
  close(): Promise<void>;
}

const at = new Date('2026-12-02T09:15:24.123Z');
const later = new Date('2026-12-02T09:15:26.456Z');
const contractRecord = (over: Partial<LeaseRecord> = {}): LeaseRecord => ({
  holderIdentity: 'a',
  leaseDurationSeconds: 15,
  acquireTime: at,
  renewTime: at,
  leaseTransitions: 1,
  ...over,
});

export function leaseStoreContract(storeName: string, open: () => Promise<ContractSubject>): void {
  describe(`LeaseStore contract: ${storeName}`, () => {
    let subject: ContractSubject;
    let s: LeaseStore;
    let n = 0;
    /** A lease name no other case uses, so cases share one store without meeting. */
    const fresh = () => `contract-${Date.now().toString(36)}-${n++}`;

    before(async () => {
      subject = await open();
      s = subject.store;
    });
    after(async () => {
      await subject.close();
    });

    it('get of a lease never written is null', async () => {
      assert.equal(await s.get(fresh()), null);
    });

    it('create, then get returns the record field for field (times to the millisecond) with the version create returned', async () => {
      const name = fresh();
      const version = await s.create(name, contractRecord());
      assert.equal(typeof version, 'string');
      assert.notEqual(version, '');
      const got = await s.get(name);
      assert.deepEqual(got, { record: contractRecord(), version });
    });

    it('a released record round-trips: empty holder, null acquireTime', async () => {
      const name = fresh();
      const released = contractRecord({ holderIdentity: '', leaseDurationSeconds: 1, acquireTime: null, leaseTransitions: 7 });
      await s.create(name, released);
      assert.deepEqual((await s.get(name))!.record, released);
    });

    it('the largest token the store declares (maxToken, else 2^53 − 1) round-trips', async () => {
      const name = fresh();
      const max = s.maxToken ?? Number.MAX_SAFE_INTEGER;
      await s.create(name, contractRecord({ leaseTransitions: max }));
      assert.equal((await s.get(name))!.record.leaseTransitions, max);
    });

    it('create of an existing lease is a ConflictError and changes nothing', async () => {
      const name = fresh();
      const version = await s.create(name, contractRecord());
      assert.equal(await codeOf(s.create(name, contractRecord({ holderIdentity: 'b' }))), 'LEASEHOLD_ERR_CONFLICT');
      assert.deepEqual(await s.get(name), { record: contractRecord(), version });
    });

    it('update from the current version replaces the record and returns a new version', async () => {
      const name = fresh();
      const v1 = await s.create(name, contractRecord());
      const next = contractRecord({ renewTime: later });
      const v2 = await s.update(name, next, v1);
      assert.notEqual(v2, v1);
      assert.deepEqual(await s.get(name), { record: next, version: v2 });
    });

    // A write of the very values held may keep the version (the API server persists no no-op
    // update, so its resourceVersion stays). A compare-and-swap carrying it then succeeds, and
    // rightly: nothing was written between, so the record is what its caller read.
    it('a write of the very values held may keep the version; one that changes a value changes it', async () => {
      const name = fresh();
      const v1 = await s.create(name, contractRecord());
      const v2 = await s.update(name, contractRecord(), v1);
      assert.deepEqual(await s.get(name), { record: contractRecord(), version: v2 }, 'the same record, the version it returned (v1 or a new one)');
      const v3 = await s.update(name, contractRecord({ renewTime: later }), v2);
      assert.ok(v3 !== v1 && v3 !== v2, `a changed value changes the version (v1 ${v1}, v2 ${v2}, v3 ${v3})`);
      for (const stale of [v1, v2]) {
        assert.equal(await codeOf(s.update(name, contractRecord({ holderIdentity: 'c' }), stale)), 'LEASEHOLD_ERR_CONFLICT', `stale version ${stale}`);
      }
      assert.deepEqual(await s.get(name), { record: contractRecord({ renewTime: later }), version: v3 });
    });

    // The ABA case of a compare-and-swap: values written back after a change are a new state
    // of the record, and a caller that read the first must not win over the change between.
    it('values written back after a change (A, B, A) get a new version: the first A is stale', async () => {
      const name = fresh();
      const a = await s.create(name, contractRecord());
      const b = await s.update(name, contractRecord({ holderIdentity: 'b', renewTime: later }), a);
      const aAgain = await s.update(name, contractRecord(), b);
      assert.notEqual(aAgain, a, 'the version of A written back is the version A had before B');
      assert.equal(await codeOf(s.update(name, contractRecord({ holderIdentity: 'c' }), a)), 'LEASEHOLD_ERR_CONFLICT');
      assert.deepEqual(await s.get(name), { record: contractRecord(), version: aAgain });
    });

    it('a record deleted and re-created with the very same values gets a new version', async () => {
      const name = fresh();
      const before = await s.create(name, contractRecord());
      await subject.deleteElsewhere(name);
      const after = await s.create(name, contractRecord());
      assert.notEqual(after, before, 'the re-created record has the version it had before the deletion');
      assert.equal(await codeOf(s.update(name, contractRecord({ holderIdentity: 'c' }), before)), 'LEASEHOLD_ERR_CONFLICT');
    });

    it('update from a version another writer has replaced is a ConflictError; the other write is kept', async () => {
      const name = fresh();
      const v1 = await s.create(name, contractRecord());
      const theirs = contractRecord({ holderIdentity: 'b', renewTime: later, leaseTransitions: 2 });
      await subject.writeElsewhere(name, theirs);
      assert.equal(await codeOf(s.update(name, contractRecord({ holderIdentity: 'c' }), v1)), 'LEASEHOLD_ERR_CONFLICT');
      assert.deepEqual((await s.get(name))!.record, theirs);
    });

    it('update of a record deleted since it was read is a ConflictError, and recreates nothing', async () => {
      const name = fresh();
      const v1 = await s.create(name, contractRecord());
      await subject.deleteElsewhere(name);
      assert.equal(await codeOf(s.update(name, contractRecord({ renewTime: later }), v1)), 'LEASEHOLD_ERR_CONFLICT');
      assert.equal(await s.get(name), null);
    });

    it('update of a deleted record that the store has since read as absent is a ConflictError too', async () => {
      const name = fresh();
      const v1 = await s.create(name, contractRecord());
      await subject.deleteElsewhere(name);
      assert.equal(await s.get(name), null);
      assert.equal(await codeOf(s.update(name, contractRecord({ renewTime: later }), v1)), 'LEASEHOLD_ERR_CONFLICT');
      assert.equal(await s.get(name), null);
    });

    it('a version read before the record was deleted and re-created never comes back: an update carrying it is a ConflictError', async () => {
      const name = fresh();
      // Versions a candidate may hold from before the deletion: the create and two renewals.
      const stale = [await s.create(name, contractRecord())];
      for (const ms of [1_000, 2_000]) stale.push(await s.update(name, contractRecord({ renewTime: new Date(at.getTime() + ms) }), stale.at(-1)!));
      await subject.deleteElsewhere(name);
      // Another candidate re-creates it with a later token and renews it as often as before.
      const theirs = (ms: number) =>
        contractRecord({ holderIdentity: 'c', acquireTime: later, renewTime: new Date(later.getTime() + ms), leaseTransitions: 3 });
      let version = await s.create(name, theirs(0));
      for (const ms of [1_000, 2_000, 3_000]) {
        assert.ok(!stale.includes(version), `version ${version} of the re-created record was issued before the deletion too`);
        version = await s.update(name, theirs(ms), version);
      }
      assert.ok(!stale.includes(version), `version ${version} of the re-created record was issued before the deletion too`);
      for (const old of stale) {
        assert.equal(await codeOf(s.update(name, contractRecord({ leaseTransitions: 2, renewTime: later }), old)), 'LEASEHOLD_ERR_CONFLICT');
      }
      assert.deepEqual(await s.get(name), { record: theirs(3_000), version });
    });

    it('update of a lease that never existed, with a version from another lease, is a ConflictError and creates nothing', async () => {
      const other = fresh();
      const foreign = await s.create(other, contractRecord());
      const name = fresh();
      assert.equal(await codeOf(s.update(name, contractRecord(), foreign)), 'LEASEHOLD_ERR_CONFLICT');
      assert.equal(await s.get(name), null);
    });

    it('leases are independent: writing one leaves the other and its version alone', async () => {
      const a = fresh();
      const b = fresh();
      await s.create(a, contractRecord());
      const vb = await s.create(b, contractRecord({ holderIdentity: 'b' }));
      const va = (await s.get(a))!.version;
      await s.update(a, contractRecord({ renewTime: later }), va);
      assert.deepEqual(await s.get(b), { record: contractRecord({ holderIdentity: 'b' }), version: vb });
    });

    it('a call on an aborted signal rejects and writes nothing', async () => {
      const name = fresh();
      const aborted = AbortSignal.abort(new Error('cancelled by the test'));
      await assert.rejects(s.create(name, contractRecord(), { signal: aborted }));
      assert.equal(await s.get(name), null);
      const v1 = await s.create(name, contractRecord());
      await assert.rejects(s.update(name, contractRecord({ renewTime: later }), v1, { signal: aborted }));
      await assert.rejects(s.get(name, { signal: aborted }));
      assert.deepEqual(await s.get(name), { record: contractRecord(), version: v1 });
    });

    it('waitForLock false changes no answer where no lock is held: create and compare-and-swap as without it', async () => {
      const name = fresh();
      const noWait = { waitForLock: false };
      const v1 = await s.create(name, contractRecord(), noWait);
      assert.equal(await codeOf(s.create(name, contractRecord(), noWait)), 'LEASEHOLD_ERR_CONFLICT');
      const v2 = await s.update(name, contractRecord({ renewTime: later }), v1, noWait);
      assert.equal(await codeOf(s.update(name, contractRecord(), v1, noWait)), 'LEASEHOLD_ERR_CONFLICT');
      assert.deepEqual(await s.get(name), { record: contractRecord({ renewTime: later }), version: v2 });
    });

    it('a successor claim, where the store keeps one, round-trips; a claim-only update moves the version; null clears it', async (t) => {
      if (!s.successorClaims?.kept()) {
        t.skip(`${storeName} keeps no successor`);
        return;
      }
      const name = fresh();
      const claim = { identity: 'b', claimedAt: later };
      const v1 = await s.create(name, contractRecord({ successor: claim }));
      assert.deepEqual(await s.get(name), { record: contractRecord({ successor: claim }), version: v1 });
      const moved = { identity: 'c', claimedAt: new Date(later.getTime() + 1) };
      const v2 = await s.update(name, contractRecord({ successor: moved }), v1);
      assert.notEqual(v2, v1, 'a write that changes only the successor is still a write');
      assert.deepEqual(await s.get(name), { record: contractRecord({ successor: moved }), version: v2 });
      await assert.rejects(s.update(name, contractRecord(), v1), { code: 'LEASEHOLD_ERR_CONFLICT' });
      const v3 = await s.update(name, contractRecord({ successor: null }), v2);
      // No claim reads back as no field at all, as a record written without one.
      assert.deepEqual(await s.get(name), { record: contractRecord(), version: v3 });
    });

    it('a record written without a successor reads back without the field', async () => {
      const name = fresh();
      const v1 = await s.create(name, contractRecord());
      const got = await s.get(name);
      assert.deepEqual(got, { record: contractRecord(), version: v1 });
      assert.equal(Object.hasOwn(got.record, 'successor'), false);
    });

    it("watch, where a store has one, reports another writer's change and a deletion, and stops when told", async (t) => {
      if (!s.watch) {
        t.skip(`${storeName} has no watch`);
        return;
      }
      const name = fresh();
      await s.create(name, contractRecord());
      const events: WatchEvent[] = [];
      let healthy = false;
      const stop = s.watch(
        name,
        (e) => events.push(e),
        (h) => (healthy = h),
      );
      try {
        // A store that reports health is connected once it says so; changes before that may be lost.
        await until('the watch to connect', () => (healthy || s.backend !== 'kubernetes' ? true : undefined));
        const theirs = contractRecord({ holderIdentity: 'b', renewTime: later, leaseTransitions: 2 });
        await subject.writeElsewhere(name, theirs);
        const seen = await until('an event for the change', () =>
          events.find((e) => e.record === undefined || (e.record !== null && e.record.record.holderIdentity === 'b')),
        );
        if (seen.record) assert.deepEqual(seen.record.record, theirs, 'a record carried by an event is the record as written');
        const before = events.length;
        await subject.deleteElsewhere(name);
        const gone = await until('an event for the deletion', () => events.slice(before).find((e) => e.record === null || e.record === undefined));
        if (gone.deleted) assert.equal(gone.deleted.leaseTransitions, 2, 'a deletion carries the last token when it carries a record');
      } finally {
        stop();
      }
      // A stopped watch stays silent: a second watch, opened before the next write, sees that
      // write; the first, had it still been running, would have seen it as well.
      const stoppedAt = events.length;
      const witness: WatchEvent[] = [];
      let witnessHealthy = false;
      const stopWitness = s.watch(
        name,
        (e) => witness.push(e),
        (h) => (witnessHealthy = h),
      );
      try {
        await until('the second watch to connect', () => (witnessHealthy || s.backend !== 'kubernetes' ? true : undefined));
        const mark = witness.length;
        await subject.writeElsewhere(name, contractRecord({ holderIdentity: 'c', leaseTransitions: 3 }));
        await until('the second watch to see the write', () => (witness.length > mark ? true : undefined));
      } finally {
        stopWitness();
      }
      assert.equal(events.length, stoppedAt, 'no events after stop');
    });
  });
}

/** writeElsewhere through a second store on the same leases (another process's connection). */
export async function upsertThrough(other: LeaseStore, name: string, record: LeaseRecord): Promise<void> {
  const current = await other.get(name);
  if (current) await other.update(name, record, current.version);
  else await other.create(name, record);
}
