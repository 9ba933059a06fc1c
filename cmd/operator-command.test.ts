import { it } from 'node:test';
import assert from 'node:assert/strict';
import { OPERATOR_OPTIONS, resolveOperator } from './operator-command.js';
import { parseFlags } from './cli-parser.js';

const resolve = (...argv: string[]) =>
  resolveOperator(parseFlags(OPERATOR_OPTIONS, ['--sidecar-image', 'leasehold:1', '--identity', 'op-0', ...argv], {}, { command: 'operator' }), {});

it("the operator's own election takes the sidecar's defaults: 15s, 10s, 2s", () => {
  assert.deepEqual(resolve().timings, { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 });
});

it('--lease-duration, --renew-deadline and --retry-period set it', () => {
  assert.deepEqual(resolve('--lease-duration', '30s', '--renew-deadline', '20s', '--retry-period', '4s').timings, {
    leaseDurationMs: 30_000,
    renewDeadlineMs: 20_000,
    retryPeriodMs: 4_000,
  });
});

it("refuses them by the sidecar's rules, naming the flags and the rule", () => {
  const cases: [string[], RegExp][] = [
    [['--lease-duration', 'soon'], /^invalid --lease-duration "soon": expected a duration such as 15s/],
    [['--retry-period', '0s'], /^invalid --retry-period "0s": must be from 1ms/],
    [
      ['--lease-duration', '10s', '--renew-deadline', '10s'],
      /^invalid timings --lease-duration 10s --renew-deadline 10s --retry-period 2s: leaseDuration must be greater than renewDeadline/,
    ],
    [['--renew-deadline', '2s', '--retry-period', '2s'], /renewDeadline must be greater than retryPeriod\*JitterFactor/],
    // Its lease is a Kubernetes Lease, which stores whole seconds.
    [['--lease-duration', '15500ms'], /^invalid --lease-duration "15500ms": .*leaseDurationSeconds as an integer/],
  ];
  for (const [argv, message] of cases) assert.throws(() => resolve(...argv), { message }, argv.join(' '));
});

it('--certificates: the operator keeps its own by default; external serves what another keeps', () => {
  assert.equal(resolve().certificates, 'operator');
  assert.equal(resolve('--certificates', 'external').certificates, 'external');
  assert.throws(() => resolve('--certificates', 'cert-manager'), { message: /^invalid --certificates "cert-manager": must be operator or external$/ });
});

it('--mark-secret names the Secret of the injection marks, a DNS-1123 label; --namespace-opt-in is off by default', () => {
  assert.equal(resolve()['mark-secret'], 'leasehold-operator-mark');
  assert.equal(resolve('--mark-secret', 'ops-mark')['mark-secret'], 'ops-mark');
  assert.throws(() => resolve('--mark-secret', 'Bad_Name'), { message: /^invalid --mark-secret "Bad_Name": must be a DNS-1123 label$/ });
  assert.equal(resolve()['namespace-opt-in'], false);
  assert.equal(resolve('--namespace-opt-in')['namespace-opt-in'], true);
});

it('--inject-value is the value of leasehold.io/inject its webhook selects, "true" by default; anything but a label value is refused', () => {
  assert.equal(resolve()['inject-value'], 'true');
  assert.equal(resolve('--inject-value', 'team-b')['inject-value'], 'team-b');
  for (const bad of ['a/b', '-x', 'x.', 'a'.repeat(64), 'two words'])
    assert.throws(
      () => resolve('--inject-value', bad),
      {
        message: new RegExp(
          `^invalid --inject-value "${bad.replace(/[.]/g, '\\.')}": must be a label value: 1 to 63 letters, digits, -, _ or \\., beginning and ending with a letter or digit$`,
        ),
      },
      bad,
    );
});

it('--injection-mode is webhook by default; policy is taken; anything else is refused', () => {
  assert.equal(resolve().mode, 'webhook');
  assert.equal(resolve('--injection-mode', 'policy').mode, 'policy');
  assert.throws(() => resolve('--injection-mode', 'auto'), { message: /^invalid --injection-mode "auto": must be webhook or policy$/ });
});

it('with --injection-mode policy, every flag only the webhook reads is refused, not ignored; left at their defaults they are fine', () => {
  const rule = (flag: string) =>
    new RegExp(
      `^invalid --${flag} "[^"]*": only --injection-mode webhook reads it, and the injection mode is policy \\(no webhook, certificate or mark key\\): leave --${flag} out$`,
    );
  const given: [string, string][] = [
    ['secret', 'tls'],
    ['mark-secret', 'mark'],
    ['certificates', 'external'],
    ['webhook-configuration', 'hook'],
    ['service', 'svc'],
    ['extra-host', 'op.example'],
    ['cert-validity', '24h'],
    ['ca-validity', '90000h'],
    ['tls-check', '5s'],
  ];
  for (const [flag, value] of given) {
    assert.doesNotThrow(() => resolve(`--${flag}`, value), `webhook mode takes --${flag}`);
    assert.throws(() => resolve('--injection-mode', 'policy', `--${flag}`, value), { message: rule(flag) }, flag);
  }
  assert.equal(resolve('--injection-mode', 'policy').mode, 'policy');
  // From its variable: named so, and unset rather than left out.
  const parsed = parseFlags(
    OPERATOR_OPTIONS,
    ['--sidecar-image', 'leasehold:1', '--identity', 'op-0', '--injection-mode', 'policy'],
    { LEASEHOLD_TLS_CHECK: '5s' },
    { command: 'operator' },
  );
  assert.throws(() => resolveOperator(parsed, {}), { message: /: unset LEASEHOLD_TLS_CHECK$/ });
});
