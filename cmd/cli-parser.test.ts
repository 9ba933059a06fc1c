import { it } from 'node:test';
import assert from 'node:assert/strict';
import { parseFlags } from './cli-parser.js';
import { childEnvironment, probeEnvironment } from './run-environment.js';
import { SIDECAR_COMMAND_OPTIONS, resolveSidecarCommand } from './sidecar-settings.js';
import { resolveStore } from './election-flags.js';
import { STATUS_OPTIONS } from './status-command.js';
import { RUN_OPTIONS } from './run-command.js';
import { OPERATOR_OPTIONS } from './operator-command.js';

const RUN_FLAGS = Object.keys(RUN_OPTIONS);
const parseSidecar = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseFlags(SIDECAR_COMMAND_OPTIONS, argv, env, { command: 'sidecar' });
const sidecar = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseSidecar(argv, env).values;
const status = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseFlags(STATUS_OPTIONS, argv, env, { command: 'status' }).values;
const run = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseFlags(RUN_OPTIONS, argv, env, { command: 'run', takesCommand: true }).values;
const operator = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseFlags(OPERATOR_OPTIONS, argv, env, { command: 'operator' }).values;

it("takes the table's defaults, and each flag in every spelling: --x v, --x=v, --xCamel v, --no-x, --x=false", () => {
  const d = sidecar([]);
  assert.equal(d['lease-duration'], '15s');
  assert.equal(d['release-on-exit'], true);
  assert.equal(d['pod-label'], false);
  assert.equal(d['status-dir'], undefined);
  assert.ok(!('status-dir' in d), 'a flag without a default is absent');
  for (const argv of [['--lease-duration', '20s'], ['--lease-duration=20s'], ['--leaseDuration', '20s'], ['--leaseDuration=20s']]) {
    assert.equal(sidecar(argv)['lease-duration'], '20s', argv.join(' '));
  }
  for (const argv of [
    ['--no-release-on-exit'],
    ['--release-on-exit=false'],
    ['--no-releaseOnExit'],
    ['--releaseOnExit=false'],
    ['--no-release-on-exit=true'],
  ]) {
    assert.equal(sidecar(argv)['release-on-exit'], false, argv.join(' '));
  }
  assert.equal(sidecar(['--pod-label'])['pod-label'], true);
  // A boolean's value as a word of its own: only true or false, right after it.
  assert.equal(sidecar(['--release-on-exit', 'false'])['release-on-exit'], false);
  assert.equal(run(['--once', 'true', '--', 'x']).once, true);
  assert.throws(() => run(['--once', 'yes', '--', 'x']), { message: /^unexpected argument yes: / });
});

it('maps LEASEHOLD_<FLAG> to its flag, and the command line wins in every spelling', () => {
  assert.equal(sidecar([], { LEASEHOLD_LEASE_DURATION: '30s' })['lease-duration'], '30s');
  assert.equal(sidecar(['--lease=x'], { LEASEHOLD_LEASE: 'y' }).lease, 'x');
  assert.equal(sidecar(['--leaseDuration', '20s'], { LEASEHOLD_LEASE_DURATION: '30s' })['lease-duration'], '20s');
  assert.equal(sidecar(['--no-releaseOnExit'], { LEASEHOLD_RELEASE_ON_EXIT: 'true' })['release-on-exit'], false);
  assert.equal(sidecar([], { LEASEHOLD_RELEASE_ON_EXIT: 'false' })['release-on-exit'], false);
});

it('tells where each value came from: the command line, its variable, or the default', () => {
  const { values, origins } = parseSidecar(['--lease', 'x', '--no-release-on-exit'], { LEASEHOLD_LEASE: 'y', LEASEHOLD_RENEW_DEADLINE: '8s' });
  assert.deepEqual([values.lease, values['renew-deadline'], values['retry-period']], ['x', '8s', '2s']);
  assert.deepEqual(origins.lease, { from: 'flag' });
  assert.deepEqual(origins['release-on-exit'], { from: 'flag' });
  assert.deepEqual(origins['renew-deadline'], { from: 'variable', variable: 'LEASEHOLD_RENEW_DEADLINE' });
  assert.deepEqual(origins['retry-period'], { from: 'default' });
  assert.deepEqual(origins['pod-label'], { from: 'default' }, "a boolean's false is its default");
  assert.equal(origins['status-dir'], undefined, 'a flag with no value and no default has no origin');
  // Nothing is kept between parses: the same flag from the command line is named as a flag.
  assert.deepEqual(parseSidecar(['--renew-deadline', '8s']).origins['renew-deadline'], { from: 'flag' });
});

