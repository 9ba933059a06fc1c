import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';
import { startCli, tempDir, waitFor, type Proc } from '../support/cli.js';
import { openStream } from '../support/sse-client.js';

const T = ['--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '400ms'];

/** The bound address, from the sidecar's "campaigning" log line (it listens on port 0). */
async function address(p: Proc): Promise<string> {
  return waitFor('the listen address', () => /"listen":"([\d.:]+)"/.exec(p.stderr())?.[1], 20_000);
}

describe('HTTP: /healthz /readyz /leader /metrics', () => {
  const dir = tempDir();
  const procs: Proc[] = [];
  after(() => {
    for (const p of procs) p.kill('SIGKILL');
    dir.cleanup();
  });

  it('answers for a leader and a follower, readiness gated on leadership', { timeout: 60_000 }, async () => {
    const db = join(dir.path, 'leases.db');
    const leader = startCli(['sidecar', '--db', db, '--lease', 'web', '--identity', 'lead', '--listen', '127.0.0.1:0', ...T]);
    procs.push(leader);
    const la = await address(leader);
    await waitFor('leader', async () => (await fetch(`http://${la}/readyz`)).status === 200, 20_000);
    const follower = startCli(['sidecar', '--db', db, '--lease', 'web', '--identity', 'follow', '--listen', '127.0.0.1:0', ...T]);
    const any = startCli(['sidecar', '--db', db, '--lease', 'web', '--identity', 'any', '--listen', '127.0.0.1:0', '--ready-when', 'elected-any', ...T]);
    procs.push(follower, any);
    const fa = await address(follower);
    const aa = await address(any);
    await waitFor(
      'the follower to see the leader',
      async () => ((await (await fetch(`http://${fa}/leader`)).json()) as { name: string }).name === 'lead',
      20_000,
    );

    assert.equal((await fetch(`http://${la}/healthz`)).status, 200);
    assert.equal((await fetch(`http://${fa}/healthz`)).status, 200);
    assert.equal((await fetch(`http://${fa}/readyz`)).status, 503, 'a follower is not ready by default');
    await waitFor('elected-any follower ready', async () => (await fetch(`http://${aa}/readyz`)).status === 200, 10_000);

    const body = (await (await fetch(`http://${la}/leader`)).json()) as Record<string, unknown>;
    assert.equal(body.name, 'lead');
    assert.equal(body.isLeader, true);
    assert.equal(typeof body.fencingToken, 'number');
    assert.ok(Date.parse(body.validUntil as string) > Date.now());

    // The leader acquired with a create; an update series exists only after its first renewal.
    // Wait for that condition, not for time (this raced on a loaded machine).
    const metrics = await waitFor(
      'a renewal in the metrics',
      async () => {
        const text = await (await fetch(`http://${la}/metrics`)).text();
        return /op="update",result="ok"/.test(text) && text;
      },
      20_000,
    );
    assert.match(metrics, /^leader_election_master_status\{name="web"\} 1$/m);
    assert.match(metrics, /^leader_election_slowpath_total\{name="web"\} \d+$/m);
    assert.match(metrics, /^leasehold_fencing_token\{lease="web"\} \d+$/m);
    assert.match(metrics, /^leasehold_leadership_transitions_total\{lease="web",event="acquired"\} 1$/m);
    assert.match(metrics, /^leasehold_backend_request_duration_seconds_count\{backend="sqlite",op="update",result="ok"\} \d+$/m);
    assert.match(metrics, /^leasehold_process_resident_memory_bytes \d+/m);
    const fm = await (await fetch(`http://${fa}/metrics`)).text();
    assert.match(fm, /^leader_election_master_status\{name="web"\} 0$/m);

    assert.equal((await fetch(`http://${la}/nope`)).status, 404);
    assert.equal((await fetch(`http://${la}/leader`, { method: 'POST' })).status, 405);
  });
});

describe('HTTP: a holder that another writer put in the store', () => {
  const dir = tempDir();
  const procs: Proc[] = [];
  after(() => {
    for (const p of procs) p.kill('SIGKILL');
    dir.cleanup();
  });

  it('is escaped in every body: no control character, terminal escape or bidi override leaves raw', { timeout: 60_000 }, async () => {
    const db = join(dir.path, 'leases.db');
    await new SqliteLeaseStore(db).close();
    // ESC and CSI (C0 and C1) sequences that clear a screen, a newline that forges a line, a bidi override.
    const holder = 'evil\u001b[2J\u009b31m\n\u202eX\u2028';
    const raw = new Database(db);
    raw
      .prepare('INSERT INTO leases (name, holder_identity, fencing_token, renew_time, lease_duration_seconds) VALUES (?, ?, ?, ?, ?)')
      .run('web', holder, 7, Date.now() / 1000, 3600);
    raw.close();
    const p = startCli(['sidecar', '--db', db, '--lease', 'web', '--identity', 'me', '--listen', '127.0.0.1:0', ...T]);
    procs.push(p);
    const at = await address(p);
    const leader = await waitFor(
      'the holder seen',
      async () => {
        const text = await (await fetch(`http://${at}/leader`)).text();
        return (JSON.parse(text) as { holder: string | null }).holder === holder && text;
      },
      20_000,
    );
    const unsafe = /[\p{Cc}\p{Cf}\u2028\u2029]/u;
    assert.ok(leader.endsWith('}\n'));
    assert.doesNotMatch(leader.slice(0, -1), unsafe, '/leader holds no raw control or format character but its final newline');
    assert.equal((JSON.parse(leader) as { name: string }).name, holder, 'and parses to the holder as stored');

    const ready = await fetch(`http://${at}/readyz`);
    assert.equal(ready.status, 503);
    const line = await ready.text();
    assert.equal(line, 'unavailable: not leader (holder: evil\\u001b[2J\\u009b31m\\u000a\\u202eX\\u2028)\n');

    const [host, port] = at.split(':') as [string, string];
    const stream = await openStream(host, Number(port));
    await waitFor('the first event', () => stream.events.length > 0, 10_000);
    stream.close();
    assert.doesNotMatch(stream.events[0]!, unsafe, 'nor does the stream');
    assert.equal((JSON.parse(stream.events[0]!) as { holder: string }).holder, holder);
  });
});
