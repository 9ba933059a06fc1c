import { it } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryLeaseStore } from '../src/testing/memory-store.js';
import { formatReport } from './status-command.js';
import { readReport } from './lease-report.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventEmitter } from 'node:events';
import { main } from './main.js';
import { openStore } from '../src/backends/open-store.js';
import type { CliIo } from './cli-io.js';

const now = new Date('2026-12-02T09:00:00.000Z');

it('a lease duration that is not a number, or past what a Date holds, is an unknown expiry on any store', async () => {
  const store = new MemoryLeaseStore();
  for (const seconds of [NaN, 1e308, Infinity]) {
    store.put('x', { holderIdentity: 'peer', leaseDurationSeconds: seconds, acquireTime: null, renewTime: now, leaseTransitions: 3 });
    const report = await readReport(store, 'x', now);
    assert.equal(report.expiresAt, null, String(seconds));
    assert.match(formatReport(report, now), /^expires {2}-$/m);
  }
});

it('the text report escapes a holder from any store, as the status files do', () => {
  const text = formatReport(
    { lease: 'x', backend: 'kubernetes', location: 'ns/x', found: true, state: 'held', holder: 'a\nstate    released\u001b[2J', fencingToken: 1 },
    now,
  );
  assert.ok(!text.includes('\u001b'), text);
  assert.equal(text.match(/^state/gm)?.length, 1);
  assert.match(text, /^holder {3}a\\u000astate {4}released\\u001b\[2J$/m);
});

it('the text report escapes bidi and zero-width format characters, which reorder or hide what the screen shows', () => {
  const holder = 'evil\u202egnp.exe\u2066x\u2069\u200b\u200f\ufeff\u{e0041}';
  const text = formatReport({ lease: 'x', backend: 'sqlite', location: 'l.db', found: true, state: 'held', holder, fencingToken: 1 }, now);
  assert.ok(!/\p{Cf}/u.test(text), JSON.stringify(text));
  assert.match(text, /^holder {3}evil\\u202egnp\.exe\\u2066x\\u2069\\u200b\\u200f\\ufeff\\u\{e0041\}$/m);
});

it("--status-dir: the candidate's standing-aside reason is escaped for a terminal, and a foreign file is an error line", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-candidate-'));
  try {
    const store = new MemoryLeaseStore();
    store.put('x', { holderIdentity: 'peer', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 3 });
    const reason = 'app unhealthy: GET http://127.0.0.1:8080/healthz: status 503: \u001b[2Jstate    released\u202e';
    writeFileSync(join(dir, 'status.json'), JSON.stringify({ identity: 'me', isLeader: false, standingAside: { reason, since: '2026-12-02T08:59:00.000Z' } }));
    const report = await readReport(store, 'x', now, dir);
    assert.deepEqual(report.candidate, {
      statusDir: dir,
      identity: 'me',
      isLeader: false,
      standingAside: { reason, since: '2026-12-02T08:59:00.000Z' },
      stoppedAt: null,
    });
    const text = formatReport(report, now);
    assert.ok(!text.includes('\u001b') && !text.includes('\u202e'), text);
    assert.equal(text.match(/^state/gm)?.length, 1);
    assert.match(text, /^sidecar {2}me: standing aside since 2026-12-02T08:59:00\.000Z: app unhealthy: .*status 503: \\u001b\[2Jstate {4}released\\u202e$/m);
    writeFileSync(join(dir, 'status.json'), JSON.stringify({ identity: 'me', isLeader: false, standingAside: 'x' }));
    assert.match(formatReport(await readReport(store, 'x', now, dir), now), /^sidecar {2}cannot read .*status\.json: not a status file of leasehold$/m);
    writeFileSync(join(dir, 'status.json'), JSON.stringify({ identity: 'me', isLeader: true, standingAside: null }));
    assert.match(formatReport(await readReport(store, 'x', now, dir), now), /^sidecar {2}me: leader$/m);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** main() with `args`, its output captured; `untilOut` (a watch): SIGTERM once stdout says it. */
async function statusMain(args: string[], untilOut?: RegExp) {
  const out: string[] = [];
  const err: string[] = [];
  const signals = new EventEmitter();
  const io: CliIo = {
    stdout: (t) => {
      out.push(t);
      if (untilOut?.test(out.join(''))) setImmediate(() => signals.emit('SIGTERM'));
    },
    stderr: (t) => void err.push(t),
    signals,
    exit: (code) => assert.fail(`exit ${code}`),
  };
  const code = await main(args, { PATH: process.env.PATH }, io);
  return { code, stdout: out.join(''), stderr: err.join('') };
}

it('a name that is both a lease and a shard group (SQLite keeps them apart): status shows both, --watch follows the lease', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-both-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const db = join(dir, 'leases.db');
  const store = await openStore({ backend: 'sqlite', db });
  try {
    await store.create('both', { holderIdentity: 'leader-a', leaseDurationSeconds: 15, acquireTime: new Date(), renewTime: new Date(), leaseTransitions: 4 });
    await store.createGroupRecord('both', { kind: 'group', index: 0, shards: 8, createdAt: new Date() });
  } finally {
    await store.close();
  }
  const text = await statusMain(['status', '--db', db, '--lease', 'both']);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /^holder {3}leader-a$/m, 'the lease');
  assert.match(text.stdout, /^token {4}4$/m);
  assert.match(text.stdout, /^group {4}both \(sqlite: .*\)\nshards {3}8, created/m, 'and the group');
  const json = await statusMain(['status', '--db', db, '--lease', 'both', '--json']);
  const parsed = JSON.parse(json.stdout) as { holder: string; shardGroup: { group: string; kind: string; shards: number } };
  assert.equal(parsed.holder, 'leader-a');
  assert.equal(parsed.shardGroup.kind, 'shard-group');
  assert.equal(parsed.shardGroup.shards, 8);
  const watch = await statusMain(['status', '--db', db, '--lease', 'both', '--watch'], /leader-a/);
  assert.equal(watch.code, 0, watch.stderr);
  assert.match(watch.stdout, /leader-a/);
  assert.equal(
    watch.stderr,
    "leasehold: both is both a lease and a shard group: --watch follows the lease; run leasehold status --lease both without --watch to see the group's shards too\n",
  );
});
