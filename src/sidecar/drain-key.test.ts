import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { lstatSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DrainKey } from './drain-key.js';
import { AppDrain } from './app-drain.js';
import { FakeClock } from '../testing/fake-clock.js';

describe('DrainKey: only whoever reads the status directory can end a drain', () => {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-drain-key-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('writes a random key, mode 0640, replacing a planted link without writing through it', () => {
    const victim = join(dir, 'victim');
    writeFileSync(victim, 'untouched\n');
    symlinkSync(victim, join(dir, 'drain-key'));
    const k = new DrainKey(dir);
    k.publish();
    const file = join(dir, 'drain-key');
    assert.equal(lstatSync(file).isSymbolicLink(), false, 'the link itself is replaced');
    assert.equal(readFileSync(victim, 'utf8'), 'untouched\n');
    assert.equal(statSync(file).mode & 0o777, 0o640);
    const key = readFileSync(file, 'utf8');
    assert.match(key, /^[0-9a-f]{64}\n$/);
    new DrainKey(dir).publish();
    assert.notEqual(readFileSync(file, 'utf8'), key, 'each sidecar process writes its own');
  });

  it('a report ends the drain only with the key: 401 without one, 403 with another; nothing about the terms before', async () => {
    const k = new DrainKey(dir);
    k.publish();
    const key = readFileSync(join(dir, 'drain-key'), 'utf8').trim();
    const clock = new FakeClock();
    const d = new AppDrain(clock, k);
    d.started(3);
    d.stopped();
    let done: boolean | null = null;
    void d.wait(1_000).then((v) => (done = v));
    const none = d.report('3');
    assert.equal(none.code, 401);
    assert.equal(none.challenge, 'Bearer realm="leasehold drain"');
    assert.equal(d.report('3', `Bearer ${'a'.repeat(64)}`).code, 403);
    assert.equal(d.report('3', `Bearer ${key}x`).code, 403, 'a longer value is another key');
    assert.equal(d.report('3', `Basic ${key}`).code, 401);
    assert.equal(d.report('3', 'Bearer 3').code, 403, 'the token, which /leader gives anyone, is not the key');
    assert.equal(d.report(['1', '2']).code, 401, 'a second token is said only to the app');
    for (const a of [none, d.report('3', 'Bearer x')]) assert.ok(!a.body.includes(key));
    await clock.advance(0);
    assert.equal(done, null, 'no refused report ended the drain');
    assert.equal(d.report(['1', '2'], `Bearer ${key}`).code, 400);
    assert.equal(d.report('3', `bearer  ${key} `).code, 200, 'the scheme in any case, spaces around the key');
    await clock.advance(0);
    assert.equal(done, true);
  });

  it('without a status directory there is no key, and nothing can end a drain', () => {
    const d = new AppDrain(new FakeClock(), new DrainKey(undefined));
    d.started(1);
    d.stopped();
    const a = d.report('1', 'Bearer anything');
    assert.equal(a.code, 403);
    assert.match(a.body, /no --status-dir/);
    assert.equal(d.pending, 1);
  });
});
