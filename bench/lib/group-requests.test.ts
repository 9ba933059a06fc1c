import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { AuditEvent } from './audit-log.js';
import { countGroupRequests, totalRequests } from './group-requests.js';

const event = (verb: string, user: string, o: Partial<AuditEvent> = {}): AuditEvent => ({
  stage: verb === 'watch' ? 'ResponseStarted' : 'ResponseComplete',
  verb,
  user: { username: user },
  responseStatus: { code: 200 },
  objectRef: { resource: 'leases' },
  ...o,
});

describe("the API server's requests for a shard group", () => {
  it("every verb on Leases by the members' users, once per request, failed ones included", () => {
    const events = [
      event('update', 'shard-m0'),
      event('update', 'shard-m1', { responseStatus: { code: 409 } }), // a lost compare-and-swap is a request too
      event('update', 'shard-m1', { stage: 'RequestReceived' }), // the same request's first stage
      event('list', 'shard-m0'),
      event('watch', 'shard-m0'),
      event('watch', 'shard-m0', { stage: 'ResponseComplete' }), // the watch's end: not a second request
      event('get', 'shard-plain'), // the plain sidecar's
      event('get', 'shard-m2', { objectRef: { resource: 'namespaces' } }),
      event('get', 'shard-m2', { objectRef: undefined }), // /version and such
    ];
    const c = countGroupRequests(events, (u) => u.startsWith('shard-m'));
    assert.deepEqual(c, { update: 2, list: 1, watch: 1 });
    assert.equal(totalRequests(c), 4);
  });
});