it('refuses an empty variable it would read, naming it; one the command line overrides is not read', () => {
  assert.throws(() => sidecar([], { LEASEHOLD_STATUS_DIR: '' }), {
    message: 'invalid LEASEHOLD_STATUS_DIR "" (for --status-dir): must be non-empty (unset the variable for the default)',
  });
  assert.equal(sidecar(['--status-dir', '/s'], { LEASEHOLD_STATUS_DIR: '' })['status-dir'], '/s');
  assert.throws(() => sidecar([], { LEASEHOLD_POD_LABEL: 'yes' }), {
    message: 'invalid LEASEHOLD_POD_LABEL "yes" (for --pod-label): must be true or false',
  });
});

it("reads only the variables of the command's own flags", () => {
  const env = {
    LEASEHOLD_IDENTITY: 'x',
    LEASEHOLD_LISTEN: ':1',
    LEASEHOLD_STATUS_DIR: '/s',
    LEASEHOLD_ONCE: 'true',
    LEASEHOLD_JSON: 'true',
    LEASEHOLD_TEST_X: '',
  };
  const s = status([], env);
  assert.deepEqual([s.json, s['status-dir'], 'identity' in s], [true, '/s', false]);
  const c = sidecar([], env);
  assert.deepEqual([c.identity, c.listen, c['status-dir'], 'once' in c], ['x', ':1', '/s', false]);
});

it("inside `leasehold run` (LEASEHOLD_FENCING_TOKEN set) the parent's lease, identity and status dir are not flags", () => {
  const env = { LEASEHOLD_FENCING_TOKEN: '3', LEASEHOLD_LEASE: 'billing', LEASEHOLD_IDENTITY: 'parent', LEASEHOLD_STATUS_DIR: '', LEASEHOLD_DB: '/x.db' };
  const r = run(['--', 'true'], env);
  assert.deepEqual([r.lease, r.identity, r['status-dir'], r.db], ['leasehold', undefined, undefined, '/x.db']);
  // `status` writes nothing: there they name the parent's lease and the parent's own candidate.
  const s = status([], { ...env, LEASEHOLD_STATUS_DIR: '/s' });
  assert.deepEqual([s.lease, s['status-dir'], s.db], ['billing', '/s', '/x.db']);
});

it("hands run's command every word after the first --, byte for byte, and reads no flag there", () => {
  const words = ['cmd', '--lease', 'z', '1.10', '', '--', '-x'];
  const r = run(['--once', '--', ...words], { LEASEHOLD_LEASE: 'y' });
  assert.deepEqual(r['--'], words);
  assert.equal(r.lease, 'y');
  assert.deepEqual(run([])['--'], []);
});

it('takes a value that starts with a dash, so that its own rule says what is wrong with it', () => {
  const f = parseSidecar(['--health-tcp', '80', '--health-hold-down', '-1s']);
  assert.equal(f.values['health-hold-down'], '-1s');
  assert.throws(() => resolveSidecarCommand(f, {}), { message: /^invalid --health-hold-down "-1s": expected a duration/ });
});

it('refuses a missing or empty value, naming the flag and the rule', () => {
  const rule = /^invalid --status-dir "": must be non-empty \(leave the flag out for its default\)$/;
  const missing = /^--status-dir needs a value: give one after it, or leave the flag out for its default$/;
  assert.throws(() => sidecar(['--status-dir']), { message: missing });
  assert.throws(() => sidecar(['--status-dir=']), { message: rule });
  assert.throws(() => sidecar(['--status-dir', '--listen', 'off']), { message: missing }, 'another flag is not its value');
  assert.throws(() => run(['--status-dir', '--', 'true']), { message: missing });
  assert.throws(() => sidecar(['--listen=']), { message: /must be non-empty \(leave the flag out for its default, or give off for no listener\)$/ });
});

