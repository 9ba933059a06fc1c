import type { LeaseRecord } from '../../src/backends/lease-store.js';

/** A held record for store tests: holder 'a', 15 s, token 1, both times one fixed instant (to the millisecond). */
export const RECORD_TIME = new Date('2026-12-02T09:15:24.123Z');
export const leaseRecord = (over: Partial<LeaseRecord> = {}): LeaseRecord => ({
  holderIdentity: 'a',
  leaseDurationSeconds: 15,
  acquireTime: RECORD_TIME,
  renewTime: RECORD_TIME,
  leaseTransitions: 1,
  ...over,
});
