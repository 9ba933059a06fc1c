/**
 * What the CLI prints, on real processes: its own version when installed in an app, help that
 * names the variables and exit codes, a status that cannot be forged by a hostile holder or
 * broken by a peer's huge duration, and what `status` looks up inside a `run` command.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, readdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { CLI, NODE_FLAGS, REPO, runCli, runOnce, tempDir } from '../support/cli.js';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';

const T = ['--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '400ms'];

async function leaseRow(db: string, name: string, holder: string, durationSeconds: number): Promise<void> {
  await new SqliteLeaseStore(db).close();
  const raw = new Database(db);
  raw
    .prepare('INSERT INTO leases (name, holder_identity, fencing_token, renew_time, lease_duration_seconds) VALUES (?, ?, ?, ?, ?)')
    .run(name, holder, 4, Date.now() / 1000, durationSeconds);
  raw.close();
}

describe('what the CLI prints', () => {
  const dir = tempDir();
  after(dir.cleanup);

  it("--version prints leasehold's version when installed in an app, not the app's", async () => {
    // An app's node_modules as npm lays it out: leasehold is a real folder there, below the
    // app's package.json (the nearest one above node_modules is the app's).
    const app = join(dir.path, 'app');
    const modules = join(app, 'node_modules');
    mkdirSync(join(modules, 'leasehold'), { recursive: true });
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', version: '9.9.9' }));
    cpSync(join(REPO, 'package.json'), join(modules, 'leasehold', 'package.json'));
    cpSync(join(REPO, 'dist'), join(modules, 'leasehold', 'dist'), { recursive: true });
    const shared = realpathSync(join(REPO, 'node_modules'));
    for (const name of readdirSync(shared)) {
      if (!name.startsWith('.')) symlinkSync(join(shared, name), join(modules, name));
    }
    const r = await runCli(['--version'], {}, app);
    const own = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }).version;
    assert.equal(r.stdout.trim(), own, r.stderr);
  });

  it('--help names the LEASEHOLD_* variables and the exit codes; run --help says what run does', async () => {
    for (const args of [['--help'], ['sidecar', '--help'], ['run', '--help'], ['status', '--help']]) {
      const r = await runCli(args);
      assert.equal(r.code, 0, r.stderr);
      const text = r.stdout.replace(/\s+/g, ' ');
      assert.match(text, /Every flag can also be set as LEASEHOLD_<FLAG>/, args.join(' '));
      assert.match(text, /Exit status: 0 .* 1 .* 2 bad input/, args.join(' '));
    }
    const run = await runCli(['run', '--help']);
    assert.match(run.stdout.replace(/\s+/g, ' '), /leasehold run \[flags\] -- CMD \[ARGS\.\.\.\] Run a command only while leader: wait to be elected/);
  });

  it('the other ways people ask for help give the same text: -h, help [COMMAND], --help COMMAND', async () => {
    const overall = (await runCli(['--help'])).stdout;
    const sidecar = (await runCli(['sidecar', '--help'])).stdout;
    assert.notEqual(overall, sidecar);
    for (const [args, want] of [
      [['-h'], overall],
      [['help'], overall],
      [['sidecar', '-h'], sidecar],
      [['help', 'sidecar'], sidecar],
      [['--help', 'sidecar'], sidecar],
    ] as const) {
      const r = await runCli([...args]);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stdout, want, args.join(' '));
    }
    // A mistyped command is refused wherever it stands, not answered with the overall help.
    for (const args of [
      ['help', 'nope'],
      ['--help', 'nope'],
      ['-h', 'nope'],
    ]) {
      const bad = await runCli(args);
      assert.equal(bad.code, 2, args.join(' '));
      assert.match(bad.stderr, /^leasehold: unknown command "nope"/, args.join(' '));
      assert.equal(bad.stdout, '', args.join(' '));
    }
    // `help` with more words is still help, for the command it names.
    const more = await runCli(['help', 'sidecar', '--lease']);
    assert.equal(more.code, 0, more.stderr);
    assert.equal(more.stdout, sidecar);
    const after = await runCli(['help', 'run', '--', 'sh', '-c', 'exit 7']);
    assert.equal(after.code, 0, after.stderr);
    assert.match(after.stdout, /^leasehold run \[flags\] -- CMD/);
    const typo = await runCli(['help', 'nope', 'x']);
    assert.equal(typo.code, 2);
    assert.match(typo.stderr, /^leasehold: unknown command "nope"/);
    // A flag's value before the command is no command: `x` is --lease's, so no command is named.
    for (const args of [
      ['--lease', 'x', '--help'],
      ['--log-level', 'debug', '-h'],
    ]) {
      const r = await runCli(args);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stdout, overall, args.join(' '));
    }
  });

  it("sidecar --help and run --help list the app's health flags, with --health-exec's shell and the defaults", async () => {
    for (const command of ['sidecar', 'run']) {
      const text = (await runCli([command, '--help'])).stdout.replace(/\s+/g, ' ');
      for (const flag of ['http', 'tcp', 'exec', 'period', 'timeout', 'initial-delay', 'failure-threshold', 'success-threshold', 'hold-down']) {
        assert.match(text, new RegExp(`--health-${flag} `), `${command} --health-${flag}`);
      }
      assert.match(text, /run this command line with \/bin\/sh -c; healthy on exit 0/);
      assert.match(text, /\(default 30s; 0s: off\)/);
    }
    assert.match((await runCli(['status', '--help'])).stdout, /--status-dir/);
  });

  it('operator --help gives its own exit statuses, not those of status and run', async () => {
    const r = await runCli(['operator', '--help']);
    assert.equal(r.code, 0, r.stderr);
    const text = r.stdout.replace(/\s+/g, ' ');
    assert.match(text, /Exit status: 0 stopped by SIGTERM or SIGINT; 1 a failure .*; 2 bad input/);
    assert.doesNotMatch(text, /--skip-if-ran-within|124 not elected/);
    assert.match(text, /--extra-host .*\(--certificates operator only\)/);
  });

  it('--release-on-exit names every signal that releases: SIGTERM, SIGINT and SIGHUP (cmd/signals.ts)', async () => {
    for (const command of ['sidecar', 'run']) {
      const r = await runCli([command, '--help']);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout.replace(/\s+/g, ' '), /--release-on-exit Release the lease on SIGTERM\/SIGINT\/SIGHUP /, command);
    }
  });

  it('run --help promises LEASEHOLD_STATUS_DIR only with --status-dir, as the command gets it', { timeout: 60_000 }, async () => {
    for (const args of [['--help'], ['run', '--help']]) {
      const text = (await runCli(args)).stdout.replace(/\s+/g, ' ');
      assert.match(text, /LEASEHOLD_IDENTITY set \(and LEASEHOLD_STATUS_DIR with --status-dir\)/, args.join(' '));
    }
    const r = await runOnce(join(dir.path, 'env.db'), 'env', 'env', T, ['sh', '-c', 'echo "dir=${LEASEHOLD_STATUS_DIR-unset}"']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'dir=unset\n');
  });

  it('status escapes a hostile holder: no escape sequence, no forged line', async () => {
    const db = join(dir.path, 'hostile.db');
    const holder = 'evil\x1b[2J\nstate    released';
    await leaseRow(db, 'h', holder, 15);
    const r = await runCli(['status', '--db', db, '--lease', 'h']);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(!r.stdout.includes('\x1b'), r.stdout);
    const lines = r.stdout.trimEnd().split('\n');
    assert.equal(lines.length, 7, r.stdout);
    assert.deepEqual(
      lines.filter((l) => l.startsWith('state')),
      ['state    held'],
    );
    assert.ok(lines.includes('holder   evil\\u001b[2J\\u000astate    released'), r.stdout);
    const json = await runCli(['status', '--db', db, '--lease', 'h', '--json']);
    assert.equal((JSON.parse(json.stdout) as { holder: string }).holder, holder, 'the JSON keeps the exact value');
  });

  it('status escapes bidi and zero-width characters in a holder: it cannot reorder what the screen shows', async () => {
    const db = join(dir.path, 'bidi.db');
    const holder = 'admin\u202e\u2066\u200bexe.txt';
    await leaseRow(db, 'b', holder, 15);
    const r = await runCli(['status', '--db', db, '--lease', 'b']);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(!/\p{Cf}/u.test(r.stdout), JSON.stringify(r.stdout));
    assert.ok(r.stdout.split('\n').includes('holder   admin\\u202e\\u2066\\u200bexe.txt'), r.stdout);
    const json = await runCli(['status', '--db', db, '--lease', 'b', '--json']);
    assert.equal((JSON.parse(json.stdout) as { holder: string }).holder, holder, 'the JSON keeps the exact value');
  });

  it('status shows a lease duration of 1e308 seconds as an unknown expiry', async () => {
    const db = join(dir.path, 'huge.db');
    await leaseRow(db, 'huge', 'peer', 1e308);
    const r = await runCli(['status', '--db', db, '--lease', 'huge']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^state {4}held$/m);
    assert.match(r.stdout, /^expires {2}-$/m);
    const json = await runCli(['status', '--db', db, '--lease', 'huge', '--json']);
    assert.equal(json.code, 0, json.stderr);
    assert.equal((JSON.parse(json.stdout) as { expiresAt: unknown }).expiresAt, null);
  });

  it("inside a `run` command, `leasehold status` looks up the parent's lease", { timeout: 60_000 }, async () => {
    const db = join(dir.path, 'inside.db');
    const r = await runOnce(db, 'jobs', 'parent', T, [process.execPath, ...NODE_FLAGS, CLI, 'status', '--db', db]);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.match(r.stdout, /^lease {4}jobs \(sqlite: /m);
    assert.match(r.stdout, /^holder {3}parent$/m);
  });
});
