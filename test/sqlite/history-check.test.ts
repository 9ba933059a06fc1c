/**
 * The independent checker (test/porcupine, Porcupine; docs/testing.md "Recorded histories"):
 * it can fail (hand-made histories with known violations are flagged), Jepsen's unfenced
 * lock-protected set is flagged (the negative control), the fenced one and 16 writers on a
 * fenced register are clean. Real processes on real SQLite files; the chaos runs' own recorded
 * histories are checked in test/sqlite/chaos.test.ts and test/postgres/chaos.test.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../support/cli.js';
import { checkHistory, porcupineCheck } from '../chaos/check-history.js';
import { runFencedWriters, runLockSet } from '../chaos/workloads.js';

const SEED = Number(process.env.LEASEHOLD_CHAOS_SEED ?? Date.now() % 1_000_000);

/** One operation line; times in ns, `ret` absent for an unknown outcome. */
function op(model: string, key: string, name: string, call: number, ret: number | undefined, input: object, output?: object): string {
  return JSON.stringify({ process: call, call, ...(ret === undefined ? {} : { return: ret, output }), model, key, op: name, input });
}

describe('the history checker', () => {
  const dir = tempDir('leasehold-history-');
  after(dir.cleanup);
  // Seconds once Go has Porcupine; the first build on a machine fetches it.
  before(() => void porcupineCheck(), { timeout: 300_000 });

  const check = (name: string, lines: string[]) => {
    const path = join(dir.path, `${name}.jsonl`);
    writeFileSync(path, lines.join('\n') + '\n');
    return checkHistory([path]);
  };

  it('flags a compare-and-swap that succeeds on a version already replaced, and names its visualization', async () => {
    const v = await check('stale-cas', [
      op('register', 'lease/a', 'create', 0, 10, { value: 'A' }, { ok: true, version: '1' }),
      op('register', 'lease/a', 'update', 20, 30, { value: 'B', expected: '1' }, { ok: true, version: '2' }),
      op('register', 'lease/a', 'update', 40, 50, { value: 'C', expected: '1' }, { ok: true, version: '3' }),
    ]);
    assert.equal(v.code, 1, v.output);
    const path = /visualization: (\S+)/.exec(v.output)?.[1];
    assert.ok(path && existsSync(path), `a visualization file: ${v.output}`);
  });

  it('accepts the same history when the second update failed, or its outcome is unknown', async () => {
    const base = [
      op('register', 'lease/a', 'create', 0, 10, { value: 'A' }, { ok: true, version: '1' }),
      op('register', 'lease/a', 'update', 20, 30, { value: 'B', expected: '1' }, { ok: true, version: '2' }),
    ];
    const conflict = await check('conflict', [...base, op('register', 'lease/a', 'update', 40, 50, { value: 'C', expected: '1' }, { ok: false })]);
    assert.equal(conflict.code, 0, conflict.output);
    // An unknown create (no return) that a later read shows took effect: linearizable.
    const unknown = await check('unknown', [
      op('register', 'lease/b', 'create', 0, undefined, { value: 'A' }),
      op('register', 'lease/b', 'get', 20, 30, {}, { found: true, value: 'A', version: '9' }),
      op('register', 'lease/b', 'update', 40, 50, { value: 'B', expected: '9' }, { ok: true, version: '10' }),
    ]);
    assert.equal(unknown.code, 0, unknown.output);
  });

  it("flags a lease update that keeps the version (the LeaseStore contract: any write changes it), not a group record's no-op", async () => {
    const lease = await check('noop-lease', [
      op('register', 'lease/a', 'create', 0, 10, { value: 'A' }, { ok: true, version: '1' }),
      op('register', 'lease/a', 'update', 20, 30, { value: 'A', expected: '1' }, { ok: true, version: '1' }),
    ]);
    assert.equal(lease.code, 1, lease.output);
    const group = await check('noop-group', [
      op('register', 'group/g/shard/0', 'create', 0, 10, { value: 'A', noopKeepsVersion: true }, { ok: true, version: '1' }),
      op('register', 'group/g/shard/0', 'update', 20, 30, { value: 'A', expected: '1', noopKeepsVersion: true }, { ok: true, version: '1' }),
    ]);
    assert.equal(group.code, 0, group.output);
  });

  it('flags a fenced write accepted with a token below one accepted before it, and a read of a lost write', async () => {
    const stale = await check('stale-token', [
      op('fenced', 'r', 'write', 0, 10, { token: 5, value: 'x' }, { accepted: true }),
      op('fenced', 'r', 'write', 20, 30, { token: 4, value: 'y' }, { accepted: true }),
    ]);
    assert.equal(stale.code, 1, stale.output);
    const lost = await check('lost-write', [
      op('fenced', 'r', 'write', 0, 10, { token: 5, value: 'x' }, { accepted: true }),
      op('fenced', 'r', 'read', 20, 30, {}, { value: '', token: 5 }),
    ]);
    assert.equal(lost.code, 1, lost.output);
    const fine = await check('fenced-fine', [
      op('fenced', 'r', 'write', 0, 10, { token: 5, value: 'x' }, { accepted: true }),
      op('fenced', 'r', 'write', 5, 30, { token: 5, value: 'y' }, { accepted: true }),
      op('fenced', 'r', 'write', 20, 30, { token: 4, value: 'z' }, { accepted: false }),
      op('fenced', 'r', 'read', 40, 50, {}, { value: 'y', token: 5 }),
    ]);
    assert.equal(fine.code, 0, fine.output);
  });

  it('flags an acknowledged add missing from the final read of a set', async () => {
    const v = await check('lost-add', [
      op('set', 's', 'add', 0, 10, { element: 'a' }, { ok: true }),
      op('set', 's', 'add', 0, undefined, { element: 'b' }),
      op('set', 's', 'read', 20, 30, {}, { elements: ['b'] }),
    ]);
    assert.equal(v.code, 1, v.output);
    assert.match(v.output, /1 lost.*LOST.*\[a\]/);
  });

  it('checks key by key and names the key of a violation among many clean ones', async () => {
    const lines: string[] = [];
    for (let k = 0; k < 50; k++) {
      lines.push(op('fenced', `k${k}`, 'write', 0, 10, { token: 5, value: 'x' }, { accepted: true }));
      // Key 37 accepts a lower token after a higher one: the only violation.
      lines.push(op('fenced', `k${k}`, 'write', 20, 30, { token: k === 37 ? 4 : 6, value: 'y' }, { accepted: true }));
    }
    const v = await check('many-keys', lines);
    assert.equal(v.code, 1, v.output);
    assert.match(v.output, /fenced: 100 operations on 50 keys: NOT linearizable at key "k37"/);
  });

  it('out of time is no verdict and a failure (exit 3), never a pass', async () => {
    const path = join(dir.path, 'no-time.jsonl');
    writeFileSync(path, op('fenced', 'r', 'write', 0, 10, { token: 5, value: 'x' }, { accepted: true }) + '\n');
    const v = await checkHistory([path], 0);
    assert.equal(v.code, 3, v.output);
    assert.match(v.output, /NO VERDICT within 0s \(0 keys judged of 1/);
  });

  it('refuses a line it cannot read: one line naming the file, the line and the rule, exit 2', async () => {
    const v = await check('bad', [op('register', 'lease/a', 'create', 0, 10, { value: 'A' }, { ok: true, version: '1' }), '{"model":"queue"}']);
    assert.equal(v.code, 2, v.output);
    assert.equal(v.output.split('\n').length, 1, v.output);
    assert.match(v.output, /bad\.jsonl:2: model "queue": expected register, fenced or set/);
  });
});

describe("Jepsen's lock-protected set on leasehold, with pauses past the lease", () => {
  const dirs: { cleanup(): void }[] = [];
  after(() => dirs.forEach((d) => d.cleanup()));
  before(() => void porcupineCheck(), { timeout: 300_000 });

  it(`unfenced: acknowledged adds are lost, and the checker says so (the negative control; seed ${SEED})`, { timeout: 120_000 }, async () => {
    const dir = tempDir('leasehold-lock-set-');
    dirs.push(dir);
    const r = await runLockSet({ dir: dir.path, fenced: false, seconds: 5, seed: SEED });
    console.log(`unfenced: ${r.pauses} pauses, ${r.terms} terms; ${r.verdict.output}`);
    assert.ok(r.pauses >= 2 && r.terms >= 2, 'leaders were paused and the lease changed hands');
    assert.equal(r.verdict.code, 1, r.verdict.output);
    assert.match(r.verdict.output, /[1-9]\d* lost/);
  });

  it(`fenced through withSqliteFence: no acknowledged add is lost (seed ${SEED})`, { timeout: 120_000 }, async () => {
    const dir = tempDir('leasehold-lock-set-');
    dirs.push(dir);
    const r = await runLockSet({ dir: dir.path, fenced: true, seconds: 5, seed: SEED });
    console.log(`fenced: ${r.pauses} pauses, ${r.terms} terms; ${r.verdict.output}`);
    assert.ok(r.pauses >= 2 && r.terms >= 2, 'leaders were paused and the lease changed hands');
    assert.equal(r.verdict.code, 0, r.verdict.output);
    assert.match(r.verdict.output, /[1-9]\d* acknowledged, 0 lost/);
  });

  it('16 writers with random tokens on 2 keys at once: a linearizable fenced register', { timeout: 120_000 }, async () => {
    const dir = tempDir('leasehold-fenced-writers-');
    dirs.push(dir);
    const r = await runFencedWriters({ dir: dir.path, seconds: 3, writers: 16, keys: 2 });
    console.log(`16 writers: ${r.verdict.output}`);
    assert.equal(r.verdict.code, 0, r.verdict.output);
    const ops = Number(/fenced: (\d+) operations on 2 keys: linearizable/.exec(r.verdict.output)?.[1]);
    assert.ok(ops >= 100, `enough operations to mean something: ${r.verdict.output}`);
  });
});
