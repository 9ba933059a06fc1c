/**
 * The shard-group contract between a sidecar in shard mode, which writes `shards.json`
 * (src/sidecar/shard-sidecar.ts) and answers `GET /shards`, and the app, which reads it
 * (readOwnedShards): the content, as docs/shards.md describes it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeError } from '../errors.js';
import type { ShardMemberSnapshot } from '../shards/shard-member.js';
import { ownedShardsSelector, shardBounds } from '../shards/key-to-shard.js';

export const SHARDS_FILE = 'shards.json';

/** One shard this member owns, and the token its work presents to the protected resource. */
export interface OwnedShard {
  shard: number;
  fencingToken: number;
  /** The shard's hash range [start, end), as KEP-5866's selector writes it ('0x' + 16 hex digits; the last end '0x10000000000000000'). */
  start: string;
  end: string;
  /** shardRange(object.metadata.uid, start, end): list and watch only this shard's objects (docs/shards.md). */
  selector: string;
}

export interface ShardsStatus {
  /** The group's name (`--lease`). */
  group: string;
  /** The group's shard count N: a key's shard is shardOf(key, N). */
  shards: number;
  /** The live members taking shards, as this member sees the group. */
  members: number;
  identity: string;
  /** The shards this member owns, by shard number; [] while it owns none. */
  owned: OwnedShard[];
  /** One selector for every shard in `owned` (consecutive shards as one range); null while it owns none. */
  ownedSelector: string | null;
  /**
   * Until when `owned` counts unless the sidecar writes again (its session's last heartbeat +
   * renewDeadline): past it, treat `owned` as empty, the sidecar may be frozen. null while this
   * member has no session (it owns nothing then).
   */
  validUntil: string | null;
  /** Why this member takes no shards (its app's health), and since when; null otherwise. */
  standingAside: { reason: string; since: string } | null;
  /** When this sidecar stopped: its last write, after every shard was given up. null while it runs. */
  stoppedAt: string | null;
  updatedAt: string;
}

/**
 * The owned part of a status, kept per owned list: the member gives the same (frozen) list until
 * a shard changes phase, and a status is built at every turn, so a member owning 2,000 shards
 * built 2,000 entries and a selector each time for a file that had not changed.
 */
const ownedParts = new WeakMap<readonly { shard: number; token: number }[], { shards: number; part: Pick<ShardsStatus, 'owned' | 'ownedSelector'> }>();

function ownedPart(owned: readonly { shard: number; token: number }[], shards: number): Pick<ShardsStatus, 'owned' | 'ownedSelector'> {
  const known = ownedParts.get(owned);
  if (known?.shards === shards) return known.part;
  const part = {
    owned: Object.freeze(owned.map((o) => Object.freeze({ shard: o.shard, fencingToken: o.token, ...shardBounds(o.shard, shards) }))) as OwnedShard[],
    ownedSelector: ownedShardsSelector(
      owned.map((o) => o.shard),
      shards,
    ),
  };
  ownedParts.set(owned, { shards, part });
  return part;
}

/** What the sidecar publishes (shards.json, GET /shards): the member's view, times as ISO strings. */
export function toShardsStatus(s: ShardMemberSnapshot, now: Date, stoppedAt: Date | null = null): ShardsStatus {
  return {
    group: s.group,
    shards: s.shards,
    members: s.members,
    identity: s.identity,
    ...ownedPart(s.owned, s.shards),
    validUntil: s.validUntil?.toISOString() ?? null,
    standingAside: s.standingAside ? { reason: s.standingAside.reason, since: s.standingAside.since.toISOString() } : null,
    stoppedAt: stoppedAt?.toISOString() ?? null,
    updatedAt: now.toISOString(),
  };
}

export interface OwnedShardsView {
  /** The shards the app may work on now: [] unless the file says so and its validUntil has not passed. */
  owned: OwnedShard[];
  /** One selector for `owned` (the file's ownedSelector), null when `owned` is empty: never list with no selector for no shard. */
  selector: string | null;
  /** Why `owned` is empty when the file lists shards (or cannot be read), for logs. */
  reason: string;
  status: ShardsStatus | null;
}

/**
 * How an app reads `shards.json` safely: what it owns counts only while `validUntil` is in the
 * future (a frozen or dead sidecar stops writing, and its last list must expire on its own).
 * Even then the answer can be stale by the time the app acts on it, which is why every write
 * for a shard carries that shard's token and the resource checks it.
 */
export function readOwnedShards(statusDir: string, now: Date = new Date()): OwnedShardsView {
  let status: ShardsStatus;
  try {
    status = JSON.parse(readFileSync(join(statusDir, SHARDS_FILE), 'utf8')) as ShardsStatus;
  } catch (err) {
    return { owned: [], selector: null, reason: `cannot read ${SHARDS_FILE}: ${describeError(err)}`, status: null };
  }
  if (!Array.isArray(status.owned) || status.owned.length === 0) return { owned: [], selector: null, reason: 'owns no shard', status };
  const validUntil = status.validUntil ? Date.parse(status.validUntil) : NaN;
  if (!Number.isFinite(validUntil) || validUntil <= now.getTime()) {
    return { owned: [], selector: null, reason: `${SHARDS_FILE} expired at ${status.validUntil}: the sidecar may be frozen`, status };
  }
  return { owned: status.owned, selector: status.ownedSelector ?? null, reason: `owns ${status.owned.length} shards`, status };
}
