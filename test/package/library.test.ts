/**
 * The package as an app uses it: a script outside the repository imports `leasehold` and
 * `leasehold/fencing` by name, through node_modules (package.json `exports`), and runs
 * in-process elections on a real SQLite file; a TypeScript app type-checks against the
 * published types. Runs the built package (scripts/test.sh builds first).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { NODE_FLAGS, REPO, tempDir } from '../support/cli.js';

describe('the package, imported by name', () => {
  const app = tempDir('leasehold-app-');
  before(() => {
    mkdirSync(join(app.path, 'node_modules'));
    symlinkSync(REPO, join(app.path, 'node_modules', 'leasehold'), 'dir');
    writeFileSync(join(app.path, 'package.json'), JSON.stringify({ name: 'app', type: 'module', private: true }));
  });
  after(() => app.cleanup());

  const runApp = (file: string, source: string) => {
    writeFileSync(join(app.path, file), source);
    return spawnSync(process.execPath, [...NODE_FLAGS, file], { cwd: app.path, encoding: 'utf8', timeout: 60_000 });
  };

  it('two in-process elections on one SQLite file: callbacks in order, the signal aborts at step-down, tokens grow', () => {
    const r = runApp(
      'elect.mjs',
      `
import { LeaderElection, InvalidConfigError } from 'leasehold';
import { FencedSqliteResource, readLeadership } from 'leasehold/fencing';
const events = [];
const store = { backend: 'sqlite', db: 'leases.db' };
const timings = { leaseDurationMs: 600, renewDeadlineMs: 400, retryPeriodMs: 100 };
let aSignal;
const started = (name) => new Promise((resolve) => {
  const e = LeaderElection.start({ store, lease: 'jobs', identity: name, ...timings, callbacks: {
    onStartedLeading: ({ token, signal }) => { events.push(name + ' leads ' + token); if (name === 'a') aSignal = signal; resolve(token); },
    onStoppedLeading: (reason) => events.push(name + ' stopped (signal aborted: ' + (name === 'a' ? aSignal.aborted : '-') + ')'),
    onNewLeader: (who) => events.push(name + ' sees ' + (who || '(none)')),
  } });
  e.then((el) => (elections[name] = el));
});
const elections = {};
const tokenA = await started('a');
const bLeads = started('b');
while (!elections.b) await new Promise((r) => setTimeout(r, 10));
await elections.a.stop();
const tokenB = await bLeads;
const isLeaderA = elections.a.isLeader();
await elections.b.stop();
let refused = '';
try { await LeaderElection.start({ store, lease: 'jobs', identity: 'c', leaseDurationMs: 100, renewDeadlineMs: 200, retryPeriodMs: 10, callbacks: { onStartedLeading() {} } }); }
catch (err) { refused = (err instanceof InvalidConfigError) + ' ' + err.message; }
console.log(JSON.stringify({ tokenA, tokenB, isLeaderA, events, refused,
  fencing: typeof FencedSqliteResource, status: readLeadership('nowhere').isLeader }));
`,
    );
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout) as {
      tokenA: number;
      tokenB: number;
      isLeaderA: boolean;
      events: string[];
      refused: string;
      fencing: string;
      status: boolean;
    };
    assert.ok(out.tokenB > out.tokenA, `tokens ${out.tokenA} then ${out.tokenB}`);
    assert.equal(out.isLeaderA, false);
    assert.ok(out.events.includes('a stopped (signal aborted: true)'), out.events.join('; '));
    assert.ok(out.events.indexOf('a stopped (signal aborted: true)') < out.events.indexOf(`b leads ${out.tokenB}`), out.events.join('; '));
    assert.ok(out.events.includes('b sees a'), 'onNewLeader reports the holder');
    assert.match(out.refused, /^true leaseDurationMs must be greater than renewDeadlineMs/);
    assert.equal(out.fencing, 'function');
    assert.equal(out.status, false);
  });

  it('a shard group imported by name: two members on one SQLite file share the shards, each with a token; shardOf as documented', () => {
    const r = runApp(
      'shards.mjs',
      `
import { ShardGroup, shardOf, readOwnedShards } from 'leasehold';
const store = { backend: 'sqlite', db: 'groups.db' };
const timings = { leaseDurationMs: 600, renewDeadlineMs: 400, retryPeriodMs: 100 };
const owned = { a: new Map(), b: new Map() };
const join = (name) => ShardGroup.start({ store, group: 'work', shards: 8, identity: name, ...timings, callbacks: {
  onShardGained: ({ shard, token, signal }) => { owned[name].set(shard, token); signal.addEventListener('abort', () => owned[name].delete(shard)); },
} });
const a = await join('a');
while (a.owned.length < 8) await new Promise((r) => setTimeout(r, 20));
const firstTokens = [...owned.a.values()];
const b = await join('b');
while (a.owned.length !== 4 || b.owned.length !== 4) await new Promise((r) => setTimeout(r, 20));
const both = [...owned.a.keys()].filter((s) => owned.b.has(s));
const movedTokens = [...owned.b.values()];
await b.stop();
while (a.owned.length < 8) await new Promise((r) => setTimeout(r, 20));
await a.stop();
console.log(JSON.stringify({ both, firstTokens, movedTokens, vector: shardOf('a', 16), none: readOwnedShards('nowhere').owned.length }));
`,
    );
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { both: number[]; firstTokens: number[]; movedTokens: number[]; vector: number; none: number };
    assert.deepEqual(out.both, [], 'no shard owned by both at once');
    // Tokens come from the group's high-water blocks: each moved shard's is past every token the
    // group issued before (a's eight), and no two are equal.
    assert.equal(out.firstTokens.length, 8);
    assert.equal(out.movedTokens.length, 4);
    assert.equal(new Set([...out.firstTokens, ...out.movedTokens]).size, 12, `tokens issued twice: ${r.stdout}`);
    assert.ok(Math.min(...out.movedTokens) > Math.max(...out.firstTokens), `each moved shard's token is past every earlier one: ${r.stdout}`);
    assert.equal(out.vector, 10, "shardOf('a', 16) as docs/shards.md says");
    assert.equal(out.none, 0);
  });

  it('callbacks that throw or reject: still leads and releases, exit 0, each error one line on stderr by default', () => {
    const r = runApp(
      'loud.mjs',
      `
import { LeaderElection, InvalidConfigError } from 'leasehold';
const timings = { leaseDurationMs: 600, renewDeadlineMs: 400, retryPeriodMs: 100 };
let led;
const leading = new Promise((resolve) => (led = resolve));
const e = await LeaderElection.start({ store: { backend: 'sqlite', db: 'loud.db' }, lease: 'jobs', identity: 'a', ...timings, callbacks: {
  onStartedLeading: ({ token }) => led(token),
  onNewLeader: () => { throw new Error('onNewLeader broke'); },
  onStoppedLeading: async () => { throw new Error('onStoppedLeading broke'); },
} });
const token = await Promise.race([leading, new Promise((r) => setTimeout(() => r(null), 5000))]);
await e.stop();
await new Promise((r) => setTimeout(r, 50));
let missing = '';
try { await LeaderElection.start({ store: { backend: 'sqlite', db: 'loud.db' }, lease: 'jobs', callbacks: { onStartedLeading() {} } }); }
catch (err) { missing = (err instanceof InvalidConfigError) + ' ' + err.code; }
console.log(JSON.stringify({ token, missing }));
`,
    );
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { token: 1, missing: 'true LEASEHOLD_ERR_INVALID_CONFIG' });
    const lines = r.stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.ok(lines.length >= 2, r.stderr);
    for (const l of lines) assert.equal(l.level, 'error', r.stderr);
    assert.ok(lines.some((l) => l.msg === 'callback failed' && l.callback === 'onNewLeader' && l.error === 'onNewLeader broke' && l.lease === 'jobs'));
    assert.ok(lines.some((l) => l.callback === 'onStoppedLeading' && l.error === 'onStoppedLeading broke'));
  });

  it('only what exports names is importable: no path into dist/', () => {
    const r = runApp('deep.mjs', "await import('leasehold/dist/src/fencing/index.js');");
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /ERR_PACKAGE_PATH_NOT_EXPORTED/);
  });

  it('a TypeScript app type-checks against the published types', () => {
    writeFileSync(
      join(app.path, 'app.ts'),
      `
import { LeaderElection, type Leadership, type LeaderStatus, ConflictError } from 'leasehold';
import { FencedSqliteResource, withPostgresFence, withSqliteFence, shardFenceKey, StaleTokenError, type FenceClaim, type PgPool, type SqliteDatabase } from 'leasehold/fencing';
const claim: FenceClaim = { key: shardFenceKey('orders', 3), token: 7 };
export const pgWrite = (pool: PgPool) => withPostgresFence(pool, claim, async (tx) => (await tx.query('SELECT 1 AS one')).rows.length, { isolationLevel: 'serializable' });
export const liteWrite = (db: SqliteDatabase): number => withSqliteFence(db, claim, (d) => d.prepare('SELECT 1').all().length);
export const stale = (e: unknown) => e instanceof StaleTokenError && e.key;
// @ts-expect-error: an isolation level PostgreSQL does not have is refused by the types
export const badLevel = (pool: PgPool) => withPostgresFence(pool, claim, async () => 1, { isolationLevel: 'snapshot' });
const work = async ({ token, signal }: Leadership): Promise<void> => { if (!signal.aborted) console.log(token); };
export const start = () => LeaderElection.start({ store: { backend: 'kubernetes' }, lease: 'x', identity: 'y', callbacks: { onStartedLeading: work } });
export const s: LeaderStatus | null = null;
export const c = ConflictError;
export const f = FencedSqliteResource;
// @ts-expect-error: an unknown callback name is refused by the types
LeaderElection.start({ store: { backend: 'sqlite', db: 'x' }, lease: 'x', identity: 'y', callbacks: { onStartedLeadin() {} } });
`,
    );
    writeFileSync(
      join(app.path, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'ES2023',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: ['node'],
          typeRoots: [join(REPO, 'node_modules/@types')],
        },
        files: ['app.ts'],
      }),
    );
    const r = spawnSync(process.execPath, [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], {
      cwd: app.path,
      encoding: 'utf8',
      timeout: 120_000,
    });
    assert.equal(r.status, 0, r.stdout + r.stderr);
  });
});
