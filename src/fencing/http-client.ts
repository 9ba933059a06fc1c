/**
 * The client side of the fencing headers: the headers for a write, taken from what this process
 * holds now, and never made up when it holds nothing. Each helper refuses with
 * NoFencingTokenError (LEASEHOLD_ERR_NO_FENCING_TOKEN) when there is no term to present: not
 * leader, not the shard's owner, or the status expired (its sidecar may be frozen). Even a
 * header sent in good faith can be stale by the time it arrives; the service's check decides.
 */
import { NoFencingTokenError } from '../errors.js';
import { readLeadership } from '../status/status-reader.js';
import { readOwnedShards } from '../status/shards-status.js';
import type { ShardOwnership } from '../shards/shard-group.js';
import { shardFenceKey } from './claim.js';
import { fenceHeaders } from './http-header.js';

/** The headers for a write to `key` by the leader, from the sidecar's status.json in `statusDir`. */
export function leaderFenceHeaders(statusDir: string, key: string, now: Date = new Date()): Record<string, string> {
  const view = readLeadership(statusDir, now);
  if (!view.isLeader || view.fencingToken === null) throw new NoFencingTokenError(`no fencing token to send for ${JSON.stringify(key)}: ${view.reason}`);
  return fenceHeaders({ key, token: view.fencingToken });
}

/**
 * The headers for a write to shard `shard` of `resource` (key shardFenceKey(resource, shard)),
 * from the sidecar's shards.json in `statusDir`: only while it lists the shard and its validUntil
 * is ahead.
 */
export function shardFenceHeaders(statusDir: string, resource: string, shard: number, now: Date = new Date()): Record<string, string> {
  const key = shardFenceKey(resource, shard);
  const view = readOwnedShards(statusDir, now);
  const owned = view.owned.find((o) => o.shard === shard);
  if (!owned) {
    const why = view.owned.length > 0 ? `this member owns ${view.owned.length} other shards` : view.reason;
    throw new NoFencingTokenError(`no fencing token to send for ${JSON.stringify(key)}: not the owner of shard ${shard} (${why})`);
  }
  return fenceHeaders({ key, token: owned.fencingToken });
}

/**
 * The headers for a write to shard `ownership.shard` of `resource`, from a ShardGroup's
 * ownership (onShardGained's argument): only while its signal has not aborted and its
 * validUntil is ahead.
 */
export function ownershipFenceHeaders(
  resource: string,
  ownership: Pick<ShardOwnership, 'shard' | 'token' | 'signal' | 'validUntil'>,
  now: Date = new Date(),
): Record<string, string> {
  const key = shardFenceKey(resource, ownership.shard);
  if (ownership.signal.aborted)
    throw new NoFencingTokenError(`no fencing token to send for ${JSON.stringify(key)}: shard ${ownership.shard} is no longer owned`);
  const until = ownership.validUntil();
  if (until.getTime() <= now.getTime()) {
    throw new NoFencingTokenError(
      `no fencing token to send for ${JSON.stringify(key)}: shard ${ownership.shard}'s ownership expired at ${until.toISOString()}`,
    );
  }
  return fenceHeaders({ key, token: ownership.token });
}
