/**
 * The API server's requests for a shard group, from its audit log: every verb on Leases (get,
 * list, watch, create, update, patch, delete), by the members' users, whatever the answer, so
 * that the figure beside client-go's way is the server's own account of what the group cost it,
 * reads included (bench/lib/group-writes.ts counts the writes that landed).
 */
import { auditBytes, auditEventsSince, countsAsRequest, type AuditEvent } from './audit-log.js';

/** Requests by verb. */
export type VerbCounts = Record<string, number>;

/** The requests on Leases among `events`, by verb, of the users `isMember` accepts (one per request: countsAsRequest). */
export function countGroupRequests(events: readonly AuditEvent[], isMember: (user: string) => boolean): VerbCounts {
  const out: VerbCounts = {};
  for (const e of events) {
    if (!countsAsRequest(e) || !isMember(e.user.username) || e.objectRef?.resource !== 'leases') continue;
    out[e.verb] = (out[e.verb] ?? 0) + 1;
  }
  return out;
}

/** Every verb's requests together. */
export const totalRequests = (c: VerbCounts): number => Object.values(c).reduce((a, b) => a + b, 0);

export interface GroupRequestCounter {
  /** How the requests are counted, for the doc. */
  readonly how: string;
  /** Opens a window; its close() gives the requests sent in it, every member together, by verb. */
  open(): Promise<{ close(): Promise<VerbCounts> }>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function auditGroupRequests(auditLog: string, isMember: (user: string) => boolean): GroupRequestCounter {
  return {
    how: "the API server's audit log: every request on Leases by the members' users (get, list, watch, create, update, patch, delete), whatever its answer",
    async open() {
      // As auditGroupWrites: the log is written as requests complete; let those under way land.
      await sleep(200);
      const from = auditBytes(auditLog);
      return {
        close: async () => {
          await sleep(500);
          return countGroupRequests(auditEventsSince(auditLog, from), isMember);
        },
      };
    },
  };
}
