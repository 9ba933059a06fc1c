import type { CandidateSnapshot } from '../election/candidate-loop.js';
import type { LeaderStatus } from './leader-status.js';

/**
 * What the sidecar publishes (status.json, GET /leader): the elector's view, times as ISO
 * strings; `stoppedAt` only in the last write of a sidecar that stopped.
 */
export function toLeaderStatus(s: CandidateSnapshot, now: Date, stoppedAt: Date | null = null): LeaderStatus {
  return {
    lease: s.lease,
    identity: s.identity,
    holder: s.holder,
    isLeader: s.isLeader,
    fencingToken: s.fencingToken,
    acquiredAt: s.acquiredAt?.toISOString() ?? null,
    renewedAt: s.renewedAt?.toISOString() ?? null,
    validUntil: s.validUntil?.toISOString() ?? null,
    standingAside: s.standingAside ? { reason: s.standingAside.reason, since: s.standingAside.since.toISOString() } : null,
    stoppedAt: stoppedAt?.toISOString() ?? null,
    updatedAt: now.toISOString(),
  };
}
