/**
 * `leasehold status --lease G` for a shard group, as text: the group, its member slots (one line
 * each: identity, state, session, last heartbeat), then one line per shard (owner or "none",
 * token, owner's session). Every identity comes from the store, written by any member: escaped
 * for a terminal. With --status-dir, the member whose sidecar writes that directory (its
 * shards.json).
 */
import { join } from 'node:path';
import { formatDuration } from '../src/config/duration.js';
import { describeError } from '../src/errors.js';
import { escapeForTerminal } from '../src/util/escape-control.js';
import { SHARDS_FILE } from '../src/status/shards-status.js';
import type { GroupReport } from './group-report.js';
import { readBounded } from './status-candidate.js';

export type ShardsCandidateView =
  | {
      statusDir: string;
      identity: string;
      owned: number[];
      validUntil: string | null;
      standingAside: { reason: string; since: string } | null;
      stoppedAt: string | null;
    }
  | { statusDir: string; error: string };

const isString = (v: unknown): v is string => typeof v === 'string';

/** The member its status directory describes (shards.json); an unreadable or foreign file is told as `error`, not thrown. */
export function readShardsCandidate(statusDir: string): ShardsCandidateView {
  const path = join(statusDir, SHARDS_FILE);
  try {
    const s = JSON.parse(readBounded(path)) as Record<string, unknown>;
    const owned = s.owned;
    const aside = s.standingAside as { reason?: unknown; since?: unknown } | null | undefined;
    if (
      !isString(s.identity) ||
      !Array.isArray(owned) ||
      !owned.every((o: { shard?: unknown }) => Number.isSafeInteger(o?.shard)) ||
      (s.validUntil !== null && !isString(s.validUntil)) ||
      (aside != null && (!isString(aside.reason) || !isString(aside.since))) ||
      (s.stoppedAt !== null && !isString(s.stoppedAt))
    ) {
      throw new Error('not a shards.json of leasehold');
    }
    return {
      statusDir,
      identity: s.identity,
      owned: (owned as { shard: number }[]).map((o) => o.shard),
      validUntil: s.validUntil,
      standingAside: aside ? { reason: aside.reason as string, since: aside.since as string } : null,
      stoppedAt: s.stoppedAt,
    };
  } catch (err) {
    return { statusDir, error: `cannot read ${path}: ${describeError(err)}` };
  }
}

/** One line: what the member says it owns (nothing once its file's validUntil passed), or why it takes none. */
export function formatShardsCandidate(c: ShardsCandidateView, now: Date): string {
  if ('error' in c) return escapeForTerminal(c.error);
  const expired = c.validUntil === null || Date.parse(c.validUntil) <= now.getTime();
  const state = c.stoppedAt
    ? `stopped at ${c.stoppedAt}, not a member`
    : c.standingAside
      ? `standing aside since ${c.standingAside.since}: ${c.standingAside.reason}`
      : c.owned.length > 0 && expired
        ? `owns nothing: its shards.json expired at ${c.validUntil}`
        : `owns ${c.owned.length} shards${c.owned.length > 0 ? ` (${c.owned.join(' ')})` : ''}`;
  return escapeForTerminal(`${c.identity}: ${state}`);
}

export function formatGroupReport(r: GroupReport, now: Date, candidate?: ShardsCandidateView): string {
  const ago = (iso: string | null) => {
    if (!iso) return '-';
    const d = new Date(iso).getTime() - now.getTime();
    const amount = formatDuration(Math.round(Math.abs(d) / 100) * 100);
    return `${iso} (${d >= 0 ? `in ${amount}` : `${amount} ago`})`;
  };
  const lines = [
    `group    ${r.group} (${r.backend}: ${r.location})`,
    `shards   ${r.shards}, created ${r.createdAt}`,
    `members  ${r.liveMembers} live and active, ${r.members.length} slots written`,
    ...(candidate ? [`sidecar  ${formatShardsCandidate(candidate, now)}`] : []),
    '',
    'slot  identity              state    session  heartbeat',
    ...r.members.map((m) => {
      const who = m.status === 'released' ? '(free)' : escapeForTerminal(m.identity);
      const state = m.status === 'held' ? m.state : m.status;
      return `${String(m.slot).padEnd(6)}${who.padEnd(22)}${state.padEnd(9)}${String(m.session).padEnd(9)}${m.status === 'released' ? '-' : ago(m.renewedAt)}`;
    }),
    '',
    'shard  owner                 token  session',
    ...r.owners.map((o) => {
      const who = o.owner === null ? 'none' : escapeForTerminal(o.owner);
      const session = o.session === null ? '-' : `${o.session}${o.ownerLive ? '' : ' (over)'}`;
      return `${String(o.shard).padEnd(7)}${who.padEnd(22)}${String(o.token).padEnd(7)}${session}`;
    }),
  ];
  if (r.orphaned > 0) lines.push('', `${r.orphaned} of ${r.shards} shards have no live owner`);
  return lines.join('\n') + '\n';
}
