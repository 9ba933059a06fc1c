/**
 * Every kind of bad input, through main() in this process: exit 2, exactly one line on stderr
 * naming what was wrong and the rule, nothing on stdout, nothing written (each case runs in a
 * directory of its own, checked after: no database, no status directory), and nothing left
 * running (the process's active handles are the same after as before). What only a real
 * process shows (the exit code itself, the streams, signals) is test/cli/process-smoke.test.ts.
 * A case that is not refused would start its command here: its shutdown signal stops it and
 * the case fails.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { tempDir } from '../test/support/cli.js';
import { main } from './main.js';
import { openStore } from '../src/backends/open-store.js';
import type { CliIo } from './cli-io.js';

/** A port another listener holds: the sidecar's --listen there is refused before --db is created. */
const holder = createServer();
await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
after(() => holder.close());
const BUSY = `127.0.0.1:${(holder.address() as { port: number }).port}`;

/** A kubeconfig whose server URL has credentials and a scheme the store refuses. */
const fixtures = tempDir();
after(fixtures.cleanup);
const BAD_KUBECONFIG = join(fixtures.path, 'kubeconfig');
writeFileSync(
  BAD_KUBECONFIG,
  JSON.stringify({
    'current-context': 'x',
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    clusters: [{ name: 'c', cluster: { server: 'ftp://admin:hunter2@api.internal:6443' } }],
    users: [{ name: 'u', user: { token: 't' } }],
  }),
);

/** The password every case that gives one uses: no refusal may show it. */
const SECRET = 'hunter2';

interface Case {
  name: string;
  args: string[];
  env?: Record<string, string>;
  /** The one line on stderr. */
  message: RegExp;
}

const NOT_SQLITE = 'notes.txt';
const A_FILE = 'a-file';
/** A symbolic link to a directory that does not exist. */
const DANGLING = 'dangling';
/** A symbolic link to the case's own directory. */
const HERE = 'here';

