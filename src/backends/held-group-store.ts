import type { CallOptions } from './lease-store.js';
import type { GroupChanges, GroupRecord, GroupStore, GroupWrite, GroupWriteOutcome, VersionedGroupRecord } from './group-store.js';

/** Every call of a group store that keeps all of them (Kubernetes', PostgreSQL's). */
export type FullGroupCalls = Required<
  Pick<GroupStore, 'listGroup' | 'readGroupChanges' | 'createGroupRecord' | 'updateGroupRecord' | 'writeGroupRecords' | 'watchGroup'>
>;

/**
 * A lease store that is also its shard groups' store by holding one (`groups`, on its own
 * client or connection) and passing each group call to it: the Kubernetes and PostgreSQL lease
 * stores, so that one opened store serves both.
 */
export abstract class HoldsGroupStore {
  protected abstract readonly groups: FullGroupCalls;

  listGroup(group: string, opts?: CallOptions): Promise<VersionedGroupRecord[]> {
    return this.groups.listGroup(group, opts);
  }

  readGroupChanges(group: string, cursor: string | undefined, opts?: CallOptions): Promise<GroupChanges> {
    return this.groups.readGroupChanges(group, cursor, opts);
  }

  createGroupRecord(group: string, record: GroupRecord, opts?: CallOptions): Promise<string> {
    return this.groups.createGroupRecord(group, record, opts);
  }

  updateGroupRecord(group: string, record: GroupRecord, expectedVersion: string, opts?: CallOptions): Promise<string> {
    return this.groups.updateGroupRecord(group, record, expectedVersion, opts);
  }

  writeGroupRecords(group: string, writes: readonly GroupWrite[], opts?: CallOptions): Promise<GroupWriteOutcome[]> {
    return this.groups.writeGroupRecords(group, writes, opts);
  }

  watchGroup(group: string, onChange: () => void, onHealth?: (healthy: boolean) => void): () => void {
    return this.groups.watchGroup(group, onChange, onHealth);
  }
}
