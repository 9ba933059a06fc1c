import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { fsyncDir, writeFileAtomic } from '../util/atomic-file.js';
import { SHARDS_FILE, type OwnedShard, type ShardsStatus } from '../status/shards-status.js';
import { prepareStatusDir } from './status-publisher.js';

/**
 * The files a sidecar leading a lease writes (StatusPublisher), is-leader first: a shard
 * member removes them when it takes a directory over, so an app of that earlier sidecar never
 * reads its last "true" as current.
 */
const LEADER_FILES = ['is-leader', 'status.json', 'fencing-token', 'holder'];

/**
 * Writes a shard group member's `shards.json` into its status directory: one file, replaced
 * atomically (the status files' exclusive create and rename), so a polling reader sees the last
 * state or this one, never a mix. The member's sidecar (shard-sidecar.ts) calls publish() on
 * every change, a lost shard before its drain begins.
 *
 * Synced to the disk (the file, then the directory's rename) only when it drops a shard it
 * listed: after a power loss the disk may hold any state written since the last synced one, and
 * each of those lists only shards the latest lists too, so no shard given up (then drained and
 * released, and taken by another) comes back in a file whose validUntil may still be ahead after
 * a quick reboot (a hostile review's find). Every other change (shards gained, a validUntil
 * moved on, a count) goes unsynced: the app reads the file through the same kernel, which shows
 * the rename at once, and a file a crash left empty or torn reads as nothing owned
 * (readOwnedShards). Two syncs a publish blocked the member's one thread on the disk at every
 * change: in a graceful leave at N = 4096, M = 32 on SQLite, without them the others used a
 * third less CPU (docs/benchmarks.md, "No plan after the others' takes").
 */
export class ShardsPublisher {
  private last = '';
  /** The state the file holds (updatedAt aside), compared field by field before any serialising. */
  private lastStatus: ShardsStatus | null = null;

  constructor(readonly dir: string) {}

  /** Creates the directory, proves it writable, and removes a leader sidecar's files (is-leader first). */
  prepare(): void {
    prepareStatusDir(this.dir);
    for (const name of LEADER_FILES) rmSync(join(this.dir, name), { force: true });
  }

  /** Writes shards.json if anything but updatedAt changed; returns whether it wrote. Throws when it could not. */
  publish(status: ShardsStatus): boolean {
    // Most calls (a member's every turn) bring the state the file holds: told without
    // serialising about 1 MB at N = 4096.
    if (this.lastStatus && sameButUpdatedAt(status, this.lastStatus)) return false;
    const text = JSON.stringify(status, null, 2) + '\n';
    const key = withoutUpdatedAt(text, status.updatedAt);
    if (key === this.last) {
      this.lastStatus = status;
      return false;
    }
    // Until the write is done the disk may hold the last state: a failure must make the next
    // publish write, even a state equal to the one before.
    const durable = this.lastStatus === null || dropsAShard(this.lastStatus.owned, status.owned);
    this.last = '';
    this.lastStatus = null;
    writeFileAtomic(this.dir, SHARDS_FILE, text, undefined, undefined, durable);
    if (durable) fsyncDir(this.dir);
    this.last = key;
    this.lastStatus = status;
    return true;
  }
}

/** Whether `after` leaves out a shard, or a shard's token, that `before` lists: what a sync must make durable. */
export function dropsAShard(before: readonly OwnedShard[], after: readonly OwnedShard[]): boolean {
  if (before.length === 0) return false;
  const listed = new Set(after.map((o) => `${o.shard}/${o.fencingToken}`));
  return before.some((o) => !listed.has(`${o.shard}/${o.fencingToken}`));
}

/**
 * Whether two states say the same but for updatedAt: every top-level field, whatever fields a
 * state has, `owned` entry by entry, the others by value.
 */
export function sameButUpdatedAt(a: ShardsStatus, b: ShardsStatus): boolean {
  const keys = Object.keys(a) as (keyof ShardsStatus)[];
  if (!sameKeys(a, b)) return false;
  for (const k of keys) {
    if (k === 'updatedAt') continue;
    if (k === 'owned' ? !sameEntries(a.owned, b.owned) : !sameValue(a[k], b[k])) return false;
  }
  return true;
}

function sameEntries(a: readonly object[], b: readonly object[]): boolean {
  // The same list (a member's owned part is kept while no shard moved: shards-status.ts).
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as Record<string, unknown>;
    const y = b[i] as Record<string, unknown>;
    if (!sameKeys(x, y)) return false;
    for (const k of Object.keys(x)) if (x[k] !== y[k]) return false;
  }
  return true;
}

/** The same field names, each present in both (a field set to undefined counts as present). */
function sameKeys(a: object, b: object): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k));
}

function sameValue(a: unknown, b: unknown): boolean {
  return a === b || (typeof a === 'object' && typeof b === 'object' && JSON.stringify(a) === JSON.stringify(b));
}

/**
 * The file's text less its top-level updatedAt line, so a state that changed nothing else
 * compares equal: serialising a state once, not twice (at N = 4096 the file is about 1 MB).
 * With two-space indentation only a top-level field's line starts with exactly two spaces.
 */
export function withoutUpdatedAt(text: string, updatedAt: string): string {
  const line = `\n  "updatedAt": ${JSON.stringify(updatedAt)}`;
  const at = text.lastIndexOf(line);
  if (at < 0) throw new Error(`shards.json text has no top-level updatedAt ${updatedAt}`);
  return text.slice(0, at) + text.slice(at + line.length);
}
