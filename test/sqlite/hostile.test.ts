/**
 * What a hostile or careless user did to local mode, each on real processes and real files:
 * a closed log pipe, a replaced database, two processes with one identity, a read-only
 * database, out-of-range values written by a peer. Each failed before its fix.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { runCli, startCli, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { leadersByStatus, startSidecar, validLeaders, type Candidate } from '../support/sidecars.js';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';

const T = { leaseDuration: '2s', renewDeadline: '1500ms', retryPeriod: '400ms' };

async function holderOf(db: string, lease: string) {
  const store = new SqliteLeaseStore(db, { readonly: true });
  try {
    return (await store.get(lease))?.record;
  } finally {
    await store.close();
  }
}

describe('hostile and careless use of local mode', () => {
  const procs: Proc[] = [];
  const cands: Candidate[] = [];
  const dir = scratchDir(() => [...procs, ...cands]);

  it('a closed stderr does not kill the leader: it still steps down, writes not-leader and releases', { timeout: 60_000 }, async () => {
    const db = join(dir.path, 'epipe.db');
    const c = startSidecar(dir.path, 'epipe', ['--db', db, '--lease', 'epipe'], T);
    cands.push(c);
    await waitFor('leadership', () => leadersByStatus([c]).length === 1, 20_000);
    c.proc.child.stderr!.destroy(); // the log reader goes away: the next log line meets EPIPE
    c.proc.kill('SIGTERM'); // "shutting down", "stopped leading", "released lease": all logged into the closed pipe
    const exit = await c.proc.exited;
    assert.equal(exit.code, 0, `exit ${JSON.stringify(exit)}`);
    assert.equal(readFileSync(join(c.statusDir, 'is-leader'), 'utf8'), 'false\n');
    assert.equal((await holderOf(db, 'epipe'))?.holderIdentity, '', 'released');
  });

  it('a deleted and recreated database never gives two leaders; the sitting leader recreates the lease with its next token', { timeout: 60_000 }, async () => {
    const work = join(dir.path, 'replaced');
    mkdirSync(work);
    const db = join(work, 'leases.db');
    const a = startSidecar(work, 'a', ['--db', db, '--lease', 'r'], T);
    const b = startSidecar(work, 'b', ['--db', db, '--lease', 'r'], T);
    cands.push(a, b);
    const first = await waitFor('a leader', () => validLeaders([a, b])[0], 20_000);
    for (const f of ['', '-wal', '-shm']) rmSync(db + f, { force: true });
    const c = startSidecar(work, 'c', ['--db', db, '--lease', 'r'], T); // a newcomer finds no database at all
    cands.push(c);
    const all = [a, b, c];
    const seen = new Set<string>();
    const deadline = Date.now() + 8_000;
    let next: { id: string; token: number } | undefined;
    while (Date.now() < deadline) {
      const leaders = validLeaders(all);
      assert.ok(leaders.length <= 1, `two valid leaders: ${leaders.map((l) => `${l.c.id}/${l.token}`).join(', ')}`);
      for (const l of leaders) seen.add(`${l.c.id}/${l.token}`);
      const rec = await holderOf(db, 'r').catch(() => undefined);
      if (rec && rec.holderIdentity !== '' && leaders.length === 1 && leaders[0]!.token > first.token)
        next = { id: leaders[0]!.c.id, token: leaders[0]!.token };
      if (next) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(next, `a leader with a token above ${first.token} on the new file; seen ${[...seen].join(', ')}`);
    assert.equal(next.id, first.c.id, 'the sitting leader, which remembers the history, recreated it');
    assert.equal(next.token, first.token + 1);
    // The status files can show the new term before the sidecar's log line reaches this process's pipe.
    await waitFor('the leader says the file was replaced', () => /was replaced or deleted/.test(first.c.proc.stderr()) || undefined, 10_000).catch(
      () => undefined,
    );
    assert.match(first.c.proc.stderr(), /was replaced or deleted/);
  });

  it('a term begun and lost with a deleted database between two reads of a waiting standby: its wait starts over', { timeout: 60_000 }, async () => {
    const work = join(dir.path, 'unseen-term');
    mkdirSync(work);
    const db = join(work, 'leases.db');
    const b = startSidecar(work, 'b', ['--db', db, '--lease', 'u'], T);
    cands.push(b);
    const absent = await waitFor('the absence line', () => /"createsAt":"([^"]+)"/.exec(b.proc.stderr())?.[1], 20_000);
    const createsAt = Date.parse(absent);
    await new Promise((r) => setTimeout(r, Math.max(0, createsAt - 800 - Date.now())));
    // The file is deleted, someone takes the lease on a new file, and that file is deleted too,
    // all between two of b's reads: b never sees that term, whose holder may act for a whole
    // lease duration.
    const wipe = () => {
      for (const f of ['', '-wal', '-shm']) rmSync(db + f, { force: true });
    };
    wipe();
    const heldAt = Date.now();
    const other = new SqliteLeaseStore(db);
    await other.create('u', { holderIdentity: 'x', leaseDurationSeconds: 2, acquireTime: new Date(heldAt), renewTime: new Date(heldAt), leaseTransitions: 7 });
    await other.close();
    wipe();
    const led = await waitFor('b to lead on the new file', () => validLeaders([b])[0], 20_000);
    const ledAt = Date.now();
    assert.ok(ledAt >= heldAt + 2_000, `b led ${ledAt - heldAt} ms after the unseen term began, inside its 2 s lease`);
    // 1 when b never saw token 7 (docs/fencing.md: it cannot know it); 8 when one of its reads fell
    // inside the few milliseconds that file lived.
    assert.ok(led.token === 1 || led.token === 8, `token ${led.token}`);
    assert.match(b.proc.stderr(), /was replaced or deleted/);
  });

  it('two processes given one --identity never both lead; the second says so in one error line', { timeout: 60_000 }, async () => {
    const work = join(dir.path, 'twins');
    mkdirSync(work);
    const db = join(work, 'leases.db');
    const one = startSidecar(work, 'twin', ['--db', db, '--lease', 'twins'], T);
    cands.push(one);
    await waitFor('the first leads', () => leadersByStatus([one]).length === 1, 20_000);
    const two: Candidate = { ...startSidecar(join(work, 'second'), 'twin', ['--db', db, '--lease', 'twins'], T) };
    cands.push(two);
    const until = Date.now() + 5_000;
    while (Date.now() < until) {
      assert.ok(validLeaders([one, two]).length <= 1, 'both lead');
      await new Promise((r) => setTimeout(r, 25));
    }
    assert.equal(leadersByStatus([one]).length, 1, 'the first keeps its term');
    const errors = two.proc
      .stderr()
      .split('\n')
      .filter((l) => l.includes('"level":"error"'));
    assert.equal(errors.length, 1, two.proc.stderr());
    assert.match(errors[0]!, /did not write/);
  });

  it('a read-only database is refused at start (exit 2), not reported healthy forever', { timeout: 30_000 }, async () => {
    const work = join(dir.path, 'readonly');
    mkdirSync(work);
    const db = join(work, 'leases.db');
    new Database(db).close(); // an existing, valid database
    // Root ignores permission bits, so as root the folder becomes a read-only bind mount;
    // otherwise the permission bits do it. Either way the sidecar can read but never write.
    const root = process.getuid?.() === 0;
    if (root) {
      execFileSync('mount', ['--bind', work, work]);
      execFileSync('mount', ['-o', 'remount,bind,ro', work]);
    } else {
      chmodSync(db, 0o444);
      chmodSync(work, 0o555);
    }
    try {
      const p = startCli(['sidecar', '--db', db, '--listen', 'off']);
      procs.push(p);
      const exit = await p.exited;
      assert.equal(exit.code, 2, p.stderr());
      assert.match(p.stderr(), /^leasehold: cannot (open|prepare) SQLite lease store .*(readonly|read-only|permission)/im);
    } finally {
      if (root) execFileSync('umount', [work]);
      else chmodSync(work, 0o755);
    }
  });

  it('status reads a row with out-of-range times and a huge token without crashing', { timeout: 30_000 }, async () => {
    const db = join(dir.path, 'odd.db');
    await new SqliteLeaseStore(db).close();
    const raw = new Database(db);
    raw
      .prepare('INSERT INTO leases (name, holder_identity, fencing_token, renew_time, lease_duration_seconds) VALUES (?, ?, ?, ?, ?)')
      .run('odd', 'peer', 3, 1e300, 15);
    raw
      .prepare('INSERT INTO leases (name, holder_identity, fencing_token, renew_time, lease_duration_seconds) VALUES (?, ?, ?, ?, ?)')
      .run('huge', 'peer', 2 ** 60, 1, 15);
    raw.close();
    const odd = await runCli(['status', '--db', db, '--lease', 'odd']);
    assert.equal(odd.code, 0, odd.stderr);
    assert.match(odd.stdout, /renewed\s+-/);
    const huge = await runCli(['status', '--db', db, '--lease', 'huge']);
    assert.notEqual(huge.code, 0);
    assert.match(huge.stderr, /fencing token .* is not an integer from 0 to 9007199254740991/);
    assert.equal(huge.stderr.trim().split('\n').length, 1);
  });
});
