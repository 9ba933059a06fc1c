import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { InvalidConfigError } from '../errors.js';
import { HEALTH_DEFAULTS, resolveProbeOptions, type ProbeOptions } from './health-settings.js';

const http = { http: 'http://127.0.0.1:8080/healthz' };

describe('health settings', () => {
  it("fills in the kubelet's defaults, a 30 s hold-down, and notSentThreshold = failureThreshold", () => {
    assert.deepEqual(resolveProbeOptions({ probe: http }), { probe: http, ...HEALTH_DEFAULTS, notSentThreshold: 3 });
    assert.equal(resolveProbeOptions({ probe: http, failureThreshold: 5 }).notSentThreshold, 5);
    assert.deepEqual(resolveProbeOptions({ probe: { tcp: { port: 5432 } } }).probe, { tcp: { host: '127.0.0.1', port: 5432 } });
  });

  it("an exec probe's env is kept as given, and a refusal never quotes a value (it may be a secret)", () => {
    assert.deepEqual(resolveProbeOptions({ probe: { exec: ['check'], env: { PATH: '/bin' } } }).probe, { exec: ['check'], env: { PATH: '/bin' } });
    assert.deepEqual(resolveProbeOptions({ probe: { exec: ['check'] } }).probe, { exec: ['check'] });
    assert.throws(
      () => resolveProbeOptions({ probe: { exec: ['check'], env: { PGPASSWORD: 'hunter2\0' } } }),
      (err: unknown) => err instanceof InvalidConfigError && !err.message.includes('hunter2'),
    );
  });

  const bad: [string, unknown, string, RegExp][] = [
    ['periodMs 0', { probe: http, periodMs: 0 }, 'healthPeriod', /^health\.periodMs 0 is invalid: it must be a whole number of milliseconds from 1/],
    ['timeoutMs 0', { probe: http, timeoutMs: 0 }, 'healthTimeout', /^health\.timeoutMs 0 is invalid/],
    ['timeoutMs past periodMs', { probe: http, periodMs: 1_000, timeoutMs: 1_001 }, 'healthTimeout', /at most health\.periodMs \(1000\): one probe at a time/],
    ['a fractional period', { probe: http, periodMs: 1.5 }, 'healthPeriod', /whole number of milliseconds/],
    [
      'failureThreshold 0',
      { probe: http, failureThreshold: 0 },
      'healthFailureThreshold',
      /^health\.failureThreshold 0 is invalid: it must be a whole number from 1/,
    ],
    ['successThreshold 1.5', { probe: http, successThreshold: 1.5 }, 'healthSuccessThreshold', /whole number from 1/],
    ['a string threshold', { probe: http, failureThreshold: '3' }, 'healthFailureThreshold', /^health\.failureThreshold "3" is invalid/],
    ['a negative hold-down', { probe: http, holdDownMs: -1 }, 'healthHoldDown', /from 0 to/],
    ['notSentThreshold 0', { probe: http, notSentThreshold: 0 }, 'healthNotSentThreshold', /whole number from 1/],
    ['an https URL', { probe: { http: 'https://127.0.0.1/' } }, 'healthHttp', /it must be an http:\/\/ URL to the app/],
    ['not a URL', { probe: { http: '127.0.0.1:8080' } }, 'healthHttp', /it must be an http:\/\/ URL/],
    // The library's refusal reaches an app's logs: the URL is quoted without its credentials.
    [
      'a URL with credentials',
      { probe: { http: 'http://u:hunter2@127.0.0.1/' } },
      'healthHttp',
      /^health\.http "http:\/\/<credentials hidden>@127\.0\.0\.1\/" is invalid: it must not carry credentials$/,
    ],
    [
      'not a URL, with credentials',
      { probe: { http: 'u:hunter2@127.0.0.1:8080' } },
      'healthHttp',
      /^health\.http "<credentials hidden>@127\.0\.0\.1:8080" is invalid/,
    ],
    ['port 0', { probe: { tcp: { port: 0 } } }, 'healthTcp.port', /from 1 to 65535/],
    ['an empty command', { probe: { exec: [] } }, 'healthExec', /non-empty list of strings/],
    ['two kinds at once', { probe: { ...http, exec: ['true'] } }, 'healthProbe', /exactly one of http, tcp, exec/],
    ['env beside http', { probe: { ...http, env: {} } }, 'healthProbe', /exactly one of http, tcp, exec \(and with exec, env\)/],
    [
      'an env that is a list',
      { probe: { exec: ['true'], env: ['A=1'] } },
      'healthEnv',
      /^health\.env is invalid: it must be an object of variable names to string values$/,
    ],
    ['an env name with "="', { probe: { exec: ['true'], env: { 'A=B': 'x' } } }, 'healthEnv', /the variable name "A=B" must be non-empty, without "=" or NUL/],
    ['an env value that is not a string', { probe: { exec: ['true'], env: { PORT: 5432 } } }, 'healthEnv', /the value of "PORT" must be a string without NUL/],
    ['no probe', {}, 'healthProbe', /it must be one of/],
  ];
  for (const [name, options, field, message] of bad) {
    it(`refuses ${name} with one line naming the option and the rule`, () => {
      assert.throws(
        () => resolveProbeOptions(options as ProbeOptions),
        (err: unknown) => err instanceof InvalidConfigError && err.field === field && message.test(err.message) && !err.message.includes('\n'),
      );
    });
  }
});