const cases: Case[] = [
  { name: 'no command', args: [], message: /a command is required: sidecar, status, run or operator/ },
  {
    name: 'operator without its sidecar image (no empty value quoted that was never typed)',
    args: ['operator'],
    message: /^leasehold: --sidecar-image is required: the image the sidecar runs \(the operator's own\)$/,
  },
  {
    name: 'operator with its required sidecar image missing is not told to leave it out',
    args: ['operator', '--sidecar-image'],
    message: /^leasehold: --sidecar-image needs a value: give one after it \(it is required\)$/,
  },
  {
    name: 'operator with its required sidecar image empty is not told to leave it out',
    args: ['operator', '--sidecar-image='],
    message: /^leasehold: invalid --sidecar-image "": must be non-empty \(it is required\)$/,
  },
  {
    name: 'operator with its required sidecar image variable empty is not told to unset it',
    args: ['operator'],
    env: { LEASEHOLD_SIDECAR_IMAGE: '' },
    message: /^leasehold: invalid LEASEHOLD_SIDECAR_IMAGE "" \(for --sidecar-image\): must be non-empty \(it is required\)$/,
  },
  {
    name: 'operator with a bad native-sidecar default',
    args: ['operator', '--sidecar-image', 'leasehold:1', '--native-sidecar', 'maybe'],
    message: /invalid --native-sidecar "maybe": must be true, false or auto/,
  },
  {
    name: 'operator with a CA shorter than its certificate',
    args: ['operator', '--sidecar-image', 'leasehold:1', '--ca-validity', '24h', '--cert-validity', '48h'],
    message: /invalid --ca-validity "24h": must be longer than --cert-validity \(48h\)/,
  },
  {
    name: 'operator with a bad secret name',
    args: ['operator', '--sidecar-image', 'leasehold:1', '--secret', 'Bad_Name'],
    message: /invalid --secret "Bad_Name": must be a DNS-1123 label/,
  },
  {
    name: 'operator with a fence policy name no object can have',
    args: ['operator', '--sidecar-image', 'leasehold:1', '--fence-objects-policy', 'Fencing_Policy'],
    message: /invalid --fence-objects-policy "Fencing_Policy": must be a DNS-1123 subdomain/,
  },
  {
    name: 'operator with an inject value no label can hold',
    args: ['operator', '--sidecar-image', 'leasehold:1', '--inject-value', 'team/b'],
    message: /invalid --inject-value "team\/b": must be a label value/,
  },
  {
    name: 'operator with an injection mode it does not have',
    args: ['operator', '--sidecar-image', 'leasehold:1', '--injection-mode', 'mutating'],
    message: /^leasehold: invalid --injection-mode "mutating": must be webhook or policy$/,
  },
  {
    name: 'operator in policy mode with a webhook-only flag from its variable',
    args: ['operator', '--sidecar-image', 'leasehold:1', '--injection-mode', 'policy'],
    env: { LEASEHOLD_CERTIFICATES: 'external' },
    message:
      /^leasehold: invalid LEASEHOLD_CERTIFICATES "external" \(for --certificates\): only --injection-mode webhook reads it, and the injection mode is policy \(no webhook, certificate or mark key\): unset LEASEHOLD_CERTIFICATES$/,
  },
  {
    name: "operator election timings broken together (the sidecar's rule)",
    args: ['operator', '--sidecar-image', 'leasehold:1', '--lease-duration', '10s', '--renew-deadline', '10s'],
    message: /invalid timings --lease-duration 10s --renew-deadline 10s --retry-period 2s: leaseDuration must be greater than renewDeadline/,
  },
  {
    name: 'timings broken together name the variable a value came from',
    args: ['sidecar', '--listen', 'off'],
    env: { LEASEHOLD_RENEW_DEADLINE: '20s' },
    message:
      /^leasehold: invalid timings --lease-duration 15s LEASEHOLD_RENEW_DEADLINE 20s \(for --renew-deadline\) --retry-period 2s: leaseDuration must be greater than renewDeadline/,
  },
  {
    name: 'operator lease duration in fractional seconds (its lease is a Kubernetes Lease)',
    args: ['operator', '--sidecar-image', 'leasehold:1', '--lease-duration', '15500ms'],
    message: /invalid --lease-duration "15500ms": .*leaseDurationSeconds as an integer/,
  },
  {
    name: 'operator retry period through its variable',
    args: ['operator', '--sidecar-image', 'leasehold:1'],
    env: { LEASEHOLD_RETRY_PERIOD: 'often' },
    message: /invalid LEASEHOLD_RETRY_PERIOD "often" \(for --retry-period\): expected a duration/,
  },
  {
    name: 'operator with an unknown certificate source',
    args: ['operator', '--sidecar-image', 'leasehold:1', '--certificates', 'cert-manager'],
    message: /invalid --certificates "cert-manager": must be operator or external/,
  },
  { name: 'unknown flag', args: ['sidecar', '--leese', 'x'], message: /unknown flag --leese \(leasehold sidecar --help lists its flags\)$/ },
  { name: 'unknown command', args: ['sidecars'], message: /unknown command "sidecars": the commands are sidecar, status, run and operator$/ },
  {
    name: 'unknown command asked for its help (not the overall help and exit 0)',
    args: ['sidecars', '--help'],
    message: /unknown command "sidecars": the commands are sidecar, status, run and operator$/,
  },
  // Each line is for a terminal: what could move its cursor, reorder or hide text is escaped.
  {
    name: "a stray word with a terminal escape, before run's --",
    args: ['run', '\u001b[2Jx'],
    message: /^leasehold: unexpected argument \\u001b\[2Jx: leasehold run takes its command after --, as in leasehold run \[flags\] -- \\u001b\[2Jx$/,
  },
  {
    name: 'a value with a bidi override',
    args: ['sidecar', '--lease', '\u202ex'],
    message: /^leasehold: invalid --lease "\\u202ex": [^\u202e]*$/,
  },
  {
    name: 'a stray word',
    args: ['status', 'my-lease'],
    message: /unexpected argument "my-lease": leasehold status takes flags only \(leasehold status --help lists its flags\)$/,
  },
  {
    name: "a negative duration (a value that starts with a dash is the flag's value)",
    args: ['sidecar', '--health-exec', 'true', '--health-hold-down', '-1s'],
    message: /invalid --health-hold-down "-1s": expected a duration such as 15s, 500ms or 1m30s$/,
  },
  {
    name: 'a negative lease duration',
    args: ['run', '--lease-duration', '-15s', '--', 'true'],
    message: /invalid --lease-duration "-15s": expected a duration/,
  },
  {
    name: 'a flag whose value is missing (the next word is another flag)',
    args: ['sidecar', '--identity', '--listen', 'off'],
    message: /^leasehold: --identity needs a value: give one after it, or leave the flag out for its default$/,
  },
  {
    name: 'a flag with no value at the end of the line',
    args: ['sidecar', '--listen'],
    message: /^leasehold: --listen needs a value: give one after it \(off for no listener\), or leave the flag out for its default$/,
  },
  {
    name: 'unparsable duration',
    args: ['sidecar', '--lease-duration', 'abc'],
    message: /invalid --lease-duration "abc": expected a duration such as 15s, 500ms or 1m30s/,
  },
  { name: 'bare number duration', args: ['sidecar', '--retry-period', '2'], message: /invalid --retry-period "2": expected a duration/ },
  { name: 'leaseDuration <= renewDeadline', args: ['sidecar', '--lease-duration', '5s'], message: /leaseDuration must be greater than renewDeadline/ },
  {
    name: 'renewDeadline <= 1.2 × retryPeriod',
    args: ['sidecar', '--renew-deadline', '2s', '--retry-period', '2s', '--lease-duration', '3s'],
    message: /renewDeadline must be greater than retryPeriod\*JitterFactor/,
  },
  { name: 'zero retryPeriod', args: ['sidecar', '--retry-period', '0s'], message: /invalid --retry-period "0s": must be from 1ms/ },
  {
    name: 'contention window longer than the lease',
    args: ['sidecar', '--contention-window', '20s'],
    message: /invalid --contention-window "20s": must be at most --lease-duration \(15s\)/,
  },
  {
    name: 'contention window not a duration',
    args: ['sidecar', '--contention-window', 'soon'],
    message: /invalid --contention-window "soon": expected a duration/,
  },
  {
    name: 'a bad value from a variable names the variable, and the flag it sets',
    args: ['sidecar'],
    env: { LEASEHOLD_LEASE_DURATION: 'xyz' },
    message: /^leasehold: invalid LEASEHOLD_LEASE_DURATION "xyz" \(for --lease-duration\): expected a duration such as 15s/,
  },
  {
    name: "a store's refusal of a variable's value names the variable",
    args: ['sidecar'],
    env: { LEASEHOLD_LEASE: 'Billing_Job!' },
    message: /^leasehold: invalid LEASEHOLD_LEASE "Billing_Job!" \(for --lease\): it must be a DNS-1123 subdomain/,
  },
  {
    name: 'the command line wins: its value is the one named, not the variable',
    args: ['sidecar', '--lease', 'Bad!'],
    env: { LEASEHOLD_LEASE: 'Billing_Job!' },
    message: /^leasehold: invalid --lease "Bad!": it must be a DNS-1123 subdomain/,
  },
  {
    name: '--postgres-url given twice is refused without its values (they may hold a password)',
    args: ['status', '--lease', 'l', '--postgres-url', 'postgres://u:hunter2@h/a', '--postgres-url', 'postgres://u:hunter2@h/b'],
    message: /^leasehold: invalid --postgres-url \(its value is not shown: it may hold a password\): given more than once: give each flag at most once$/,
  },
  {
    name: 'a long value given twice is cut too, each in the list',
    args: ['sidecar', '--lease', 'X'.repeat(5000), '--lease', 'y'],
    message: /^leasehold: invalid --lease \["X{80}"\.\.\. \(5000 characters\),"y"\]: given more than once/,
  },
  {
    name: 'a long value is cut in the line, with its length, so the rule is seen',
    args: ['sidecar', '--lease', 'X'.repeat(5000)],
    message: /^leasehold: invalid --lease "X{80}"\.\.\. \(5000 characters\): it must be a DNS-1123 subdomain/,
  },
  {
    name: 'the same rule through an env var',
    args: ['sidecar'],
    env: { LEASEHOLD_LEASE_DURATION: '9s' },
    message: /leaseDuration must be greater than renewDeadline \(got leaseDuration 9s, renewDeadline 10s\)/,
  },
  { name: 'unknown backend', args: ['sidecar', '--backend', 'etcd'], message: /invalid --backend "etcd": must be one of sqlite, kubernetes/ },
  {
    name: 'lease name the store rejects',
    args: ['sidecar', '--lease', 'Billing_Job!'],
    message: /invalid --lease "Billing_Job!": it must be a DNS-1123 subdomain/,
  },
  { name: 'bad listen address', args: ['sidecar', '--listen', 'localhost'], message: /invalid --listen "localhost": expected HOST:PORT/ },
  { name: 'bad ready-when', args: ['sidecar', '--ready-when', 'always'], message: /invalid --ready-when "always": must be leader or elected-any/ },
  { name: 'bad log format', args: ['sidecar', '--log-format', 'xml'], message: /invalid --log-format "xml": must be json or text/ },
  { name: 'empty identity', args: ['sidecar', '--identity', ''], message: /invalid --identity "": must be non-empty/ },
  {
    name: 'fractional seconds on kubernetes',
    args: ['sidecar', '--backend', 'kubernetes', '--lease-duration', '15500ms'],
    message: /leaseDurationSeconds as an integer/,
  },
  {
    name: 'status dir under a file',
    args: ['sidecar', '--status-dir', `${A_FILE}/status`],
    message: /--status-dir: the status directory a-file\/status cannot be created: .*a-file is not a directory/,
  },
  { name: 'status dir is a file', args: ['sidecar', '--status-dir', A_FILE], message: /--status-dir: the status directory a-file is not a directory/ },
  {
    name: 'a --status-dir that is a link to nowhere (said as one line, before the --db file is created)',
    args: ['sidecar', '--status-dir', DANGLING, '--listen', 'off'],
    message:
      /^leasehold: --status-dir: the status directory dangling is a symbolic link to no-such-dir, which does not exist: create that directory, or name an existing one$/,
  },
  {
    name: 'a --status-dir under a link to nowhere',
    args: ['run', '--status-dir', `${DANGLING}/status`, '--listen', 'off', '--', 'true'],
    message: /--status-dir: the status directory dangling\/status cannot be created: .*\/dangling is a symbolic link to no-such-dir, which does not exist/,
  },
  {
    name: 'a --db naming a status file (the first status write would overwrite the database)',
    args: ['sidecar', '--db', 'status/status.json', '--status-dir', 'status', '--listen', 'off'],
    message:
      /^leasehold: invalid --db "status\/status\.json": must not be in the status directory status: the sidecar replaces the files there \(status\.json, is-leader, drain-key, \.\.\.\), which would overwrite the database; put it elsewhere$/,
  },
  {
    name: "run's --db inside its --status-dir, by another spelling of the directory",
    args: ['run', '--db', './x/../status/leases.db', '--status-dir', 'status/', '--listen', 'off', '--', 'true'],
    message: /^leasehold: invalid --db "\.\/x\/\.\.\/status\/leases\.db": must not be in the status directory status\/:/,
  },
  {
    name: 'a --db in the status directory through its variable, the status directory through a link',
    args: ['sidecar', '--status-dir', 'here/status', '--listen', 'off'],
    env: { LEASEHOLD_DB: 'status/drain-key' },
    message: /^leasehold: invalid LEASEHOLD_DB "status\/drain-key" \(for --db\): must not be in the status directory here\/status:/,
  },
  {
    name: '--db that is not SQLite',
    args: ['sidecar', '--db', NOT_SQLITE, '--listen', 'off'],
    message: /--db: the database file notes.txt is not an SQLite database/,
  },
  { name: 'status on a --db that is not SQLite', args: ['status', '--db', NOT_SQLITE], message: /--db: the database file notes.txt is not an SQLite database/ },
  { name: 'status with no store yet', args: ['status'], message: /--db: no lease store at \.\/\.leasehold\/leases\.db/ },
  { name: 'run without a command', args: ['run'], message: /no command given: use leasehold run \[flags\] -- CMD/ },
  { name: 'run a missing executable', args: ['run', '--', 'no-such-command-xyz'], message: /cannot run "no-such-command-xyz": not found in PATH/ },
  { name: 'run a file that is not executable', args: ['run', '--', `./${NOT_SQLITE}`], message: /cannot run "\.\/notes\.txt": it is not executable/ },
  {
    name: 'a duration past what a timer holds',
    args: ['sidecar', '--lease-duration', '2000h'],
    message: /invalid --lease-duration "2000h": must be from 1ms to .*2\^31 − 1 ms, the longest a timer can wait/,
  },
  {
    name: 'a sub-millisecond duration',
    args: ['sidecar', '--retry-period', '0.5ms'],
    message: /invalid --retry-period "0.5ms": must be a whole number of milliseconds/,
  },
  { name: 'a flag given twice', args: ['sidecar', '--lease', 'a', '--lease', 'b'], message: /invalid --lease \["a","b"\]: given more than once/ },
  { name: 'a flag given twice to status', args: ['status', '--db', 'a.db', '--db', 'b.db'], message: /invalid --db \["a.db","b.db"\]: given more than once/ },
  { name: 'a boolean given twice', args: ['run', '--once', '--once', '--', 'true'], message: /invalid --once \["--once","--once"\]: given more than once/ },
  {
    name: 'a boolean given and negated (the last would win)',
    args: ['run', '--once', '--no-once', '--', 'true'],
    message: /invalid --once \["--once","--no-once"\]: given more than once/,
  },
  { name: 'status --json --no-json', args: ['status', '--json', '--no-json'], message: /invalid --json \["--json","--no-json"\]: given more than once/ },
  {
    name: 'a boolean given with a value and in camelCase',
    args: ['sidecar', '--release-on-exit=true', '--no-releaseOnExit', '--listen', 'off'],
    message: /invalid --release-on-exit \["--release-on-exit=true","--no-releaseOnExit"\]: given more than once/,
  },
  {
    name: '--release-on-exit --no-release-on-exit',
    args: ['sidecar', '--release-on-exit', '--no-release-on-exit', '--listen', 'off'],
    message: /invalid --release-on-exit \["--release-on-exit","--no-release-on-exit"\]: given more than once/,
  },
  {
    name: 'an existing --status-dir where no file can be made (root may "write" there by access())',
    args: ['sidecar', '--status-dir', '/proc/self/fd', '--db', 'x.db', '--listen', 'off'],
    message: /--status-dir: the status directory \/proc\/self\/fd is not writable: .*\/proc\/self\/fd\/\.probe\./,
  },
  { name: 'an identity with a newline', args: ['sidecar', '--identity', 'a\nb'], message: /invalid --identity "a\\nb": .*no control characters/ },
  { name: 'an identity with an escape sequence', args: ['sidecar', '--identity', 'a\u001b[2Jb'], message: /no control characters/ },
  {
    name: 'a --listen host that does not resolve',
    args: ['sidecar', '--listen', 'no-such-host.invalid:4040', '--status-dir', 'status'],
    message: /invalid --listen "no-such-host.invalid:4040": the host "no-such-host.invalid" does not resolve/,
  },
  {
    name: 'a variable meant for `run` does not break `sidecar`',
    args: ['sidecar', '--lease', 'BAD'],
    env: { LEASEHOLD_ONCE: 'true', LEASEHOLD_JSON: 'true' },
    message: /invalid --lease "BAD"/,
  },
  {
    name: 'variables handed to `run` children do not break `status`',
    args: ['status'],
    env: { LEASEHOLD_IDENTITY: 'x', LEASEHOLD_LISTEN: ':1', LEASEHOLD_STATUS_DIR: '/s' },
    message: /no lease store at/,
  },
  { name: 'a boolean flag given a word', args: ['sidecar', '--release-on-exit=nope'], message: /invalid --release-on-exit "nope": must be true or false/ },
  {
    name: 'a boolean variable given a word',
    args: ['sidecar'],
    env: { LEASEHOLD_RELEASE_ON_EXIT: 'nope' },
    message: /invalid LEASEHOLD_RELEASE_ON_EXIT "nope" \(for --release-on-exit\): must be true or false/,
  },
  {
    name: 'a boolean flag in camelCase given a word (never read as false)',
    args: ['run', '--releaseOnExit=nope', '--', 'true'],
    message: /invalid --releaseOnExit "nope": must be true or false/,
  },
  // One rule for empty values, flag or variable: bad input, never a setting (an empty
  // --status-dir wrote the status files into the working directory).
  {
    name: 'an empty LEASEHOLD_STATUS_DIR',
    args: ['sidecar', '--listen', 'off'],
    env: { LEASEHOLD_STATUS_DIR: '' },
    message: /invalid LEASEHOLD_STATUS_DIR "" \(for --status-dir\): must be non-empty \(unset the variable for the default\)$/,
  },
  {
    name: 'an empty --status-dir',
    args: ['sidecar', '--listen', 'off', '--status-dir='],
    message: /invalid --status-dir "": must be non-empty \(leave the flag out for its default\)$/,
  },
  {
    name: '--status-dir with no value',
    args: ['run', '--listen', 'off', '--status-dir', '--', 'true'],
    message: /^leasehold: --status-dir needs a value: give one after it, or leave the flag out for its default$/,
  },
  {
    name: 'an empty --listen (it meant off)',
    args: ['sidecar', '--listen='],
    message: /invalid --listen "": must be non-empty \(leave the flag out for its default, or give off for no listener\)$/,
  },
  {
    name: 'an empty LEASEHOLD_LISTEN',
    args: ['run', '--', 'true'],
    env: { LEASEHOLD_LISTEN: '' },
    message: /invalid LEASEHOLD_LISTEN "" \(for --listen\): must be non-empty \(unset the variable for the default, or give off for no listener\)$/,
  },
  { name: 'an empty LEASEHOLD_DB for status', args: ['status'], env: { LEASEHOLD_DB: '' }, message: /invalid LEASEHOLD_DB "" \(for --db\): must be non-empty/ },
  {
    name: "an empty operator --listen (the operator's has no off)",
    args: ['operator', '--sidecar-image', 'leasehold:1', '--listen='],
    message: /invalid --listen "": must be non-empty \(leave the flag out for its default\)$/,
  },
  {
    name: 'an empty operator --extra-host',
    args: ['operator', '--sidecar-image', 'leasehold:1', '--extra-host', 'a.example', '--extra-host='],
    message: /invalid --extra-host "": must be non-empty/,
  },
  { name: 'a negated boolean given a value', args: ['run', '--no-once=yes', '--', 'true'], message: /invalid --no-once "yes": must be true or false/ },
  { name: '--json given a number', args: ['status', '--json=1'], message: /invalid --json "1": must be true or false/ },
  {
    name: 'a --db where no directory can be made (it hung in a recursive mkdir)',
    args: ['sidecar', '--db', '/proc/x/y.db', '--listen', 'off'],
    message: /--db: the database's directory \/proc\/x cannot be created: \/proc is a proc filesystem, where the kernel makes every entry/,
  },
  {
    name: 'a --status-dir where no directory can be made (it hung in a recursive mkdir)',
    args: ['sidecar', '--status-dir', '/proc/x', '--listen', 'off'],
    message: /--status-dir: the status directory \/proc\/x cannot be created: \/proc is a proc filesystem/,
  },
  {
    name: 'a --db from its variable where no directory can be made names the variable',
    args: ['sidecar', '--listen', 'off'],
    env: { LEASEHOLD_DB: '/proc/x/y.db' },
    message: /^leasehold: LEASEHOLD_DB \(for --db\): the database's directory \/proc\/x cannot be created/,
  },
  {
    name: 'a --status-dir from its variable where no directory can be made names the variable',
    args: ['sidecar', '--listen', 'off'],
    env: { LEASEHOLD_STATUS_DIR: '/proc/x' },
    message: /^leasehold: LEASEHOLD_STATUS_DIR \(for --status-dir\): the status directory \/proc\/x cannot be created/,
  },
  {
    name: 'run with its command but no --',
    args: ['run', 'echo', 'hi'],
    message: /unexpected arguments echo hi: leasehold run takes its command after --, as in leasehold run \[flags\] -- echo hi$/,
  },
  {
    name: 'run grace period longer than the lease remainder',
    args: ['run', '--grace-period', '6s', '--', 'true'],
    message: /invalid --grace-period "6s": must be at most lease-duration − renew-deadline − the clock margin of 50ms \+ 0.1% of lease-duration \(4935ms\)/,
  },
  {
    name: 'run grace period that leaves no clock margin before the expiry',
    args: ['run', '--grace-period', '5s', '--', 'true'],
    message: /invalid --grace-period "5s": must be at most lease-duration − renew-deadline − the clock margin/,
  },
  {
    name: 'renew deadline that leaves no clock margin before the expiry',
    args: ['sidecar', '--lease-duration', '2s', '--renew-deadline', '1980ms', '--retry-period', '100ms'],
    message:
      /invalid timings .*: renewDeadline must be at most leaseDuration − 52ms \(50 ms \+ 0.1% of leaseDuration: the margin for late timers and clock rates/,
  },
  {
    name: 'sidecar drain timeout that cannot end before the renew deadline',
    args: ['sidecar', '--drain-timeout', '4s'],
    message: /invalid --drain-timeout "4s": must be at most renew-deadline\/2 − retry-period \(3s\): the release must still be sent before the renew deadline/,
  },
  {
    name: 'sidecar drain timeout through its variable, with timings that leave no drain',
    args: ['sidecar', '--renew-deadline', '4s'],
    env: { LEASEHOLD_DRAIN_TIMEOUT: '1s' },
    message: /invalid LEASEHOLD_DRAIN_TIMEOUT "1s" \(for --drain-timeout\): no drain fits renew-deadline\/2 − retry-period \(2s − 2s\)/,
  },
  {
    name: 'sidecar drain timeout without its HTTP listener',
    args: ['sidecar', '--drain-timeout', '1s', '--listen', 'off'],
    message: /invalid --drain-timeout "1s": needs --listen: the app says its work stopped with POST \/leader\/stopped/,
  },
  {
    name: 'sidecar drain timeout without a status directory for its key (nothing could end the drain)',
    args: ['sidecar', '--drain-timeout', '1s'],
    message: /invalid --drain-timeout "1s": needs --status-dir: the app proves it is the app with the drain key written there/,
  },
  {
    name: 'sidecar leader endpoints on a store that is not Kubernetes',
    args: ['sidecar', '--leader-endpoints', 'app-leader', '--pod-ip', '10.0.0.1'],
    message: /invalid --leader-endpoints "app-leader": needs --backend kubernetes \(it writes an EndpointSlice\)/,
  },
  {
    name: 'sidecar leader endpoints without the address to write',
    args: ['sidecar', '--backend', 'kubernetes', '--leader-endpoints', 'app-leader'],
    message: /invalid --leader-endpoints "app-leader": needs --pod-ip: this pod's address, from the downward API's status\.podIP/,
  },
  {
    name: 'sidecar leader endpoints that cannot be an EndpointSlice name',
    args: ['sidecar', '--backend', 'kubernetes', '--leader-endpoints', 'App_Leader', '--pod-ip', '10.0.0.1'],
    message: /invalid --leader-endpoints "App_Leader": must be an EndpointSlice's name, a DNS-1123 subdomain/,
  },
  {
    name: 'sidecar pod IP that is not an address, through its variable',
    args: ['sidecar', '--backend', 'kubernetes', '--leader-endpoints', 'app-leader'],
    env: { LEASEHOLD_POD_IP: '10.0.0' },
    message: /invalid LEASEHOLD_POD_IP "10\.0\.0" \(for --pod-ip\): must be an IPv4 or IPv6 address/,
  },
  {
    name: 'sidecar pod IP alone, which nothing would use',
    args: ['sidecar', '--pod-ip', '10.0.0.1'],
    message: /invalid --pod-ip "10\.0\.0\.1": is used only with --leader-endpoints/,
  },
  {
    name: 'run give-up count that is not a whole number',
    args: ['run', '--give-up-after', '2.5', '--', 'true'],
    message: /invalid --give-up-after "2.5": must be a whole number from 0 \(0: never\)/,
  },
  {
    name: 'run give-up count through its variable',
    args: ['run', '--', 'true'],
    env: { LEASEHOLD_GIVE_UP_AFTER: '-1' },
    message: /invalid LEASEHOLD_GIVE_UP_AFTER "-1" \(for --give-up-after\): must be a whole number from 0/,
  },
  {
    name: 'run has no drain timeout (its command exiting is its drain)',
    args: ['run', '--drain-timeout', '1s', '--', 'true'],
    message: /unknown flag --drain-timeout \(leasehold run --help lists its flags\)$/,
  },
  {
    name: 'run --skip-if-ran-within without --once (a run that keeps going has no tick)',
    args: ['run', '--skip-if-ran-within', '4m', '--', 'true'],
    message: /invalid --skip-if-ran-within "4m": needs --once: it applies to a single run/,
  },
  {
    name: 'run --give-up-after with --once (a single run never restarts its command)',
    args: ['run', '--once', '--give-up-after', '2', '--', 'true'],
    message: /invalid --give-up-after "2": applies without --once: a single run never restarts its command/,
  },
  {
    name: 'run --try without --once',
    args: ['run', '--try', '30s', '--', 'true'],
    message: /invalid --try "30s": needs --once: it applies to a single run/,
  },
  {
    name: 'run --skip-if-ran-within that is not a duration',
    args: ['run', '--once', '--skip-if-ran-within', '5', '--', 'true'],
    message: /invalid --skip-if-ran-within "5": expected a duration such as 15s, 500ms or 1m30s/,
  },
  {
    name: 'run --try of zero',
    args: ['run', '--once', '--try', '0s', '--', 'true'],
    message: /invalid --try "0s": must be from 1ms/,
  },
  // A store flag of another backend than the chosen one is refused, never ignored (a
  // --postgres-url without --backend postgres left each machine on its own SQLite file).
  {
    name: '--postgres-url without --backend postgres (its value never shown)',
    args: ['sidecar', '--postgres-url', 'postgres://app:hunter2@db.internal/leases', '--listen', 'off'],
    message:
      /^leasehold: invalid --postgres-url \(its value is not shown: it may hold a password\): only --backend postgres reads it, and the backend is sqlite \(the default\): give --backend postgres, or leave --postgres-url out$/,
  },
  {
    name: 'LEASEHOLD_POSTGRES_URL without --backend postgres names the variable to unset',
    args: ['status'],
    env: { LEASEHOLD_POSTGRES_URL: 'postgres://app:hunter2@db.internal/leases' },
    message:
      /^leasehold: invalid LEASEHOLD_POSTGRES_URL \(its value is not shown: it may hold a password\) \(for --postgres-url\): only --backend postgres reads it, and the backend is sqlite \(the default\): give --backend postgres, or unset LEASEHOLD_POSTGRES_URL$/,
  },
  {
    name: '--postgres-table under another backend',
    args: ['run', '--backend', 'kubernetes', '--postgres-table', 'public.jobs', '--', 'true'],
    message: /^leasehold: invalid --postgres-table "public\.jobs": only --backend postgres reads it, and the backend is kubernetes: give --backend postgres/,
  },
  {
    name: '--namespace under SQLite',
    args: ['status', '--namespace', 'apps'],
    message:
      /^leasehold: invalid --namespace "apps": only --backend kubernetes reads it, and the backend is sqlite \(the default\): give --backend kubernetes, or leave --namespace out$/,
  },
  {
    name: '--kubeconfig under PostgreSQL',
    args: ['sidecar', '--backend', 'postgres', '--kubeconfig', 'kubeconfig.yaml', '--listen', 'off'],
    message: /^leasehold: invalid --kubeconfig "kubeconfig\.yaml": only --backend kubernetes reads it, and the backend is postgres: give --backend kubernetes/,
  },
  {
    name: '--db under Kubernetes, the backend from its variable',
    args: ['sidecar', '--db', 'leases.db', '--listen', 'off'],
    env: { LEASEHOLD_BACKEND: 'kubernetes' },
    message:
      /^leasehold: invalid --db "leases\.db": only --backend sqlite reads it, and the backend is kubernetes \(LEASEHOLD_BACKEND\): give --backend sqlite, or leave --db out$/,
  },
  {
    name: 'LEASEHOLD_DB under PostgreSQL',
    args: ['status', '--backend', 'postgres'],
    env: { LEASEHOLD_DB: 'leases.db' },
    message:
      /^leasehold: invalid LEASEHOLD_DB "leases\.db" \(for --db\): only --backend sqlite reads it, and the backend is postgres: give --backend sqlite, or unset LEASEHOLD_DB$/,
  },
  {
    name: '--no-allow-network-filesystem under Kubernetes (given, even as false)',
    args: ['run', '--backend', 'kubernetes', '--no-allow-network-filesystem', '--', 'true'],
    message: /^leasehold: invalid --allow-network-filesystem false: only --backend sqlite reads it, and the backend is kubernetes/,
  },
  // The app's health (docs/health.md, "In the sidecar and run"): each rule, on both commands.
  {
    name: 'a health URL that is not http://',
    args: ['sidecar', '--health-http', 'https://127.0.0.1:8080/healthz'],
    message: /invalid --health-http "https:\/\/127\.0\.0\.1:8080\/healthz": it must be an http:\/\/ URL/,
  },
  {
    name: 'a health URL that is no URL',
    args: ['run', '--health-http', 'localhost:8080', '--', 'true'],
    message: /invalid --health-http "localhost:8080": it must be an http:\/\/ URL/,
  },
  {
    name: 'a health URL on port 0',
    args: ['sidecar', '--health-http', 'http://127.0.0.1:0/healthz'],
    message: /invalid --health-http "http:\/\/127\.0\.0\.1:0\/healthz": its port must be from 1 to 65535/,
  },
  {
    name: 'a health failure threshold of 0',
    args: ['sidecar', '--health-tcp', '8080', '--health-failure-threshold', '0'],
    message: /invalid --health-failure-threshold "0": must be a whole number from 1 to 1000000/,
  },
  {
    name: 'a health success threshold that is not a whole number',
    args: ['run', '--health-tcp', '8080', '--health-success-threshold', '1.5', '--', 'true'],
    message: /invalid --health-success-threshold "1\.5": must be a whole number from 1 to 1000000/,
  },
  {
    name: 'a health timeout longer than its period',
    args: ['sidecar', '--health-http', 'http://127.0.0.1:8080/', '--health-period', '2s', '--health-timeout', '3s'],
    message: /invalid --health-timeout "3s": must be at most --health-period \(2s\): one probe at a time/,
  },
  {
    name: 'the default health timeout longer than a short period',
    args: ['sidecar', '--health-exec', 'true', '--health-period', '500ms'],
    message: /invalid --health-period "500ms": must be at least --health-timeout \(1s, its default\): one probe at a time/,
  },
  {
    name: 'two health sources at once',
    args: ['sidecar', '--health-http', 'http://127.0.0.1:8080/', '--health-tcp', '8080'],
    message: /invalid --health-tcp "8080": give at most one health source: --health-http is given too/,
  },
  {
    name: 'two health sources, one through its variable',
    args: ['run', '--health-exec', 'true', '--', 'true'],
    env: { LEASEHOLD_HEALTH_TCP: '5432' },
    message: /invalid --health-exec \(its value is not shown: it may hold a password\): give at most one health source: --health-tcp is given too/,
  },
  {
    name: 'a health port out of range',
    args: ['sidecar', '--health-tcp', '70000'],
    message: /invalid --health-tcp "70000": must be \[HOST:\]PORT with a port from 1 to 65535/,
  },
  {
    name: 'a health port of 0',
    args: ['run', '--health-tcp', '127.0.0.1:0', '--', 'true'],
    message: /invalid --health-tcp "127\.0\.0\.1:0": must be \[HOST:\]PORT/,
  },
  {
    name: 'a health period that is not a duration',
    args: ['sidecar', '--health-tcp', '80', '--health-period', '10'],
    message: /invalid --health-period "10": expected a duration/,
  },
  {
    name: 'a health setting without a health source',
    args: ['sidecar', '--health-hold-down', '0s'],
    message: /invalid --health-hold-down "0s": needs a health source: --health-http, --health-tcp or --health-exec/,
  },
  // A probe of the sidecar's own listener is leasehold's health, never the app's.
  {
    name: "a health URL at the sidecar's own --listen address",
    args: ['sidecar', '--listen', '127.0.0.1:4040', '--health-http', 'http://localhost:4040/readyz'],
    message:
      /^leasehold: invalid --health-http "http:\/\/localhost:4040\/readyz": must reach the app, not this sidecar's own --listen address \(127\.0\.0\.1:4040\): leasehold's \/readyz answers 503 until it leads, so this candidate would never lead/,
  },
  {
    name: 'a health port the sidecar listens on every interface of, both from variables',
    args: ['run', '--', 'true'],
    env: { LEASEHOLD_LISTEN: ':9000', LEASEHOLD_HEALTH_TCP: '9000' },
    message: /^leasehold: invalid LEASEHOLD_HEALTH_TCP "9000" \(for --health-tcp\): must reach the app, not this sidecar's own --listen address \(:9000\)/,
  },
  // No password in any line: a URL's credentials are hidden, a command line is not shown.
  {
    name: 'a health URL with credentials is refused without them',
    args: ['sidecar', '--health-http', 'http://probe:hunter2@127.0.0.1:8080/healthz'],
    message: /^leasehold: invalid --health-http "http:\/\/<credentials hidden>@127\.0\.0\.1:8080\/healthz": it must not carry credentials$/,
  },
  {
    name: 'a health URL typed without its scheme, with credentials',
    args: ['run', '--health-http', 'probe:hunter2@localhost:8080', '--', 'true'],
    message: /^leasehold: invalid --health-http "<credentials hidden>@localhost:8080": it must be an http:\/\/ URL/,
  },
  {
    name: 'a health URL with credentials given twice',
    args: ['sidecar', '--health-http', 'http://probe:hunter2@127.0.0.1:8080/', '--health-http', 'http://127.0.0.1:8081/'],
    message: /^leasehold: invalid --health-http \["http:\/\/<credentials hidden>@127\.0\.0\.1:8080\/","http:\/\/127\.0\.0\.1:8081\/"\]: given more than once/,
  },
  {
    name: 'a health command is not shown (it may hold a password)',
    args: ['sidecar', '--health-tcp', '5432', '--health-exec', 'PGPASSWORD=hunter2 pg_isready'],
    message: /^leasehold: invalid --health-exec \(its value is not shown: it may hold a password\): give at most one health source: --health-tcp is given too$/,
  },
  {
    name: 'a connection URL left as a stray word (its flag forgotten)',
    args: ['status', '--backend', 'postgres', 'postgres://app:hunter2@db.internal/leases'],
    message: /^leasehold: unexpected argument "postgres:\/\/<credentials hidden>@db\.internal\/leases": leasehold status takes flags only/,
  },
  {
    name: "a connection URL left before run's --",
    args: ['run', '--backend', 'postgres', 'postgres://app:hunter2@db.internal/leases', '--', 'true'],
    message: /^leasehold: unexpected argument postgres:\/\/<credentials hidden>@db\.internal\/leases: leasehold run takes its command after --/,
  },
  {
    name: "a kubeconfig whose server URL is not https:// is refused without the URL's credentials",
    args: ['status', '--backend', 'kubernetes', '--kubeconfig', BAD_KUBECONFIG],
    message:
      /^leasehold: kubeconfig .*\/kubeconfig: cluster "c" needs a server URL starting with https:\/\/ \(got "ftp:\/\/<credentials hidden>@api\.internal:6443"\)$/,
  },
  { name: 'an empty health command', args: ['sidecar', '--health-exec='], message: /invalid --health-exec "": must be non-empty/ },
  {
    name: "a --listen address in another process's use (the --db file is not created)",
    args: ['sidecar', '--listen', BUSY],
    message: /invalid --listen "127\.0\.0\.1:\d+": cannot listen there: the address is in use by another process \(choose another port, or --listen off\)$/,
  },
  {
    name: "run's --listen in use: refused before the command or the --db file",
    args: ['run', '--listen', BUSY, '--', 'true'],
    message: /invalid --listen "127\.0\.0\.1:\d+": cannot listen there: the address is in use/,
  },
  {
    name: 'a --listen address not on this machine',
    args: ['sidecar', '--listen', '192.0.2.1:4040'],
    message: /invalid --listen "192\.0\.2\.1:4040": cannot listen there: the address is not one of this machine's$/,
  },
  // Shard groups (sidecar --shards, docs/shards.md).
  { name: 'no shards', args: ['sidecar', '--shards', '0'], message: /^leasehold: invalid --shards "0": must be a whole number from 1 to 4096$/ },
  {
    name: 'more shards than a group may have',
    args: ['sidecar', '--shards', '4097'],
    message: /^leasehold: invalid --shards "4097": must be a whole number from 1 to 4096$/,
  },
  {
    name: 'shards not a number',
    args: ['sidecar', '--shards', 'many'],
    message: /^leasehold: invalid --shards "many": must be a whole number from 1 to 4096$/,
  },
  {
    name: 'shards from the variable',
    args: ['sidecar'],
    env: { LEASEHOLD_SHARDS: '1.5' },
    message: /^leasehold: invalid LEASEHOLD_SHARDS "1\.5" \(for --shards\): must be a whole number from 1 to 4096$/,
  },
  {
    name: 'max members without shards',
    args: ['sidecar', '--max-members', '8'],
    message: /^leasehold: invalid --max-members "8": needs --shards: it bounds the members of a shard group$/,
  },
  {
    name: 'no member slots',
    args: ['sidecar', '--shards', '4', '--max-members', '0'],
    message: /^leasehold: invalid --max-members "0": must be a whole number from 1 to 4096$/,
  },
  {
    name: 'more member slots than a group may have',
    args: ['sidecar', '--shards', '4', '--max-members', '5000'],
    message: /^leasehold: invalid --max-members "5000": must be a whole number from 1 to 4096$/,
  },
  {
    name: 'run with shards: run does not join shard groups, and says why',
    args: ['run', '--shards', '4', '--', 'true'],
    message:
      /^leasehold: invalid --shards "4": leasehold run does not join shard groups: it runs one command while it leads one lease, .*\(run leasehold sidecar --shards beside the app\)$/,
  },
  {
    name: "run with a sidecar's LEASEHOLD_SHARDS in its environment",
    args: ['run', '--', 'true'],
    env: { LEASEHOLD_SHARDS: '16' },
    message: /^leasehold: invalid LEASEHOLD_SHARDS "16" \(for --shards\): leasehold run does not join shard groups/,
  },
  {
    name: 'shards with pod labels',
    args: ['sidecar', '--backend', 'kubernetes', '--shards', '4', '--pod-label'],
    message: /^leasehold: invalid --pod-label true: applies to a lease, not to a shard group \(--shards\): a member is neither leader nor follower/,
  },
  {
    name: "shards with the leader Service's EndpointSlice",
    args: ['sidecar', '--backend', 'kubernetes', '--shards', '4', '--leader-endpoints', 'web-leader', '--pod-ip', '10.0.0.1'],
    message: /^leasehold: invalid --leader-endpoints "web-leader": applies to a lease, not to a shard group \(--shards\): a group has no leader/,
  },
  {
    name: 'shards with ready-when elected-any',
    args: ['sidecar', '--shards', '4', '--ready-when', 'elected-any'],
    message:
      /^leasehold: invalid --ready-when "elected-any": applies to a lease, not to a shard group \(--shards\): a member is ready while it holds a session/,
  },
  {
    name: 'shards with ready-when leader given, even as the default',
    args: ['sidecar', '--shards', '4'],
    env: { LEASEHOLD_READY_WHEN: 'leader' },
    message: /^leasehold: invalid LEASEHOLD_READY_WHEN "leader" \(for --ready-when\): applies to a lease, not to a shard group/,
  },
  {
    name: 'shards with a contention window',
    args: ['sidecar', '--shards', '4', '--contention-window', '1s'],
    message: /^leasehold: invalid --contention-window "1s": applies to a lease, not to a shard group \(--shards\)/,
  },
  {
    name: 'shards kept on exit',
    args: ['sidecar', '--shards', '4', '--no-release-on-exit'],
    message:
      /^leasehold: invalid --release-on-exit false: applies to a lease, not to a shard group \(--shards\): a member that stops always gives each shard up/,
  },
  {
    name: 'a drain per shard without the status directory its key is written to',
    args: ['sidecar', '--shards', '4', '--drain-timeout', '1s'],
    message: /^leasehold: invalid --drain-timeout "1s": needs --status-dir: the app proves it is the app with the drain key written there$/,
  },
  {
    name: 'a drain per shard without its HTTP listener names the shards endpoint',
    args: ['sidecar', '--shards', '4', '--drain-timeout', '1s', '--listen', 'off'],
    message: /^leasehold: invalid --drain-timeout "1s": needs --listen: the app says a shard's work stopped with POST \/shards\/stopped$/,
  },
  {
    name: 'a drain per shard that cannot end before the renew deadline names the shards',
    args: ['sidecar', '--shards', '4', '--drain-timeout', '4s'],
    message:
      /^leasehold: invalid --drain-timeout "4s": must be at most renew-deadline\/2 − retry-period \(3s\): each shard's release must still be sent before/,
  },
  {
    name: 'a pod IP without the leader endpoints, in shard mode too',
    args: ['sidecar', '--shards', '4', '--pod-ip', '10.0.0.1'],
    message: /^leasehold: invalid --pod-ip "10\.0\.0\.1": is used only with --leader-endpoints/,
  },
  {
    name: 'a group name the Kubernetes store refuses (a label value: at most 63 characters)',
    args: ['sidecar', '--backend', 'kubernetes', '--shards', '4', '--lease', `w${'x'.repeat(63)}`],
    message: /^leasehold: invalid --lease "wx{63}": on Kubernetes a group name is a label value \(leasehold\.io\/group\): at most 63 characters/,
  },
  {
    name: "a group name ending as another group's records on Kubernetes",
    args: ['sidecar', '--backend', 'kubernetes', '--shards', '4', '--lease', 'jobs-shard-0001'],
    message: /^leasehold: invalid --lease "jobs-shard-0001": on Kubernetes a group name is a label value/,
  },
];

/** How long a case may take before it counts as not refused (a sidecar campaigning here). */
const REFUSED_WITHIN_MS = 20_000;

/**
 * The kinds of the process's active handles, sorted: what a case must leave as it found. Requests
 * in flight (a file read, a connect, a DNS lookup: FSReqCallback, FSReqPromise, ConnectWrap,
 * GetAddrInfoReqWrap, WriteWrap, SimpleWriteWrap, ShutdownWrap) end on their own and are left
 * out: the previous case's may still be finishing when this one starts (CI saw six of them in one
 * snapshot and none in the next; another run saw the test runner's own SimpleWriteWrap, a write
 * to its report pipe, in one snapshot and not the next). What one leaves behind (a socket, a
 * server, a timer) is a handle.
 */
const TRANSIENT = /^(FSReq\w*|\w*ReqWrap|ConnectWrap|\w*WriteWrap|ShutdownWrap)$/;
const activeResources = () =>
  process
    .getActiveResourcesInfo()
    .filter((kind) => !TRANSIENT.test(kind))
    .sort();

/** main() with `args` and `env` in `cwd`, its output captured; stopped by a shutdown signal if it does not end in time. */
async function runMain(args: string[], env: Record<string, string>, cwd: string) {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const signals = new EventEmitter();
  const io: CliIo = {
    stdout: (text) => void stdout.push(text),
    stderr: (text) => void stderr.push(text),
    signals,
    exit: (code) => assert.fail(`main asked for an exit at once (${code})`),
  };
  const home = process.cwd();
  process.chdir(cwd);
  let timer: NodeJS.Timeout | undefined;
  try {
    const running = main(args, { PATH: process.env.PATH, ...env }, io);
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), REFUSED_WITHIN_MS)));
    const code = await Promise.race([running, late]);
    if (code === 'late') {
      signals.emit('SIGTERM');
      await running;
      assert.fail(`not refused: main ran for ${REFUSED_WITHIN_MS} ms; stderr: ${stderr.join('')}`);
    }
    return { code, stdout: stdout.join(''), stderr: stderr.join('') };
  } finally {
    clearTimeout(timer);
    process.chdir(home);
  }
}

