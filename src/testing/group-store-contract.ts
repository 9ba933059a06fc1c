/**
 * The GroupStore contract (src/backends/group-store.ts) as one suite, run against every store as
 * the LeaseStore contract is (lease-store-contract.ts):
 * - the in-memory store: src/testing/memory-group-store.contract.test.ts;
 * - SQLite, on a real file: src/backends/sqlite/group-store.contract.test.ts;
 * - PostgreSQL, on a real server: test/postgres/group-store.contract.test.ts;
 * - Kubernetes, on a real API server: test/kubernetes/group-store.contract.test.ts.
 * The shard group's algorithm (src/shards/) relies on nothing else: a store that breaks a
 * promise here can give a shard two owners, or one token twice.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_MEMBER_SLOTS, MAX_SHARDS, recordKey } from '../backends/group-store.js';
import type { GroupChanges, GroupHeader, GroupRecord, GroupStore, MemberSlot, ShardRecord, VersionedGroupRecord } from '../backends/group-store.js';
import { MAX_GROUP_IDENTITY } from '../backends/group-record-check.js';
import { codeOf, until } from './contract-helpers.js';

/** One group store under test, plus a second writer that reaches the same records another way. */
export interface GroupContractSubject {
  store: GroupStore;
  /** Another writer creates or replaces the record (not through `store`), as a peer would. */
  writeElsewhere(group: string, record: GroupRecord): Promise<void>;
  /** Another writer deletes the record (a `kubectl delete`, a `DELETE FROM`). */
  deleteElsewhere(group: string, key: Pick<GroupRecord, 'kind' | 'index'>): Promise<void>;
  /**
   * The store's watch says when it is connected (onHealth(true)), and changes before that may be
   * lost (a Kubernetes watch, a PostgreSQL LISTEN): the suite waits for it before it writes.
   */
  watchConnects?: boolean;
  /**
   * Another instance of the store on the same records, as the process restarted would open
   * (readGroupChanges' cursor from before a restart); the subject's close() frees it.
   */
  reopen?(): Promise<GroupStore>;
  /** Frees what the subject opened (files, clients). */
  close(): Promise<void>;
}

const at = new Date('2026-12-02T09:15:24.123Z');
const later = new Date('2026-12-02T09:15:26.456Z');

export const contractHeader = (over: Partial<GroupHeader> = {}): GroupHeader => ({ kind: 'group', index: 0, shards: 16, createdAt: at, ...over });
export const contractSlot = (index: number, over: Partial<Omit<MemberSlot, 'kind' | 'index'>> = {}): MemberSlot => ({
  kind: 'member',
  index,
  holderIdentity: 'a',
  session: 1,
  state: 'active',
  renewTime: at,
  leaseDurationSeconds: 15,
  ...over,
});
export const contractShard = (index: number, over: Partial<Omit<ShardRecord, 'kind' | 'index'>> = {}): ShardRecord => ({
  kind: 'shard',
  index,
  holderIdentity: 'a',
  owner: { slot: 0, session: 1 },
  token: 1,
  acquireTime: at,
  ...over,
});

/** A list in key order, so lists compare whatever order a store returns. */
function sorted(list: VersionedGroupRecord[]): VersionedGroupRecord[] {
  const order = (r: GroupRecord) => `${r.kind}/${String(r.index).padStart(5, '0')}`;
  return [...list].sort((a, b) => (order(a.record) < order(b.record) ? -1 : 1));
}

function find(list: VersionedGroupRecord[], key: Pick<GroupRecord, 'kind' | 'index'>): VersionedGroupRecord | undefined {
  return list.find((r) => recordKey(r.record) === recordKey(key));
}

