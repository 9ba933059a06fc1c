/**
 * What every group store refuses before it writes anything (the contract suite checks each
 * store refuses the same): a group name no store can key, and a record that could not read back
 * as written. A refused write sends nothing; the message names the value and the rule.
 */
import { InvalidConfigError, InvalidRecordError } from '../errors.js';
import { hasControl } from '../util/escape-control.js';
import { MAX_MEMBER_SLOTS, MAX_SHARDS, recordKey, type GroupRecord } from './group-store.js';

/** The longest identity a record may hold: the identity rule's (src/config/election-options.ts). */
export const MAX_GROUP_IDENTITY = 253;

/** DNS-1123 subdomain, as a lease name: what a Lease's metadata.name accepts. */
const GROUP_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
export const GROUP_NAME_RULE =
  "a group name must be a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters)";

/** InvalidConfigError (field `group`) unless `group` keeps the rule every store shares. */
export function checkGroupName(group: string): void {
  if (typeof group !== 'string' || group.length === 0 || group.length > 253 || !GROUP_NAME.test(group)) {
    throw new InvalidConfigError(`group name ${JSON.stringify(String(group).slice(0, 300))} is invalid: ${GROUP_NAME_RULE}`, {
      field: 'group',
      rule: GROUP_NAME_RULE,
    });
  }
}

const isDate = (d: unknown): d is Date => d instanceof Date && !Number.isNaN(d.getTime());
const isCount = (n: unknown, max: number): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 && n <= max;

/**
 * InvalidRecordError unless `record` is one the store can hold and give back field for field:
 * an index within its kind's bound, an identity within MAX_GROUP_IDENTITY characters and free of
 * control characters, tokens and sessions from 0 to the store's `maxToken`, real dates, a positive
 * lease duration (a Lease refuses any other), a known state.
 */
export function checkGroupRecord(group: string, record: GroupRecord, maxToken = Number.MAX_SAFE_INTEGER): void {
  checkGroupName(group);
  const what = `group ${group} record ${recordKey(record)}`;
  const refuse = (why: string): never => {
    throw new InvalidRecordError(`${what} was not written: ${why}`);
  };
  const token = (name: string, n: unknown) => {
    if (!isCount(n, maxToken)) refuse(`its ${name} ${String(n)} is not an integer from 0 to ${maxToken} (the largest this store holds)`);
  };
  const leaseSeconds = (name: string, n: unknown) => {
    if (typeof n !== 'number' || !Number.isFinite(n) || n <= 0) refuse(`its ${name} ${String(n)} is not a positive number`);
  };
  const identity = (id: unknown) => {
    if (typeof id !== 'string' || id.length > MAX_GROUP_IDENTITY || hasControl(id)) {
      refuse(
        `its holderIdentity must be at most ${MAX_GROUP_IDENTITY} characters with no control characters ('' when free), got ${typeof id === 'string' ? `${id.length} characters` : typeof id}`,
      );
    }
  };
  switch (record.kind) {
    case 'group':
      if (record.index !== 0) refuse('the group header has index 0');
      if (!isCount(record.shards, MAX_SHARDS) || record.shards < 1)
        refuse(`its shard count ${String(record.shards)} is not an integer from 1 to ${MAX_SHARDS}`);
      if (!isDate(record.createdAt)) refuse('its createdAt is not a valid date');
      if (record.highWater !== undefined) token('highWater', record.highWater);
      if (record.longestLeaseSeconds !== undefined) leaseSeconds('longestLeaseSeconds', record.longestLeaseSeconds);
      return;
    case 'member':
      if (!isCount(record.index, MAX_MEMBER_SLOTS - 1)) refuse(`a member slot's index is an integer from 0 to ${MAX_MEMBER_SLOTS - 1}`);
      identity(record.holderIdentity);
      token('session', record.session);
      if (record.state !== 'active' && record.state !== 'leaving') refuse(`its state ${JSON.stringify(record.state)} is neither "active" nor "leaving"`);
      if (record.renewTime !== null && !isDate(record.renewTime)) refuse('its renewTime is neither null nor a valid date');
      leaseSeconds('leaseDurationSeconds', record.leaseDurationSeconds);
      return;
    case 'shard':
      if (!isCount(record.index, MAX_SHARDS - 1)) refuse(`a shard's index is an integer from 0 to ${MAX_SHARDS - 1}`);
      identity(record.holderIdentity);
      token('token', record.token);
      if (record.owner !== null) {
        if (typeof record.owner !== 'object' || !isCount(record.owner.slot, MAX_MEMBER_SLOTS - 1))
          refuse(`its owner's slot is not an integer from 0 to ${MAX_MEMBER_SLOTS - 1}`);
        token("owner's session", record.owner.session);
      }
      if (record.acquireTime !== null && !isDate(record.acquireTime)) refuse('its acquireTime is neither null nor a valid date');
      return;
    default:
      refuse(`its kind ${JSON.stringify((record as { kind?: unknown }).kind)} is none of group, member, shard`);
  }
}
