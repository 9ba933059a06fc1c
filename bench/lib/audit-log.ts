/**
 * The API server's audit log (JSON lines, Metadata level), as the benches read it: the events
 * written after a byte offset, and whether an event is the one that counts a request.
 */
import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs';

export interface AuditEvent {
  stage: string;
  verb: string;
  user: { username: string };
  responseStatus?: { code?: number };
  /** What the request was about (absent for non-resource requests such as /version). */
  objectRef?: { resource?: string };
}

/** The log's size now: the offset from which the next events are read (the log only grows). */
export const auditBytes = (file: string): number => statSync(file).size;

export function auditEventsSince(file: string, from: number): AuditEvent[] {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(fstatSync(fd).size - from);
    readSync(fd, buf, 0, buf.length, from);
    return buf
      .toString('utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as AuditEvent);
  } finally {
    closeSync(fd);
  }
}

/** One event per request: ResponseComplete, or ResponseStarted for a long-running watch. */
export const countsAsRequest = (e: AuditEvent): boolean =>
  (e.stage === 'ResponseComplete' && e.verb !== 'watch') || (e.stage === 'ResponseStarted' && e.verb === 'watch');