export function groupStoreContract(storeName: string, open: () => Promise<GroupContractSubject>): void {
  describe(`GroupStore contract: ${storeName}`, () => {
    let subject: GroupContractSubject;
    let s: GroupStore;
    let n = 0;
    /** A group name no other case uses, so cases share one store without meeting. */
    const fresh = () => `contract-${Date.now().toString(36)}-${n++}`;
    const one = async (group: string, key: Pick<GroupRecord, 'kind' | 'index'>) => find(await s.listGroup(group), key);

    before(async () => {
      subject = await open();
      s = subject.store;
    });
    after(async () => {
      await subject.close();
    });

    it('list of a group never written is empty', async () => {
      assert.deepEqual(await s.listGroup(fresh()), []);
    });

    it('create of each kind, then one list returns every record field for field (times to the millisecond) with the version its create returned', async () => {
      const g = fresh();
      const records: GroupRecord[] = [
        contractHeader(),
        contractSlot(0),
        contractSlot(3, { holderIdentity: 'b', session: 4 }),
        contractShard(0),
        contractShard(15),
      ];
      const expected: VersionedGroupRecord[] = [];
      for (const r of records) {
        const version = await s.createGroupRecord(g, r);
        assert.equal(typeof version, 'string');
        assert.notEqual(version, '');
        expected.push({ record: r, version });
      }
      assert.deepEqual(sorted(await s.listGroup(g)), sorted(expected));
    });

    it('free records round-trip: an empty holder, a null owner, null times, a leaving member', async () => {
      const g = fresh();
      const records: GroupRecord[] = [
        contractSlot(1, { holderIdentity: '', session: 0, renewTime: null, state: 'leaving', leaseDurationSeconds: 1 }),
        contractSlot(2, { state: 'leaving' }),
        contractShard(1, { holderIdentity: '', owner: null, token: 7, acquireTime: null }),
        contractShard(2, { holderIdentity: '', owner: null, token: 0, acquireTime: null }),
      ];
      for (const r of records) await s.createGroupRecord(g, r);
      assert.deepEqual(
        sorted(await s.listGroup(g)).map((r) => r.record),
        sorted(records.map((record) => ({ record, version: '' }))).map((r) => r.record),
      );
    });

    it("the largest values round-trip: tokens and sessions at the store's maxToken, the last indexes, every shard count, the longest identity", async () => {
      const g = fresh();
      const max = s.maxToken ?? Number.MAX_SAFE_INTEGER;
      // The longest identity, with characters of 2, 3 and 4 bytes in UTF-8.
      const longest = `é€😀${'x'.repeat(MAX_GROUP_IDENTITY - 4)}`;
      assert.equal(longest.length, MAX_GROUP_IDENTITY);
      const records: GroupRecord[] = [
        contractHeader({ shards: MAX_SHARDS }),
        contractSlot(MAX_MEMBER_SLOTS - 1, { session: max, holderIdentity: longest, leaseDurationSeconds: 86_400 }),
        contractShard(MAX_SHARDS - 1, { token: max, owner: { slot: MAX_MEMBER_SLOTS - 1, session: max }, holderIdentity: longest }),
      ];
      for (const r of records) await s.createGroupRecord(g, r);
      assert.deepEqual(
        sorted(await s.listGroup(g)).map((r) => r.record),
        sorted(records.map((record) => ({ record, version: '' }))).map((r) => r.record),
      );
      const small = fresh();
      await s.createGroupRecord(small, contractHeader({ shards: 1 }));
      assert.deepEqual(
        (await s.listGroup(small)).map((r) => r.record),
        [contractHeader({ shards: 1 })],
      );
    });

    it('a record past a bound is refused with a coded error and nothing is written', async () => {
      const g = fresh();
      const max = s.maxToken ?? Number.MAX_SAFE_INTEGER;
      const refused: GroupRecord[] = [
        contractSlot(0, { holderIdentity: 'x'.repeat(MAX_GROUP_IDENTITY + 1) }),
        contractSlot(0, { holderIdentity: 'a\nforged line' }),
        contractSlot(0, { session: max + 1 }),
        contractSlot(0, { session: -1 }),
        contractSlot(0, { session: 1.5 }),
        contractSlot(0, { leaseDurationSeconds: 0 }),
        contractSlot(MAX_MEMBER_SLOTS),
        contractSlot(0, { state: 'gone' as MemberSlot['state'] }),
        contractShard(MAX_SHARDS),
        contractShard(0, { token: max + 1 }),
        contractShard(0, { owner: { slot: 0, session: max + 1 } }),
        contractShard(0, { acquireTime: new Date(Number.NaN) }),
        contractHeader({ shards: 0 }),
        contractHeader({ shards: MAX_SHARDS + 1 }),
      ];
      for (const r of refused) {
        assert.equal(await codeOf(s.createGroupRecord(g, r)), 'LEASEHOLD_ERR_INVALID_RECORD', `create of ${JSON.stringify(r)}`);
      }
      assert.deepEqual(await s.listGroup(g), []);
      const version = await s.createGroupRecord(g, contractSlot(0));
      for (const r of refused.filter((r) => r.kind === 'member' && r.index === 0)) {
        assert.equal(await codeOf(s.updateGroupRecord(g, r, version)), 'LEASEHOLD_ERR_INVALID_RECORD', `update to ${JSON.stringify(r)}`);
      }
      assert.deepEqual(await s.listGroup(g), [{ record: contractSlot(0), version }]);
    });

    it('a group name that breaks the rule is refused by every call (LEASEHOLD_ERR_INVALID_CONFIG, field group) and nothing is written', async () => {
      for (const bad of ['', 'Upper', 'a_b', 'a b', '-a', 'a'.repeat(254)]) {
        for (const call of [s.listGroup(bad), s.createGroupRecord(bad, contractSlot(0)), s.updateGroupRecord(bad, contractSlot(0), '1')]) {
          await assert.rejects(call, (err: { code?: string; field?: string }) => err.code === 'LEASEHOLD_ERR_INVALID_CONFIG' && err.field === 'group');
        }
      }
    });

    it("a list never holds another group's records, whatever the names have in common", async () => {
      const base = fresh();
      // Prefixes of one another, and a group named as another's member record would be.
      const groups = [base, `${base}-x`, `${base}.x`, `${base}-member`, `${base}x`];
      const versions = new Map<string, string>();
      for (const [i, g] of groups.entries()) {
        versions.set(g, await s.createGroupRecord(g, contractSlot(1, { holderIdentity: `holder-${i}` })));
        await s.createGroupRecord(g, contractShard(1, { holderIdentity: `holder-${i}` }));
      }
      for (const [i, g] of groups.entries()) {
        const list = await s.listGroup(g);
        assert.equal(list.length, 2, `group ${g} lists ${JSON.stringify(list)}`);
        for (const r of list) assert.equal((r.record as MemberSlot).holderIdentity, `holder-${i}`);
      }
      // A write in one leaves the same key of the others, and its version, alone.
      await s.updateGroupRecord(base, contractSlot(1, { holderIdentity: 'moved', renewTime: later }), versions.get(base)!);
      for (const g of groups.slice(1)) assert.equal((await one(g, { kind: 'member', index: 1 }))?.version, versions.get(g));
    });

    it('the same index in another kind is another record: a header, member 0 and shard 0 live side by side', async () => {
      const g = fresh();
      const vh = await s.createGroupRecord(g, contractHeader());
      const vm = await s.createGroupRecord(g, contractSlot(0));
      const vs = await s.createGroupRecord(g, contractShard(0));
      assert.deepEqual(
        sorted(await s.listGroup(g)),
        sorted([
          { record: contractHeader(), version: vh },
          { record: contractSlot(0), version: vm },
          { record: contractShard(0), version: vs },
        ]),
      );
    });

    it('create of an existing kind and index is a ConflictError and changes nothing', async () => {
      const g = fresh();
      const versions = [
        await s.createGroupRecord(g, contractHeader()),
        await s.createGroupRecord(g, contractSlot(2)),
        await s.createGroupRecord(g, contractShard(5)),
      ];
      const before = sorted(await s.listGroup(g));
      for (const r of [contractHeader({ shards: 32 }), contractSlot(2, { holderIdentity: 'b' }), contractShard(5, { holderIdentity: 'b', token: 2 })]) {
        assert.equal(await codeOf(s.createGroupRecord(g, r)), 'LEASEHOLD_ERR_CONFLICT', `create of ${recordKey(r)} again`);
      }
      assert.deepEqual(sorted(await s.listGroup(g)), before);
      assert.deepEqual(before.map((r) => r.version).sort(), [...versions].sort());
    });

    it('update from the current version replaces the record and returns a new version', async () => {
      const g = fresh();
      const v1 = await s.createGroupRecord(g, contractShard(3));
      const next = contractShard(3, { holderIdentity: 'b', owner: { slot: 2, session: 9 }, token: 2, acquireTime: later });
      const v2 = await s.updateGroupRecord(g, next, v1);
      assert.notEqual(v2, v1);
      assert.deepEqual(await s.listGroup(g), [{ record: next, version: v2 }]);
      const free = contractShard(3, { holderIdentity: '', owner: null, token: 2, acquireTime: null });
      const v3 = await s.updateGroupRecord(g, free, v2);
      assert.deepEqual(await s.listGroup(g), [{ record: free, version: v3 }]);
    });

    it("the header's highWater: absent reads absent (a header from before it), written reads back up to maxToken, and a raise from a stale version is a ConflictError that keeps the other raise", async () => {
      const g = fresh();
      const max = s.maxToken ?? Number.MAX_SAFE_INTEGER;
      const v1 = await s.createGroupRecord(g, contractHeader());
      const old = await one(g, { kind: 'group', index: 0 });
      assert.deepEqual(old?.record, contractHeader(), 'a header written without highWater must read without it');
      assert.equal('highWater' in (old?.record ?? {}), false);
      const v2 = await s.updateGroupRecord(g, contractHeader({ highWater: 32 }), v1);
      assert.deepEqual(await s.listGroup(g), [{ record: contractHeader({ highWater: 32 }), version: v2 }]);
      // Two members raise it from the same version: one wins, the other must re-read.
      await subject.writeElsewhere(g, contractHeader({ highWater: 48 }));
      assert.equal(await codeOf(s.updateGroupRecord(g, contractHeader({ highWater: 40 }), v2)), 'LEASEHOLD_ERR_CONFLICT');
      const now = await one(g, { kind: 'group', index: 0 });
      assert.deepEqual(now?.record, contractHeader({ highWater: 48 }));
      const v3 = await s.updateGroupRecord(g, contractHeader({ highWater: max }), now.version);
      assert.deepEqual((await one(g, { kind: 'group', index: 0 }))?.record, contractHeader({ highWater: max }));
      assert.equal(await codeOf(s.updateGroupRecord(g, contractHeader({ highWater: -1 }), v3)), 'LEASEHOLD_ERR_INVALID_RECORD');
      assert.deepEqual(await s.listGroup(g), [{ record: contractHeader({ highWater: max }), version: v3 }]);
    });

    it("the header's raise in one transaction, where the store has it: from the larger of highWater and atLeast, blocks that never overlap, refusals that write nothing", async (t) => {
      if (!s.raiseHighWater) return t.skip('this store raises the header by compare-and-swap only (updateGroupRecord)');
      const raise = s.raiseHighWater.bind(s);
      const g = fresh();
      const header = (over: Partial<GroupHeader> = {}) => contractHeader({ longestLeaseSeconds: 30, ...over });
      assert.equal(await codeOf(raise(g, { atLeast: 0, count: 1, shards: 16 })), 'LEASEHOLD_ERR_NOT_FOUND', 'no header: nothing to raise');
      assert.deepEqual(await s.listGroup(g), [], 'and nothing written');
      const v1 = await s.createGroupRecord(g, header());
      // A header from before highWater: the raise starts at atLeast, every other field as stored.
      const first = await raise(g, { atLeast: 5, count: 3, shards: 16 });
      assert.equal(first.from, 5);
      assert.deepEqual(first.header.record, header({ highWater: 8 }));
      assert.deepEqual(await s.listGroup(g), [first.header], 'the header as the raise answered it, version included');
      assert.equal(
        await codeOf(s.updateGroupRecord(g, header({ highWater: 100 }), v1)),
        'LEASEHOLD_ERR_CONFLICT',
        'a raise is a write: the version before it is stale',
      );
      // atLeast below the stored highWater: the stored one wins.
      const second = await raise(g, { atLeast: 2, count: 2, shards: 16 });
      assert.deepEqual([second.from, second.header.record.highWater], [8, 10]);
      for (const [bad, code] of [
        [{ atLeast: 0, count: 1, shards: 8 }, 'LEASEHOLD_ERR_CONFLICT'],
        [{ atLeast: (s.maxToken ?? Number.MAX_SAFE_INTEGER) - 1, count: 2, shards: 16 }, 'LEASEHOLD_ERR_INVALID_RECORD'],
        [{ atLeast: 0, count: 0, shards: 16 }, 'LEASEHOLD_ERR_INVALID_RECORD'],
        [{ atLeast: -1, count: 1, shards: 16 }, 'LEASEHOLD_ERR_INVALID_RECORD'],
      ] as const) {
        assert.equal(await codeOf(raise(g, bad)), code, JSON.stringify(bad));
        assert.deepEqual(await s.listGroup(g), [second.header], `${JSON.stringify(bad)} wrote nothing`);
      }
      // Raises at once, through this store and another instance where the subject opens one: none lost, no two blocks share a token.
      const other = subject.reopen ? await subject.reopen() : s;
      const raises = await Promise.all(
        Array.from({ length: 12 }, (_, i) => (i % 2 ? other : s).raiseHighWater!(g, { atLeast: 0, count: 1 + (i % 3), shards: 16 })),
      );
      const blocks = raises.map((r) => [r.from, r.header.record.highWater!] as const).sort((a, b) => a[0] - b[0]);
      let next = 10;
      for (const [from, to] of blocks) {
        assert.equal(from, next, `blocks follow one another: ${JSON.stringify(blocks)}`);
        next = to;
      }
      assert.deepEqual((await one(g, { kind: 'group', index: 0 }))?.record, header({ highWater: next }), 'the last block ends at the stored highWater');
    });

    it("a raise and the takes it is for in one call, where the store has it: tokens from the block in order, a lost take's token issued to nobody, refusals that write nothing", async (t) => {
      if (!s.raiseAndTake) return t.skip('this store raises, then writes its takes (raiseHighWater, writeGroupRecords)');
      const take = s.raiseAndTake.bind(s);
      const g = fresh();
      const mine = (i: number) => contractShard(i, { holderIdentity: 'b', owner: { slot: 1, session: 2 }, token: 0 });
      assert.equal(await codeOf(take(g, { atLeast: 0, shards: 16 }, [{ record: mine(0), expectedVersion: null }])), 'LEASEHOLD_ERR_NOT_FOUND', 'no header');
      assert.deepEqual(await s.listGroup(g), [], 'and nothing written');
      await s.createGroupRecord(g, contractHeader({ highWater: 4 }));
      const v1 = await s.createGroupRecord(g, contractShard(1, { holderIdentity: '', owner: null, token: 3 }));
      const v2 = await s.createGroupRecord(g, contractShard(2, { holderIdentity: '', owner: null, token: 2 }));
      await subject.writeElsewhere(g, contractShard(2, { token: 4 })); // shard 2 taken by another since v2 was read
      const answer = await take(g, { atLeast: 6, shards: 16 }, [
        { record: mine(0), expectedVersion: null },
        { record: mine(2), expectedVersion: v2 },
        { record: mine(1), expectedVersion: v1 },
        { record: mine(3), expectedVersion: 'not-a-version' },
      ]);
      assert.equal(answer.from, 6, 'from the larger of highWater (4) and atLeast (6)');
      assert.equal(answer.header.record.highWater, 10, 'a block of one token per take, the unsent one too');
      assert.deepEqual(
        answer.outcomes.map((o) => o.written),
        [true, false, true, false],
      );
      const versions = answer.outcomes.map((o) => (o.written ? o.version : undefined));
      assert.deepEqual(sorted(await s.listGroup(g)), [
        answer.header,
        { record: contractShard(0, { holderIdentity: 'b', owner: { slot: 1, session: 2 }, token: 7 }), version: versions[0]! },
        { record: contractShard(1, { holderIdentity: 'b', owner: { slot: 1, session: 2 }, token: 9 }), version: versions[2]! },
        (await one(g, { kind: 'shard', index: 2 }))!,
      ]);
      assert.deepEqual(
        (await one(g, { kind: 'shard', index: 2 }))?.record,
        contractShard(2, { token: 4 }),
        "the lost take left the other's write; its token 8 is issued to nobody, nor 10, the one of a version this store never issued",
      );
      const before = sorted(await s.listGroup(g));
      for (const [raise, takes, code] of [
        [{ atLeast: 0, shards: 8 }, [{ record: mine(3), expectedVersion: null }], 'LEASEHOLD_ERR_CONFLICT'],
        [{ atLeast: 0, shards: 16 }, [], 'LEASEHOLD_ERR_INVALID_RECORD'],
        [{ atLeast: 0, shards: 16 }, [{ record: contractSlot(3), expectedVersion: null }], 'LEASEHOLD_ERR_INVALID_RECORD'],
        [
          { atLeast: 0, shards: 16 },
          [
            { record: mine(3), expectedVersion: null },
            { record: mine(3), expectedVersion: null },
          ],
          'LEASEHOLD_ERR_INVALID_RECORD',
        ],
        [
          { atLeast: (s.maxToken ?? Number.MAX_SAFE_INTEGER) - 1, shards: 16 },
          [mine(3), mine(4)].map((record) => ({ record, expectedVersion: null })),
          'LEASEHOLD_ERR_INVALID_RECORD',
        ],
      ] as const) {
        assert.equal(await codeOf(take(g, raise, takes)), code, JSON.stringify({ raise, takes: takes.length }));
        assert.deepEqual(sorted(await s.listGroup(g)), before, `${JSON.stringify(raise)} with ${takes.length} takes wrote nothing`);
      }
      // Calls at once, through this store and another instance where the subject opens one: no two blocks share a token.
      const other = subject.reopen ? await subject.reopen() : s;
      const calls = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          (i % 2 ? other : s).raiseAndTake!(g, { atLeast: 0, shards: 16 }, [{ record: mine(10 + i), expectedVersion: null }]),
        ),
      );
      const froms = calls.map((c) => c.from).sort((a, b) => a - b);
      assert.deepEqual(froms, [10, 11, 12, 13, 14, 15], 'blocks follow one another');
      for (const [i, c] of calls.entries())
        assert.equal(
          ((await one(g, { kind: 'shard', index: 10 + i }))?.record as ShardRecord | undefined)?.token,
          c.from + 1,
          `call ${i}'s take has its own block's token`,
        );
    });

    it("the header's longestLeaseSeconds: absent reads absent (a header from before it), written reads back beside highWater, a raise from a stale version is a ConflictError, and no positive number is refused", async () => {
      const g = fresh();
      const v1 = await s.createGroupRecord(g, contractHeader({ highWater: 7 }));
      const old = await one(g, { kind: 'group', index: 0 });
      assert.deepEqual(old?.record, contractHeader({ highWater: 7 }), 'a header written without longestLeaseSeconds must read without it');
      assert.equal('longestLeaseSeconds' in (old?.record ?? {}), false);
      const v2 = await s.updateGroupRecord(g, contractHeader({ highWater: 7, longestLeaseSeconds: 30 }), v1);
      assert.deepEqual(await s.listGroup(g), [{ record: contractHeader({ highWater: 7, longestLeaseSeconds: 30 }), version: v2 }]);
      if (s.readGroupChanges) {
        const changes = await s.readGroupChanges(g, undefined);
        assert.deepEqual(
          changes.records.map((v) => v.record),
          [contractHeader({ highWater: 7, longestLeaseSeconds: 30 })],
        );
      }
      // Two members raise it from the same version: one wins, the other must re-read.
      await subject.writeElsewhere(g, contractHeader({ highWater: 7, longestLeaseSeconds: 60 }));
      assert.equal(await codeOf(s.updateGroupRecord(g, contractHeader({ highWater: 7, longestLeaseSeconds: 45 }), v2)), 'LEASEHOLD_ERR_CONFLICT');
      const now = await one(g, { kind: 'group', index: 0 });
      assert.deepEqual(now?.record, contractHeader({ highWater: 7, longestLeaseSeconds: 60 }));
      // A raise of highWater carries it, as the member writes it: both read back.
      const v3 = await s.updateGroupRecord(g, contractHeader({ highWater: 9, longestLeaseSeconds: 60 }), now.version);
      for (const bad of [0, -15, Number.NaN, Number.POSITIVE_INFINITY])
        assert.equal(
          await codeOf(s.updateGroupRecord(g, contractHeader({ highWater: 9, longestLeaseSeconds: bad }), v3)),
          'LEASEHOLD_ERR_INVALID_RECORD',
          `longestLeaseSeconds ${bad}`,
        );
      assert.deepEqual(await s.listGroup(g), [{ record: contractHeader({ highWater: 9, longestLeaseSeconds: 60 }), version: v3 }]);
    });

    it('update from a version another writer has replaced is a ConflictError; the other write is kept', async () => {
      const g = fresh();
      const v1 = await s.createGroupRecord(g, contractShard(0));
      const theirs = contractShard(0, { holderIdentity: 'b', owner: { slot: 1, session: 2 }, token: 2, acquireTime: later });
      await subject.writeElsewhere(g, theirs);
      assert.equal(await codeOf(s.updateGroupRecord(g, contractShard(0, { holderIdentity: 'c', token: 2 }), v1)), 'LEASEHOLD_ERR_CONFLICT');
      assert.deepEqual((await one(g, { kind: 'shard', index: 0 }))?.record, theirs);
    });

    it('every write that changes a value changes the version, whichever value (a millisecond of a time) and whoever writes', async () => {
      const g = fresh();
      const ms = (d: Date) => new Date(d.getTime() + 1);
      const changes: GroupRecord[][] = [
        [
          contractSlot(0),
          contractSlot(0, { holderIdentity: 'b' }),
          contractSlot(0, { holderIdentity: 'b', session: 2 }),
          contractSlot(0, { holderIdentity: 'b', session: 2, state: 'leaving' }),
          contractSlot(0, { holderIdentity: 'b', session: 2, state: 'leaving', renewTime: ms(at) }),
          contractSlot(0, { holderIdentity: 'b', session: 2, state: 'leaving', renewTime: ms(at), leaseDurationSeconds: 16 }),
          contractSlot(0, { holderIdentity: 'b', session: 2, state: 'leaving', renewTime: null, leaseDurationSeconds: 16 }),
        ],
        [
          contractShard(0),
          contractShard(0, { holderIdentity: 'b' }),
          contractShard(0, { holderIdentity: 'b', owner: { slot: 0, session: 2 } }),
          contractShard(0, { holderIdentity: 'b', owner: { slot: 1, session: 2 } }),
          contractShard(0, { holderIdentity: 'b', owner: { slot: 1, session: 2 }, token: 2 }),
          contractShard(0, { holderIdentity: 'b', owner: { slot: 1, session: 2 }, token: 2, acquireTime: ms(at) }),
          contractShard(0, { holderIdentity: 'b', owner: null, token: 2, acquireTime: ms(at) }),
        ],
        [contractHeader(), contractHeader({ shards: 17 }), contractHeader({ shards: 17, createdAt: ms(at) })],
      ];
      for (const [first, ...next] of changes) {
        const seen = [await s.createGroupRecord(g, first!)];
        for (const [i, r] of next.entries()) {
          if (i % 2 === 0) seen.push(await s.updateGroupRecord(g, r, seen.at(-1)!));
          else {
            await subject.writeElsewhere(g, r);
            seen.push((await one(g, r))!.version);
          }
          assert.equal(new Set(seen).size, seen.length, `the write of ${JSON.stringify(r)} kept a version`);
          assert.deepEqual(await one(g, r), { record: r, version: seen.at(-1) });
          assert.equal(await codeOf(s.updateGroupRecord(g, first!, seen.at(-2)!)), 'LEASEHOLD_ERR_CONFLICT', `the version before ${JSON.stringify(r)}`);
        }
      }
    });

    it('a write of the very values a record holds leaves it as it was: under a new version (the old one then stale) or its own (Kubernetes persists no no-op update)', async () => {
      const g = fresh();
      const v1 = await s.createGroupRecord(g, contractSlot(0));
      const v2 = await s.updateGroupRecord(g, contractSlot(0), v1);
      assert.deepEqual(await s.listGroup(g), [{ record: contractSlot(0), version: v2 }]);
      if (v2 !== v1) assert.equal(await codeOf(s.updateGroupRecord(g, contractSlot(0, { session: 2 }), v1)), 'LEASEHOLD_ERR_CONFLICT');
      await subject.writeElsewhere(g, contractSlot(0));
      const [after] = await s.listGroup(g);
      assert.deepEqual(after!.record, contractSlot(0));
      if (after!.version !== v2) assert.equal(await codeOf(s.updateGroupRecord(g, contractSlot(0, { session: 2 }), v2)), 'LEASEHOLD_ERR_CONFLICT');
      assert.notEqual(await s.updateGroupRecord(g, contractSlot(0, { session: 2 }), after!.version), after!.version);
    });

    it('update of a record deleted since it was read is a ConflictError, and recreates nothing', async () => {
      const g = fresh();
      const v1 = await s.createGroupRecord(g, contractShard(0));
      const vOther = await s.createGroupRecord(g, contractSlot(0));
      await subject.deleteElsewhere(g, { kind: 'shard', index: 0 });
      assert.equal(await codeOf(s.updateGroupRecord(g, contractShard(0, { token: 2 }), v1)), 'LEASEHOLD_ERR_CONFLICT');
      assert.deepEqual(await s.listGroup(g), [{ record: contractSlot(0), version: vOther }]);
      // Again once the store has itself listed the group without it.
      assert.equal(await codeOf(s.updateGroupRecord(g, contractShard(0, { token: 2 }), v1)), 'LEASEHOLD_ERR_CONFLICT');
      assert.deepEqual(await s.listGroup(g), [{ record: contractSlot(0), version: vOther }]);
    });

    it('a version read before a record was deleted and re-created, even with the same values, never comes back', async () => {
      const g = fresh();
      // Versions a member may hold from before the deletion: the create and two heartbeats.
      const stale = [await s.createGroupRecord(g, contractSlot(0))];
      for (const ms of [1_000, 2_000]) stale.push(await s.updateGroupRecord(g, contractSlot(0, { renewTime: new Date(at.getTime() + ms) }), stale.at(-1)!));
      await subject.deleteElsewhere(g, { kind: 'member', index: 0 });
      // Re-created with the very values it first had, then written as often as before.
      let version = await s.createGroupRecord(g, contractSlot(0));
      for (const ms of [1_000, 2_000, 3_000]) {
        assert.ok(!stale.includes(version), `version ${version} of the re-created record was issued before the deletion too`);
        version = await s.updateGroupRecord(g, contractSlot(0, { renewTime: new Date(at.getTime() + ms) }), version);
      }
      assert.ok(!stale.includes(version), `version ${version} of the re-created record was issued before the deletion too`);
      for (const old of stale) assert.equal(await codeOf(s.updateGroupRecord(g, contractSlot(0, { session: 2 }), old)), 'LEASEHOLD_ERR_CONFLICT');
      assert.deepEqual(await s.listGroup(g), [{ record: contractSlot(0, { renewTime: new Date(at.getTime() + 3_000) }), version }]);
    });

    it('update of a record that never existed, with a version of one that does (another key, another group), is a ConflictError and creates nothing', async () => {
      const g = fresh();
      const h = fresh();
      const vg = await s.createGroupRecord(g, contractSlot(0));
      const vh = await s.createGroupRecord(h, contractSlot(0));
      const vShard = await s.createGroupRecord(g, contractShard(0));
      assert.equal(await codeOf(s.updateGroupRecord(g, contractSlot(1), vg)), 'LEASEHOLD_ERR_CONFLICT');
      assert.equal(await codeOf(s.updateGroupRecord(g, contractShard(1), vShard)), 'LEASEHOLD_ERR_CONFLICT');
      assert.equal(await codeOf(s.updateGroupRecord(g, contractHeader(), vg)), 'LEASEHOLD_ERR_CONFLICT');
      const never = fresh();
      assert.equal(await codeOf(s.updateGroupRecord(never, contractSlot(0), vg)), 'LEASEHOLD_ERR_CONFLICT');
      // And a version no store issues, on a record that exists.
      assert.equal(await codeOf(s.updateGroupRecord(g, contractSlot(0, { holderIdentity: 'b' }), 'not-a-version')), 'LEASEHOLD_ERR_CONFLICT');
      assert.deepEqual(
        sorted(await s.listGroup(g)),
        sorted([
          { record: contractSlot(0), version: vg },
          { record: contractShard(0), version: vShard },
        ]),
      );
      assert.deepEqual(await s.listGroup(h), [{ record: contractSlot(0), version: vh }]);
      assert.deepEqual(await s.listGroup(never), []);
    });

    it('a call on an aborted signal rejects and writes nothing', async () => {
      const g = fresh();
      const aborted = AbortSignal.abort(new Error('cancelled by the test'));
      await assert.rejects(s.createGroupRecord(g, contractSlot(0), { signal: aborted }));
      assert.deepEqual(await s.listGroup(g), []);
      const v1 = await s.createGroupRecord(g, contractSlot(0));
      await assert.rejects(s.updateGroupRecord(g, contractSlot(0, { renewTime: later }), v1, { signal: aborted }));
      await assert.rejects(s.listGroup(g, { signal: aborted }));
      assert.deepEqual(await s.listGroup(g), [{ record: contractSlot(0), version: v1 }]);
    });

    it('waitForLock false changes no answer where no lock is held: create, compare-and-swap and batches as without it', async () => {
      const g = fresh();
      const noWait = { waitForLock: false };
      const v1 = await s.createGroupRecord(g, contractSlot(0), noWait);
      assert.equal(await codeOf(s.createGroupRecord(g, contractSlot(0), noWait)), 'LEASEHOLD_ERR_CONFLICT');
      const v2 = await s.updateGroupRecord(g, contractSlot(0, { renewTime: later }), v1, noWait);
      assert.equal(await codeOf(s.updateGroupRecord(g, contractSlot(0), v1, noWait)), 'LEASEHOLD_ERR_CONFLICT');
      assert.deepEqual(await s.listGroup(g), [{ record: contractSlot(0, { renewTime: later }), version: v2 }]);
      const outcomes = await s.writeGroupRecords?.(g, [{ record: contractSlot(0), expectedVersion: v1 }], noWait);
      if (outcomes) assert.equal(outcomes[0]?.written, false, 'a batch row from a stale version is still a conflict');
    });

    describe('readGroupChanges, where a store has one', () => {
      /** The store's readGroupChanges, or a skip. */
      const changesOf = (t: { skip(message: string): void }) => {
        if (!s.readGroupChanges) t.skip(`${storeName} has no readGroupChanges`);
        return s.readGroupChanges?.bind(s);
      };
      const keys = (c: GroupChanges) => c.records.map((r) => recordKey(r.record)).sort();
      /**
       * Whether `next`, an answer by change from `before`'s cursor, shows a deletion since
       * `before` to a copy that, with `next` applied, holds `held` records (DeletionEvidence):
       * a count below it, or a deletion mark moved.
       */
      const deletionShown = (before: GroupChanges, next: GroupChanges, held: number): boolean => {
        if (next.total !== undefined) return next.total !== held;
        assert.notEqual(before.deletionMark, undefined, 'one read counts the records, the next marks deletions');
        return next.deletionMark !== before.deletionMark;
      };
      /**
       * The next answer from `cursor`: one read, or, where the answers come from a watch's copy
       * (changesFromWatch), the first that makes `view` the list: another writer's write (or a
       * deletion) shows there once the watch brings it, not at the write.
       */
      const settled = async (read: NonNullable<GroupStore['readGroupChanges']>, g: string, cursor: string, view: Map<string, VersionedGroupRecord>) => {
        if (!s.changesFromWatch) return read(g, cursor);
        return until(`the watch to bring group ${g}'s writes`, async () => {
          const answer = await read(g, cursor);
          const list = sorted(await s.listGroup(g));
          const applied = sorted([...applyChanges(new Map(view), answer).values()]);
          return JSON.stringify(applied) === JSON.stringify(list) && (answer.total === undefined || answer.total === list.length) ? answer : undefined;
        });
      };

      it("without a cursor reads the whole group; then each write since the cursor, its own and another writer's, is in the next answer and another group's is not", async (t) => {
        const read = changesOf(t);
        if (!read) return;
        const g = fresh();
        const h = fresh();
        const none = await read(g, undefined);
        assert.deepEqual(
          { records: none.records, full: none.full, cursor: none.cursor },
          { records: [], full: true, cursor: (await read(g, undefined)).cursor },
        );
        assert.ok(none.total === 0 || (none.total === undefined && none.deletionMark === null), 'a group never written shows a record or a deletion');
        await s.createGroupRecord(g, contractHeader());
        const slot = await s.createGroupRecord(g, contractSlot(0));
        await s.createGroupRecord(g, contractShard(3));
        const first = await read(g, undefined);
        assert.equal(first.full, true);
        assert.deepEqual(sorted(first.records), sorted(await s.listGroup(g)));
        const view = applyChanges(new Map(), first);

        // Nothing written: nothing the caller does not hold (a store may repeat a few, as they are).
        const idle = await read(g, first.cursor);
        assert.equal(idle.full, false, 'nothing was deleted, yet the store read the group in full');
        for (const r of idle.records) assert.deepEqual(r, view.get(recordKey(r.record)), 'an unchanged record came back changed');
        applyChanges(view, idle);

        await s.updateGroupRecord(g, contractSlot(0, { renewTime: later }), slot);
        await subject.writeElsewhere(g, contractShard(3, { token: 2, owner: { slot: 1, session: 1 } }));
        await subject.writeElsewhere(g, contractShard(7));
        await subject.writeElsewhere(h, contractShard(0));
        const next = await settled(read, g, idle.cursor, view);
        assert.equal(next.full, false, 'nothing was deleted, yet the store read the group in full');
        for (const k of ['member/0', 'shard/3', 'shard/7']) assert.ok(keys(next).includes(k), `${k} was written since the cursor but not read`);
        const listed = await s.listGroup(g);
        if (next.total !== undefined) assert.equal(next.total, listed.length, "total is not the group's count of records");
        assert.equal(deletionShown(idle, next, listed.length), false, 'nothing was deleted, yet the answer shows a deletion');
        // Applied, the answer makes the view the list: another group's shard/0 would be one too many.
        assert.deepEqual(sorted([...applyChanges(view, next).values()]), sorted(await s.listGroup(g)));
        assert.deepEqual(await read(h, undefined).then((c) => c.records.map((r) => r.record)), [contractShard(0)]);
      });

      it('a deletion leaves no change behind; the next full read (no cursor) shows the record gone', async (t) => {
        const read = changesOf(t);
        if (!read) return;
        const g = fresh();
        await s.createGroupRecord(g, contractSlot(0));
        await s.createGroupRecord(g, contractShard(1));
        const view = applyChanges(new Map(), await read(g, undefined));
        const before = await read(g, undefined);
        await subject.deleteElsewhere(g, { kind: 'shard', index: 1 });
        await subject.writeElsewhere(g, contractSlot(0, { renewTime: later }));
        const next = await settled(read, g, before.cursor, view);
        applyChanges(view, next);
        if (!next.full) assert.ok(!keys(next).includes('shard/1'), 'a deleted record came back as a change');
        assert.ok(deletionShown(before, next, 2), 'the answer does not show the deletion');
        if (next.total !== undefined) assert.equal(next.total, 1, "total is not the group's count of records");
        const full = await read(g, undefined);
        assert.equal(full.full, true);
        assert.deepEqual(sorted(full.records), sorted(await s.listGroup(g)));
        assert.deepEqual(
          [...applyChanges(view, full).values()].map((r) => r.record),
          [contractSlot(0, { renewTime: later })],
        );
      });

      it("a deletion shows at the next read however many writes came with it, the group's newest record's too; another group's does not", async (t) => {
        const read = changesOf(t);
        if (!read) return;
        const g = fresh();
        const h = fresh();
        await s.createGroupRecord(g, contractSlot(0));
        for (const i of [1, 2, 3]) await s.createGroupRecord(g, contractShard(i));
        await s.createGroupRecord(h, contractShard(0));
        await s.createGroupRecord(h, contractShard(1));
        let last = await read(g, undefined);
        const view = applyChanges(new Map(), last);
        /** The next answer from the last, applied: whether it showed a deletion. */
        const step = async () => {
          const next = await settled(read, g, last.cursor, view);
          applyChanges(view, next);
          const shown = next.full || deletionShown(last, next, view.size);
          last = next.full ? next : { ...next, records: [] };
          return shown;
        };
        // Another group's deletion, and writes of this group's: nothing deleted here.
        await subject.deleteElsewhere(h, { kind: 'shard', index: 0 });
        await subject.writeElsewhere(g, contractShard(1, { token: 2 }));
        assert.equal(await step(), false, "another group's deletion showed in this group's answer");
        // A deletion of the record written last (the group's newest version) with a write after it.
        await subject.writeElsewhere(g, contractShard(2, { token: 2 }));
        last = await read(g, last.cursor);
        applyChanges(view, last);
        await subject.deleteElsewhere(g, { kind: 'shard', index: 2 });
        await subject.writeElsewhere(g, contractSlot(0, { renewTime: later }));
        assert.equal(await step(), true, 'the deletion of the newest record did not show');
        // Shown once: the next answer, after a full read, shows none.
        last = await read(g, undefined);
        view.clear();
        applyChanges(view, last);
        await subject.writeElsewhere(g, contractShard(3, { token: 2 }));
        assert.equal(await step(), false, 'a deletion shown before showed again');
        // One of an older record, with no write after it.
        await subject.deleteElsewhere(g, { kind: 'shard', index: 1 });
        assert.equal(await step(), true, 'a deletion with no write after it did not show');
      });

      it('a cursor from before a restart, or one no store issued, still gives an answer that makes the view the list', async (t) => {
        const read = changesOf(t);
        if (!read) return;
        const g = fresh();
        const v = await s.createGroupRecord(g, contractSlot(0));
        await s.createGroupRecord(g, contractShard(2));
        const first = await read(g, undefined);
        const view = applyChanges(new Map(), first);
        await s.updateGroupRecord(g, contractSlot(0, { renewTime: later }), v);
        await subject.writeElsewhere(g, contractShard(5));
        const restarted = subject.reopen ? await subject.reopen() : s;
        const after = subject.reopen ? await restarted.readGroupChanges!(g, first.cursor) : await settled(read, g, first.cursor, view);
        if (!after.full)
          for (const k of ['member/0', 'shard/5']) assert.ok(keys(after).includes(k), `${k} was written since the cursor but not read after the restart`);
        assert.deepEqual(sorted([...applyChanges(view, after).values()]), sorted(await restarted.listGroup(g)));
        for (const bogus of ['', 'x', '-1', '99999999999999999999999', '1.2.3', first.cursor + '9'.repeat(30)]) {
          const answer = await restarted.readGroupChanges!(g, bogus);
          assert.equal(answer.full, true, `cursor ${JSON.stringify(bogus)} was continued from`);
          assert.deepEqual(sorted(answer.records), sorted(await restarted.listGroup(g)));
        }
      });
    });

    describe('writeGroupRecords, where a store has one', () => {
      const batch = (t: { skip(why: string): void }) => {
        if (!s.writeGroupRecords) t.skip(`${storeName} has no writeGroupRecords`);
        return s.writeGroupRecords?.bind(s);
      };

      it('an empty batch writes nothing and answers []', async (t) => {
        const write = batch(t);
        if (!write) return;
        const g = fresh();
        assert.deepEqual(await write(g, []), []);
        assert.deepEqual(await s.listGroup(g), []);
      });

      it('creates and updates of every kind in one batch: each written, outcomes in order, the versions the list returns', async (t) => {
        const write = batch(t);
        if (!write) return;
        const g = fresh();
        const v0 = await s.createGroupRecord(g, contractShard(0));
        const v1 = await s.createGroupRecord(g, contractSlot(1));
        const records: GroupRecord[] = [
          contractShard(0, { holderIdentity: '', owner: null }),
          contractHeader(),
          contractSlot(1, { renewTime: later }),
          contractShard(7, { token: 3 }),
        ];
        const outcomes = await write(g, [
          { record: records[0]!, expectedVersion: v0 },
          { record: records[1]!, expectedVersion: null },
          { record: records[2]!, expectedVersion: v1 },
          { record: records[3]!, expectedVersion: null },
        ]);
        assert.equal(outcomes.length, 4);
        const versions = outcomes.map((o) => (o.written ? o.version : assert.fail(`a write was refused: ${o.conflict}`)));
        assert.ok(!versions.includes(v0) && !versions.includes(v1), 'an update kept its old version');
        assert.deepEqual(sorted(await s.listGroup(g)), sorted(records.map((record, i) => ({ record, version: versions[i]! }))));
        // Each new version is a compare-and-swap base like a single write's.
        await s.updateGroupRecord(g, contractShard(7, { token: 4 }), versions[3]!);
      });

      it('a batch with one row another writer changed: that row is a conflict and keeps the other write, the rest are written', async (t) => {
        const write = batch(t);
        if (!write) return;
        const g = fresh();
        const v = await Promise.all([0, 1, 2].map((i) => s.createGroupRecord(g, contractShard(i))));
        await subject.writeElsewhere(g, contractShard(1, { holderIdentity: 'b', owner: { slot: 2, session: 5 }, token: 2 }));
        const free = (i: number) => contractShard(i, { holderIdentity: '', owner: null });
        const outcomes = await write(
          g,
          [0, 1, 2].map((i) => ({ record: free(i), expectedVersion: v[i]! })),
        );
        assert.deepEqual(
          outcomes.map((o) => o.written),
          [true, false, true],
        );
        // The conflict names the record: `shard/1`, or on Kubernetes its Lease, `…-shard-0001`.
        assert.match((outcomes[1] as { conflict: string }).conflict, /shard[/-]0*1\b/);
        const list = await s.listGroup(g);
        assert.deepEqual(find(list, { kind: 'shard', index: 0 })?.record, free(0));
        assert.deepEqual(find(list, { kind: 'shard', index: 1 })?.record, contractShard(1, { holderIdentity: 'b', owner: { slot: 2, session: 5 }, token: 2 }));
        assert.deepEqual(find(list, { kind: 'shard', index: 2 })?.record, free(2));
      });

      it('a create that collides and an update of a deleted record are conflicts; nothing is overwritten or recreated; the others are written', async (t) => {
        const write = batch(t);
        if (!write) return;
        const g = fresh();
        const vOld = await s.createGroupRecord(g, contractShard(3));
        const vGone = await s.createGroupRecord(g, contractShard(4));
        await subject.deleteElsewhere(g, { kind: 'shard', index: 4 });
        const outcomes = await write(g, [
          { record: contractShard(2), expectedVersion: null },
          { record: contractShard(3, { holderIdentity: 'b', token: 9 }), expectedVersion: null },
          { record: contractShard(4, { token: 2 }), expectedVersion: vGone },
          { record: contractShard(5), expectedVersion: 'not-a-version' },
        ]);
        assert.deepEqual(
          outcomes.map((o) => o.written),
          [true, false, false, false],
        );
        assert.deepEqual(
          sorted(await s.listGroup(g)),
          sorted([
            { record: contractShard(2), version: (outcomes[0] as { version: string }).version },
            { record: contractShard(3), version: vOld },
          ]),
        );
      });

      it('a batch that breaks a rule (a record past a bound, one record written twice, an aborted signal) is refused whole, nothing written', async (t) => {
        const write = batch(t);
        if (!write) return;
        const g = fresh();
        assert.equal(
          await codeOf(
            write(g, [
              { record: contractShard(0), expectedVersion: null },
              { record: contractShard(MAX_SHARDS), expectedVersion: null },
            ]),
          ),
          'LEASEHOLD_ERR_INVALID_RECORD',
        );
        assert.equal(
          await codeOf(
            write(g, [
              { record: contractShard(1), expectedVersion: null },
              { record: contractShard(1, { token: 2 }), expectedVersion: null },
            ]),
          ),
          'LEASEHOLD_ERR_INVALID_RECORD',
        );
        await assert.rejects(
          write(g, [{ record: contractShard(2), expectedVersion: null }], { signal: AbortSignal.abort(new Error('cancelled by the test')) }),
        );
        assert.deepEqual(await s.listGroup(g), []);
      });

      it('a batch of every shard of the largest group (256 on Kubernetes): each written once, in one call', async (t) => {
        const write = batch(t);
        if (!write) return;
        const g = fresh();
        // On Kubernetes a batch is single writes a few at a time: its size adds only time there.
        const size = s.backend === 'kubernetes' ? 256 : MAX_SHARDS;
        const created = await write(
          g,
          Array.from({ length: size }, (_, i) => ({ record: contractShard(i), expectedVersion: null })),
        );
        assert.equal(created.filter((o) => o.written).length, size);
        const freed = await write(
          g,
          created.map((o, i) => ({ record: contractShard(i, { holderIdentity: '', owner: null }), expectedVersion: (o as { version: string }).version })),
        );
        assert.equal(freed.filter((o) => o.written).length, size);
        const list = await s.listGroup(g);
        assert.equal(list.length, size);
        assert.ok(list.every((r) => r.record.kind === 'shard' && r.record.owner === null));
      });
    });

    it("watchGroup, where a store has one, hints at another writer's change and deletion in its group, not at another group's, and stops when told", async (t) => {
      if (!s.watchGroup) {
        t.skip(`${storeName} has no watchGroup`);
        return;
      }
      const watchGroup = s.watchGroup.bind(s);
      const g = fresh();
      const h = fresh();
      await s.createGroupRecord(g, contractShard(1));
      await s.createGroupRecord(g, contractSlot(0));
      await s.createGroupRecord(h, contractSlot(0));
      const connected = (healthy: () => boolean) => () => (healthy() || !subject.watchConnects ? true : undefined);
      let gCalls = 0;
      let hCalls = 0;
      let gHealthy = false;
      let hHealthy = false;
      const stopG = watchGroup(
        g,
        () => gCalls++,
        (ok) => (gHealthy = ok),
      );
      const stopH = watchGroup(
        h,
        () => hCalls++,
        (ok) => (hHealthy = ok),
      );
      try {
        // Changes before a watch says it is connected may be lost; a store that never says so watches from its start.
        await until(
          'the watches to connect',
          connected(() => gHealthy && hHealthy),
        );
        const g0 = gCalls;
        const h0 = hCalls;
        await subject.writeElsewhere(h, contractSlot(0, { renewTime: later }));
        await until("the other group's watch to see its write", () => (hCalls > h0 ? true : undefined));
        // A store that tells every watch of one change at once would have told this one by now.
        assert.equal(gCalls, g0, "the other group's write was hinted to this group's watch");
        await subject.writeElsewhere(g, contractSlot(0, { renewTime: later }));
        await until('a hint for the change', () => (gCalls > g0 ? true : undefined));
        // Hints arrive in order of the writes: one for the other group's write would have come first.
        assert.equal(gCalls, g0 + 1, "the other group's write was hinted to this group's watch");
        const g1 = gCalls;
        // Not the group's newest record: its deletion lowers no largest version.
        await subject.deleteElsewhere(g, { kind: 'shard', index: 1 });
        await until('a hint for the deletion', () => (gCalls > g1 ? true : undefined));
        const g2 = gCalls;
        await subject.writeElsewhere(g, contractShard(4));
        await until('a hint for a new record', () => (gCalls > g2 ? true : undefined));
      } finally {
        stopG();
        stopH();
      }
      // A stopped watch stays silent: a second watch, opened before the next write, sees that
      // write; the first, had it still been running, would have seen it as well.
      const stoppedAt = gCalls;
      let witness = 0;
      let witnessHealthy = false;
      const stopWitness = watchGroup(
        g,
        () => witness++,
        (ok) => (witnessHealthy = ok),
      );
      try {
        await until(
          'the second watch to connect',
          connected(() => witnessHealthy),
        );
        const mark = witness;
        await subject.writeElsewhere(g, contractShard(4, { token: 2 }));
        await until('the second watch to see the write', () => (witness > mark ? true : undefined));
      } finally {
        stopWitness();
      }
      assert.equal(gCalls, stoppedAt, 'no hints after stop');
    });
  });
}

/** The view a caller of readGroupChanges keeps: a full answer replaces it, any other overwrites what it names. */
function applyChanges(view: Map<string, VersionedGroupRecord>, changes: GroupChanges): Map<string, VersionedGroupRecord> {
  if (changes.full) view.clear();
  for (const r of changes.records) view.set(recordKey(r.record), r);
  return view;
}

/** writeElsewhere through a second store on the same records (another process's connection). */
export async function upsertGroupThrough(other: GroupStore, group: string, record: GroupRecord): Promise<void> {
  const current = find(await other.listGroup(group), record);
  if (current) await other.updateGroupRecord(group, record, current.version);
  else await other.createGroupRecord(group, record);
}