describe('what "nothing left running" leaves out', () => {
  it('passes over requests that end on their own, never a handle a case could leave open', () => {
    for (const kind of ['FSReqCallback', 'FSReqPromise', 'GetAddrInfoReqWrap', 'ConnectWrap', 'WriteWrap', 'SimpleWriteWrap', 'ShutdownWrap']) {
      assert.ok(TRANSIENT.test(kind), `${kind} is a request in flight`);
    }
    for (const kind of ['TCPServerWrap', 'TCPSocketWrap', 'PipeWrap', 'Timeout', 'Immediate', 'FSEventWrap', 'ProcessWrap', 'SignalWrap']) {
      assert.ok(!TRANSIENT.test(kind), `${kind} is a handle`);
    }
  });
});

describe('bad input, in-process: exit 2, one clear line, nothing written, nothing left running', () => {
  const dir = tempDir();
  after(dir.cleanup);

  for (const [i, c] of cases.entries()) {
    it(c.name, async () => {
      const cwd = join(dir.path, `case-${i}`);
      mkdirSync(cwd);
      writeFileSync(join(cwd, NOT_SQLITE), 'these are notes, not a database\n');
      writeFileSync(join(cwd, A_FILE), '');
      symlinkSync('no-such-dir', join(cwd, DANGLING));
      symlinkSync('.', join(cwd, HERE));
      const before = activeResources();
      const r = await runMain(c.args, c.env ?? {}, cwd);
      assert.equal(r.code, 2, `exit code; stderr: ${r.stderr}`);
      const lines = r.stderr.split('\n').filter(Boolean);
      assert.equal(lines.length, 1, `exactly one line on stderr, got:\n${r.stderr}`);
      assert.ok(r.stderr.endsWith('\n'), 'the line ends');
      assert.match(lines[0]!, /^leasehold: /);
      assert.match(lines[0]!, c.message);
      assert.ok(!r.stderr.includes(SECRET), 'no password in the line');
      assert.equal(r.stdout, '');
      assert.deepEqual(readdirSync(cwd).sort(), [A_FILE, DANGLING, HERE, NOT_SQLITE].sort(), 'nothing was created');
      assert.equal(readFileSync(join(cwd, NOT_SQLITE), 'utf8'), 'these are notes, not a database\n', 'nothing was changed');
      // Whatever a case opened (a store, a probe listener, a DNS lookup) is closed when main
      // returns; a handle being closed goes within a turn or two of the event loop.
      for (let turn = 0; turn < 100 && !isDeepStrictEqual(activeResources(), before); turn++) await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(activeResources(), before, 'nothing left running');
    });
  }
});