it('refuses a flag given twice, in any spelling; a list flag takes one value each time', () => {
  assert.throws(() => sidecar(['--lease', 'a', '--lease=b']), { message: 'invalid --lease ["a","b"]: given more than once: give each flag at most once' });
  assert.throws(() => sidecar(['--lease-duration', '1s', '--leaseDuration', '2s']), {
    message: /^invalid --lease-duration \["1s","2s"\]: given more than once/,
  });
  assert.throws(() => run(['--once', '--no-once', '--', 'x']), {
    message: 'invalid --once ["--once","--no-once"]: given more than once: give each flag at most once',
  });
  assert.throws(() => sidecar(['--release-on-exit=true', '--no-releaseOnExit']), {
    message: /^invalid --release-on-exit \["--release-on-exit=true","--no-releaseOnExit"\]: given more than once/,
  });
  const o = operator(['--extra-host', 'a', '--extra-host=b']);
  assert.deepEqual(o['extra-host'], ['a', 'b']);
  assert.deepEqual(operator([])['extra-host'], []);
  assert.deepEqual(operator([], { LEASEHOLD_EXCLUDE_NAMESPACE: 'batch' })['exclude-namespace'], ['batch']);
  assert.throws(() => operator(['--extra-host', 'a', '--extra-host=']), { message: /^invalid --extra-host "": must be non-empty/ });
});

it('refuses a boolean given a word other than true or false, as written', () => {
  assert.throws(() => sidecar(['--release-on-exit=nope']), { message: 'invalid --release-on-exit "nope": must be true or false' });
  assert.throws(() => sidecar(['--releaseOnExit=nope']), { message: 'invalid --releaseOnExit "nope": must be true or false' });
  assert.throws(() => run(['--no-once=yes', '--', 'x']), { message: 'invalid --no-once "yes": must be true or false' });
});

it('refuses an unknown flag and a stray word, naming them', () => {
  assert.throws(() => sidecar(['--leese', 'x']), { message: 'unknown flag --leese (leasehold sidecar --help lists its flags)' });
  assert.throws(() => sidecar(['--no-lease']), { message: /^unknown flag --no-lease / });
  assert.throws(() => sidecar(['-h']), { message: /^unknown flag -h / });
  assert.throws(() => run(['--drain-timeout', '1s', '--', 'x']), { message: /^unknown flag --drain-timeout / });
  assert.throws(() => run(['echo', 'hi']), {
    message: 'unexpected arguments echo hi: leasehold run takes its command after --, as in leasehold run [flags] -- echo hi',
  });
  assert.throws(() => status(['lease-a']), {
    message: 'unexpected argument "lease-a": leasehold status takes flags only (leasehold status --help lists its flags)',
  });
  assert.throws(() => sidecar(['--', 'x']), { message: /^unexpected argument "x"/ });
});

it("the command's environment drops the parent's configuration and carries the term", () => {
  const env = childEnvironment(
    { PATH: '/bin', LEASEHOLD_LISTEN: ':4040', LEASEHOLD_DB: '/x.db', LEASEHOLD_FENCING_TOKEN: '1', LEASEHOLD_OTHER: 'kept' },
    RUN_FLAGS,
    {
      LEASEHOLD_FENCING_TOKEN: '9',
      LEASEHOLD_LEASE: 'billing',
      LEASEHOLD_IDENTITY: 'me',
      LEASEHOLD_STATUS_DIR: undefined,
    },
  );
  assert.deepEqual(env, { PATH: '/bin', LEASEHOLD_OTHER: 'kept', LEASEHOLD_FENCING_TOKEN: '9', LEASEHOLD_LEASE: 'billing', LEASEHOLD_IDENTITY: 'me' });
});

it("a `run` command never inherits the parent's database password (LEASEHOLD_POSTGRES_URL)", () => {
  const env = childEnvironment({ PATH: '/bin', LEASEHOLD_POSTGRES_URL: 'postgres://u:secret@h/db' }, RUN_FLAGS, {
    LEASEHOLD_FENCING_TOKEN: '3',
    LEASEHOLD_LEASE: 'jobs',
    LEASEHOLD_IDENTITY: 'me',
    LEASEHOLD_STATUS_DIR: undefined,
  });
  assert.equal(env.LEASEHOLD_POSTGRES_URL, undefined);
  assert.equal(env.PATH, '/bin');
});

