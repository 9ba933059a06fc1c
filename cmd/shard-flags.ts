/**
 * `sidecar --shards N`: the sidecar joins the shard group named by --lease as one of its members
 * (docs/shards.md) instead of campaigning for the lease. Its flags, and what they cannot be
 * given with: each flag of a lease's election that would mean nothing to a member is refused,
 * never ignored.
 */
import { MAX_MEMBER_SLOTS, MAX_SHARDS } from '../src/backends/group-store.js';
import { checkKubernetesGroupName } from '../src/backends/kubernetes/group-names.js';
import { badFlag, checkFlag } from './cli-errors.js';
import { isGiven, type FlagTable, type FlagValues } from './flag-table.js';

export const DEFAULT_MAX_MEMBERS = 64;

export const SHARD_OPTIONS = {
  shards: {
    type: 'string',
    describe: `Join the shard group named by --lease as one of its members, the group having this many shards (1 to ${MAX_SHARDS}), instead of campaigning for the lease: shards.json and /shards say which shards this member owns (docs/shards.md)`,
  },
  // No table default: given without --shards it is refused, so it must be seen as given or not.
  'max-members': {
    type: 'string',
    describe: `With --shards: the group's member slots (1 to ${MAX_MEMBER_SLOTS}, default ${DEFAULT_MAX_MEMBERS}); a member past them waits for a free slot. Every member gives the same`,
  },
} as const satisfies FlagTable;

/** Why `run` refuses --shards (and LEASEHOLD_SHARDS). */
export const RUN_SHARDS_RULE =
  'leasehold run does not join shard groups: it runs one command while it leads one lease, and a shard member owns several shards at once, each with its own token and its own drain, which only the app can start and stop (run leasehold sidecar --shards beside the app)';

interface ShardArgs {
  shards?: string | undefined;
  'max-members'?: string | undefined;
  'pod-label': boolean;
  'ready-when': string;
  'contention-window': string;
  'release-on-exit': boolean;
  'drain-timeout': string;
  'leader-endpoints'?: string | undefined;
  lease: string;
  backend: string;
}

export interface ShardSettings {
  shards: number;
  maxMembers: number;
}

function count(flag: string, text: string, max: number): number {
  if (!/^\d{1,5}$/.test(text) || Number(text) < 1 || Number(text) > max) throw badFlag(flag, text, `must be a whole number from 1 to ${max}`);
  return Number(text);
}

/**
 * The group's settings when --shards is given (undefined otherwise): read once, by
 * resolveSidecarCommand, whose drain checks then speak of the mode it says.
 */
export function resolveShards(f: FlagValues<ShardArgs>): ShardSettings | undefined {
  const a = f.values;
  if (a.shards === undefined) {
    if (a['max-members'] !== undefined) throw badFlag('max-members', a['max-members'], 'needs --shards: it bounds the members of a shard group');
    return undefined;
  }
  const shards = count('shards', a.shards, MAX_SHARDS);
  const maxMembers = a['max-members'] === undefined ? DEFAULT_MAX_MEMBERS : count('max-members', a['max-members'], MAX_MEMBER_SLOTS);
  const notForGroups = 'applies to a lease, not to a shard group (--shards)';
  if (a['pod-label']) {
    throw badFlag('pod-label', true, `${notForGroups}: a member is neither leader nor follower, so leasehold.io/role would say nothing true`);
  }
  if (isGiven(f.origins, 'ready-when')) {
    throw badFlag(
      'ready-when',
      a['ready-when'],
      `${notForGroups}: a member is ready while it holds a session in the group and its app is eligible, whoever owns which shard`,
    );
  }
  if (a['leader-endpoints'] !== undefined) {
    throw badFlag('leader-endpoints', a['leader-endpoints'], `${notForGroups}: a group has no leader for a Service to route to`);
  }
  if (isGiven(f.origins, 'contention-window')) {
    throw badFlag('contention-window', a['contention-window'], `${notForGroups}: a member takes a free shard at once, with nobody to contend with`);
  }
  if (!a['release-on-exit']) {
    throw badFlag(
      'release-on-exit',
      false,
      `${notForGroups}: a member that stops always gives each shard up through its drain and leaves the group; one that kept them would leave them without an owner until they expire`,
    );
  }
  if (a.backend === 'kubernetes') checkFlag('lease', a.lease, () => checkKubernetesGroupName(a.lease));
  return { shards, maxMembers };
}