describe('a shard group whose records say another shard count: exit 2, one line, nothing written', () => {
  const dir = tempDir();
  after(dir.cleanup);

  it('refuses --shards 16 for a group of 8, before the status directory or a member slot exists', async () => {
    const db = join(dir.path, 'leases.db');
    const store = await openStore({ backend: 'sqlite', db });
    await store.createGroupRecord('workers', { kind: 'group', index: 0, shards: 8, createdAt: new Date() });
    const before = await store.listGroup('workers');
    const resources = activeResources();
    const r = await runMain(
      ['sidecar', '--shards', '16', '--db', db, '--lease', 'workers', '--identity', 'b', '--listen', '127.0.0.1:0', '--status-dir', 'status'],
      {},
      dir.path,
    );
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.stdout, '');
    const lines = r.stderr.split('\n').filter(Boolean);
    assert.deepEqual(lines, [
      'leasehold: shard group workers has 8 shards, not 16: every member of a group gives the same --shards (a group never has two counts)',
    ]);
    assert.equal(existsSync(join(dir.path, 'status')), false, 'no status directory');
    assert.deepEqual(await store.listGroup('workers'), before, 'no record written: no member slot taken');
    await store.close();
    for (let turn = 0; turn < 100 && !isDeepStrictEqual(activeResources(), resources); turn++) await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(activeResources(), resources, 'nothing left running');
  });
});