it('with --backend postgres, the command inherits none of the credentials leasehold connected with; other backends leave them alone', () => {
  const parent = {
    PATH: '/bin',
    LEASEHOLD_POSTGRES_URL: 'postgres://u:secret@h/db',
    PGPASSWORD: 'secret',
    PGPASSFILE: '/etc/leasehold/pgpass',
    PGSERVICEFILE: '/etc/leasehold/pg_service.conf',
    PGSSLKEY: '/etc/leasehold/client.key',
    PGHOST: 'db.internal',
    PGUSER: 'leasehold',
  };
  const term = { LEASEHOLD_FENCING_TOKEN: '3', LEASEHOLD_LEASE: 'jobs', LEASEHOLD_IDENTITY: 'me', LEASEHOLD_STATUS_DIR: undefined };
  const env = childEnvironment(parent, RUN_FLAGS, term, 'postgres');
  for (const name of ['LEASEHOLD_POSTGRES_URL', 'PGPASSWORD', 'PGPASSFILE', 'PGSERVICEFILE', 'PGSSLKEY']) assert.equal(env[name], undefined, name);
  assert.equal(env.PGHOST, 'db.internal', 'a server name is not a secret');
  assert.equal(env.PGUSER, 'leasehold');
  assert.equal(childEnvironment(parent, RUN_FLAGS, term, 'sqlite').PGPASSWORD, 'secret', "not leasehold's credential with another backend");
});

it("a leasehold inside run's command is not refused for the parent's store: its variables are not handed on", () => {
  const parent = {
    PATH: '/bin',
    LEASEHOLD_BACKEND: 'postgres',
    LEASEHOLD_POSTGRES_URL: 'postgres://u:secret@h/db',
    LEASEHOLD_POSTGRES_TABLE: 'public.jobs',
    LEASEHOLD_NAMESPACE: 'apps',
  };
  const term = { LEASEHOLD_FENCING_TOKEN: '3', LEASEHOLD_LEASE: 'jobs', LEASEHOLD_IDENTITY: 'me', LEASEHOLD_STATUS_DIR: '/run/status' };
  const env = childEnvironment(parent, RUN_FLAGS, term, 'postgres');
  // `status` on SQLite inside the command: the parent's lease, its own store, nothing refused.
  const s = parseFlags(STATUS_OPTIONS, [], env, { command: 'status' });
  assert.deepEqual(resolveStore(s), { lease: 'jobs', store: resolveStore(parseFlags(STATUS_OPTIONS, ['--lease', 'jobs'], {}, { command: 'status' })).store });
  // A sidecar there campaigns on its own store and lease, not the parent's.
  const c = resolveSidecarCommand(parseSidecar(['--listen', 'off'], env), env);
  assert.deepEqual([c.store.backend, c.lease], ['sqlite', 'leasehold']);
});

it("a --health-exec check gets the sidecar's environment less its configuration, the term and, with postgres, the store's credentials", () => {
  const parent = {
    PATH: '/bin',
    APP_SETTING: 'kept',
    LEASEHOLD_POSTGRES_URL: 'postgres://u:secret@h/db',
    LEASEHOLD_LISTEN: ':4040',
    LEASEHOLD_FENCING_TOKEN: '4',
    LEASEHOLD_LEASE: 'outer',
    PGPASSWORD: 'secret',
    PGSSLKEY: '/etc/leasehold/client.key',
    PGHOST: 'db.internal',
  };
  assert.deepEqual(probeEnvironment(parent, RUN_FLAGS, 'postgres'), { PATH: '/bin', APP_SETTING: 'kept', PGHOST: 'db.internal' });
  // With another backend PGPASSWORD is not leasehold's: the app's check may need it.
  assert.equal(probeEnvironment(parent, RUN_FLAGS, 'sqlite').PGPASSWORD, 'secret');
  assert.equal(probeEnvironment(parent, RUN_FLAGS, 'sqlite').LEASEHOLD_POSTGRES_URL, undefined);
});

it("the sidecar's --health-exec environment is made from the environment main() was given, not the process's", () => {
  const given = { PATH: '/opt/bin', APP_SETTING: 'given', PGPASSWORD: 'secret', LEASEHOLD_LISTEN: 'off' };
  const c = resolveSidecarCommand(parseSidecar(['--health-exec', 'true', '--backend', 'postgres'], given), given);
  assert.ok(c.health && 'exec' in c.health.probe, 'an exec check');
  assert.deepEqual(c.health.probe.env, { PATH: '/opt/bin', APP_SETTING: 'given' });
});
