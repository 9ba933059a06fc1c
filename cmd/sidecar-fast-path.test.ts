import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sidecarFastPath } from './sidecar-fast-path.js';
import { SIDECAR_COMMAND_OPTIONS, resolveSidecarCommand, sidecarFlags } from './sidecar-settings.js';
import { booleanFlagsOf, flagsOf } from './env-flags.js';
import { runYargsCli } from './yargs-cli.js';
import { RUN_OPTIONS, resolveRun, runFlags } from './run-command.js';
import { RUN_FLAGS, runFastPath } from './run-fast-path.js';

const dir = mkdtempSync(join(tmpdir(), 'leasehold-fast-path-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const statusDir = join(dir, 'status');

const pick = (table: object, a: Record<string, unknown>) => Object.fromEntries(Object.keys(table).flatMap((k) => (a[k] === undefined ? [] : [[k, a[k]]])));

/** What the yargs path hands the sidecar or run command, and the settings it resolves from it. */
async function viaYargs(argv: string[], env: NodeJS.ProcessEnv) {
  let handed: { command: string; args: Record<string, unknown>; settings: unknown } | undefined;
  await runYargsCli(argv, env, {
    sidecar: async (a) => {
      handed = { command: 'sidecar', args: pick(SIDECAR_COMMAND_OPTIONS, a), settings: resolveSidecarCommand(a) };
      return 0;
    },
    run: async (a) => {
      handed = { command: 'run', args: { ...pick(RUN_OPTIONS, a), '--': a['--'] }, settings: resolveRun(a) };
      return 0;
    },
  });
  assert.ok(handed, 'yargs ran the command');
  return handed;
}

interface Case {
  argv: string[];
  env?: NodeJS.ProcessEnv;
}

const ID = ['--identity', 'pod-a'];
/** Input the fast path must take, with the settings yargs gives it. */
const ACCEPTED: Case[] = [
  { argv: ['sidecar', ...ID] },
  { argv: ['sidecar', '--identity=pod-a', '--lease', 'billing', '--db', join(dir, 'x.db')] },
  { argv: ['sidecar', ...ID, '--lease-duration', '30s', '--renew-deadline=20s', '--retry-period', '4s', '--contention-window', '0s'] },
  { argv: ['sidecar', ...ID, '--backend', 'kubernetes', '--namespace', 'team-a', '--kubeconfig', '/k/config', '--pod-label'] },
  { argv: ['sidecar', ...ID, '--backend=postgres', '--postgres-url', 'postgres://u@h/db', '--postgres-table', 'leasing.leases'] },
  { argv: ['sidecar', ...ID, '--no-release-on-exit', '--allow-network-filesystem'] },
  { argv: ['sidecar', ...ID, '--release-on-exit=false', '--allow-network-filesystem=true', '--pod-label=false'] },
  { argv: ['sidecar', ...ID, '--release-on-exit=true'] },
  { argv: ['sidecar', ...ID, '--listen', 'off', '--ready-when', 'elected-any', '--log-format', 'text', '--log-level', 'debug'] },
  { argv: ['sidecar', ...ID, '--listen=off', '--status-dir', statusDir] },
  { argv: ['sidecar', ...ID, '--listen', ':4041', '--lease', '123'] },
  { argv: ['sidecar', ...ID, '--lease', 'true', '--db', '0x10', '--namespace=1e3', '--kubeconfig', 'a b'] },
  { argv: ['sidecar', ...ID, '--listen=[::1]:0', '--db=a=b.db'] },
  { argv: ['sidecar', ...ID, '--drain-timeout', '3s'] },
  { argv: ['sidecar', ...ID], env: { LEASEHOLD_DRAIN_TIMEOUT: '500ms', LEASEHOLD_RENEW_DEADLINE: '8s' } },
  // The app's health: each source, every setting, and their variables.
  { argv: ['sidecar', ...ID, '--health-http', 'http://127.0.0.1:8080/healthz?full=1'] },
  { argv: ['sidecar', ...ID, '--health-tcp=5432', '--health-period', '5s', '--health-timeout', '500ms', '--health-initial-delay', '2s'] },
  { argv: ['sidecar', ...ID, '--health-tcp', '[::1]:5432', '--health-failure-threshold', '5', '--health-success-threshold=2', '--health-hold-down', '0s'] },
  { argv: ['sidecar', ...ID, '--health-exec', 'pg_isready -h 127.0.0.1 && test -f /tmp/ok'] },
  { argv: ['sidecar', ...ID], env: { LEASEHOLD_HEALTH_TCP: 'db.local:5432', LEASEHOLD_HEALTH_HOLD_DOWN: '1m' } },
  // LEASEHOLD_<FLAG>: read for the sidecar's own flags; the command line wins.
  { argv: ['sidecar'], env: { LEASEHOLD_IDENTITY: 'env-id', LEASEHOLD_LEASE_DURATION: '20s', LEASEHOLD_POD_LABEL: 'false', LEASEHOLD_LISTEN: 'off' } },
  { argv: ['sidecar', '--lease', 'flag'], env: { LEASEHOLD_LEASE: 'env', LEASEHOLD_IDENTITY: 'env-id', LEASEHOLD_RELEASE_ON_EXIT: 'false' } },
  { argv: ['sidecar', ...ID, '--release-on-exit'], env: { LEASEHOLD_RELEASE_ON_EXIT: 'false', LEASEHOLD_ONCE: 'maybe', LEASEHOLD_JSON: 'x' } },
  // Inside a `run` command the parent's lease, identity and status dir are not flags.
  { argv: ['sidecar', ...ID], env: { LEASEHOLD_FENCING_TOKEN: '4', LEASEHOLD_LEASE: 'parent', LEASEHOLD_STATUS_DIR: '/nowhere' } },
];

/** Input the fast path must leave to yargs: its messages and exit codes are the CLI's. */
const DECLINED: Case[] = [
  { argv: [] },
  { argv: ['status'] },
  { argv: ['run', '--', 'true'] },
  { argv: ['sidecar', '--help'] },
  { argv: ['sidecar', '-h'] },
  { argv: ['sidecar', '--version'] },
  { argv: ['sidecar', '--leese', 'x'] },
  { argv: ['sidecar', 'extra'] },
  { argv: ['sidecar', ...ID, '--'] },
  { argv: ['sidecar', ...ID, '--lease', 'a', '--lease', 'b'] },
  { argv: ['sidecar', ...ID, '--drain-timeout', '3001ms'] },
  { argv: ['sidecar', ...ID, '--drain-timeout', '1s', '--listen', 'off'] },
  { argv: ['sidecar', ...ID, '--pod-label', '--no-pod-label'] },
  { argv: ['sidecar', ...ID, '--leaseDuration', '30s'] },
  { argv: ['sidecar', ...ID, '--lease'] },
  { argv: ['sidecar', ...ID, '--lease', '--db', 'x'] },
  { argv: ['sidecar', ...ID, '--lease', '"quoted"'] },
  { argv: ['sidecar', ...ID, "--lease='quoted'"] },
  { argv: ['sidecar', ...ID, '--no-lease'] },
  // An empty value is bad input, flag or variable (emptyValueRule): told by the yargs path.
  { argv: ['sidecar', ...ID, '--listen='] },
  { argv: ['sidecar', ...ID, '--status-dir', ''] },
  { argv: ['sidecar', ...ID], env: { LEASEHOLD_STATUS_DIR: '' } },
  { argv: ['sidecar', ...ID, '--pod-label', 'true'] },
  { argv: ['sidecar', ...ID, '--no-release-on-exit=false'] },
  { argv: ['sidecar', ...ID, '--release-on-exit=nope'] },
  { argv: ['sidecar', ...ID, '--lease-duration', 'abc'] },
  { argv: ['sidecar', ...ID, '--lease-duration', '10s', '--renew-deadline', '10s'] },
  { argv: ['sidecar', ...ID, '--contention-window', '1h'] },
  { argv: ['sidecar', ...ID, '--backend', 'etcd'] },
  { argv: ['sidecar', ...ID, '--lease', 'Bad_Name'] },
  { argv: ['sidecar', '--identity', ''] },
  { argv: ['sidecar', ...ID, '--listen', 'nope:port'] },
  { argv: ['sidecar', ...ID, '--ready-when', 'always'] },
  { argv: ['sidecar', ...ID, '--log-format', 'xml'] },
  { argv: ['sidecar', ...ID, '--pod-label'] },
  { argv: ['sidecar', ...ID, '--status-dir', '/proc/leasehold'] },
  { argv: ['sidecar', ...ID, '--health-http', 'https://127.0.0.1/'] },
  { argv: ['sidecar', ...ID, '--health-tcp', '8080', '--health-exec', 'true'] },
  { argv: ['sidecar', ...ID, '--health-tcp', '0'] },
  { argv: ['sidecar', ...ID, '--health-tcp', '80', '--health-failure-threshold', '0'] },
  { argv: ['sidecar', ...ID, '--health-tcp', '80', '--health-period', '1s', '--health-timeout', '2s'] },
  { argv: ['sidecar', ...ID, '--health-period', '1s'] },
  { argv: ['sidecar', ...ID], env: { LEASEHOLD_HEALTH_HTTP: 'ftp://x/' } },
  { argv: ['sidecar', ...ID], env: { LEASEHOLD_POD_LABEL: 'yes' } },
  { argv: ['sidecar', ...ID], env: { LEASEHOLD_LEASE_DURATION: 'soon' } },
  { argv: ['sidecar', ...ID], env: { LEASEHOLD_LEASE: '"quoted"' } },
  // Valid as written, but yargs would not read them as written (it strips the quotes; it may take
  // a word that starts with a dash for a flag).
  { argv: ['sidecar', ...ID, '--db', '"q.db"'] },
  { argv: ['sidecar', ...ID, "--db='q.db'"] },
  { argv: ['sidecar', ...ID, '--db', '-q.db'] },
  { argv: ['sidecar', ...ID], env: { LEASEHOLD_DB: "'q.db'" } },
];

describe('the sidecar fast path and the yargs path agree', () => {
  it('reads the same option table as the yargs builder', () => {
    assert.deepEqual(Object.keys(SIDECAR_COMMAND_OPTIONS), flagsOf(sidecarFlags));
    const booleans = Object.entries(SIDECAR_COMMAND_OPTIONS).flatMap(([k, o]) => (o.type === 'boolean' ? [k] : []));
    assert.deepEqual(booleans.sort(), booleanFlagsOf(sidecarFlags).sort());
  });

  for (const c of ACCEPTED) {
    it(`accepts ${JSON.stringify(c.argv.slice(1))} ${JSON.stringify(c.env ?? {})}: the settings yargs gives`, async () => {
      const fast = sidecarFastPath(c.argv, c.env ?? {});
      assert.ok(fast, 'the fast path accepts it');
      const slow = await viaYargs(c.argv, c.env ?? {});
      assert.equal(slow.command, 'sidecar');
      assert.deepEqual(fast.args, slow.args);
      assert.deepEqual(fast.settings, slow.settings);
    });
  }

  it('without --identity, the same settings but for the random part of the identity', async () => {
    const fast = sidecarFastPath(['sidecar'], {});
    assert.ok(fast);
    const slow = await viaYargs(['sidecar'], {});
    assert.match(fast.settings.identity, /_[0-9a-f]{8}$/);
    assert.deepEqual({ ...fast.settings, identity: '' }, { ...(slow.settings as object), identity: '' });
  });

  for (const c of DECLINED) {
    it(`declines ${JSON.stringify(c.argv)} ${JSON.stringify(c.env ?? {})}`, () => {
      assert.equal(sidecarFastPath(c.argv, c.env ?? {}), undefined);
    });
  }
});

const CMD = ['--', 'sh', '-c', 'exit 0', '--lease', 'not-ours'];
/** `run`: its own flags, its listener off by default, and its command after `--` handed on as given. */
const RUN_ACCEPTED: Case[] = [
  { argv: ['run', ...ID, ...CMD] },
  { argv: ['run', ...ID, '--once', '--skip-if-ran-within', '50s', '--try=10s', ...CMD] },
  { argv: ['run', ...ID, '--grace-period', '2s', '--listen', ':4042', '--once=false', '--', 'true'] },
  { argv: ['run', ...ID, '--give-up-after', '0', '--', 'true'] },
  { argv: ['run', ...ID, '--', 'true'], env: { LEASEHOLD_GIVE_UP_AFTER: '10' } },
  { argv: ['run', ...ID, '--', 'echo', '1', '--', '-x', '"quoted"'] },
  // Words a parser may read as numbers reach CMD as typed, on both paths.
  { argv: ['run', ...ID, '--', 'echo', '1.10', '0x10', '1e3', '-0', '', ' a '] },
  { argv: ['run', '--', 'true'], env: { LEASEHOLD_IDENTITY: 'env-id', LEASEHOLD_ONCE: 'true', LEASEHOLD_TRY: '5s', LEASEHOLD_JSON: 'x' } },
  { argv: ['run', ...ID, '--', 'true'], env: { LEASEHOLD_FENCING_TOKEN: '4', LEASEHOLD_LEASE: 'parent', LEASEHOLD_DB: join(dir, 'r.db') } },
  { argv: ['run', ...ID, '--health-tcp', '127.0.0.1:6379', '--health-period=2s', '--', 'true'] },
  { argv: ['run', ...ID, '--', 'true'], env: { LEASEHOLD_HEALTH_EXEC: 'test -f /tmp/ok', LEASEHOLD_HEALTH_FAILURE_THRESHOLD: '2' } },
];
const RUN_DECLINED: Case[] = [
  { argv: ['run', ...ID] },
  { argv: ['run', ...ID, '--'] },
  { argv: ['run', ...ID, 'true'] },
  { argv: ['run', ...ID, '--help', '--', 'true'] },
  { argv: ['run', ...ID, '--once', '--once', '--', 'true'] },
  { argv: ['run', ...ID, '--try', '5s', '--', 'true'] },
  { argv: ['run', ...ID, '--once', '--skip-if-ran-within', 'soon', '--', 'true'] },
  { argv: ['run', ...ID, '--grace-period', '1h', '--', 'true'] },
  { argv: ['run', ...ID, '--gracePeriod', '1s', '--', 'true'] },
  { argv: ['run', ...ID, '--', 'true'], env: { LEASEHOLD_ONCE: 'yes' } },
  { argv: ['run', ...ID, '--drain-timeout', '1s', '--', 'true'] },
  { argv: ['run', ...ID, '--give-up-after', '2.5', '--', 'true'] },
  { argv: ['run', ...ID, '--health-tcp', '99999', '--', 'true'] },
];

describe('the run fast path and the yargs path agree', () => {
  it('reads the same option table as the yargs builder', () => {
    assert.deepEqual(RUN_FLAGS, flagsOf(runFlags));
    const booleans = Object.entries(RUN_OPTIONS).flatMap(([k, o]) => (o.type === 'boolean' ? [k] : []));
    assert.deepEqual(booleans.sort(), booleanFlagsOf(runFlags).sort());
  });

  for (const c of RUN_ACCEPTED) {
    it(`accepts ${JSON.stringify(c.argv.slice(1))} ${JSON.stringify(c.env ?? {})}: the settings yargs gives`, async () => {
      const fast = runFastPath(c.argv, c.env ?? {});
      assert.ok(fast, 'the fast path accepts it');
      const slow = await viaYargs(c.argv, c.env ?? {});
      assert.equal(slow.command, 'run');
      assert.deepEqual(fast.args, slow.args);
      assert.deepEqual(fast.settings, slow.settings);
    });
  }

  for (const c of [...RUN_DECLINED, ...ACCEPTED]) {
    it(`declines ${JSON.stringify(c.argv)} ${JSON.stringify(c.env ?? {})}`, () => {
      assert.equal(runFastPath(c.argv, c.env ?? {}), undefined);
    });
  }
});
