/**
 * The package as users install it: `npm pack` of the built tree, then `npm install` of that
 * tarball into a project outside the repository (from the npm cache when it holds the
 * dependencies). Checks exactly which files ship, the licence, the optional store drivers, and
 * that a CommonJS project (JavaScript, and TypeScript as `tsc --init` sets it up) can load this
 * ESM-only package by the recipes docs/library.md gives. Runs the built package
 * (scripts/test.sh builds first).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { REPO, tempDir } from '../support/cli.js';

/** Every file under `dir`, as paths relative to `root`, with '/' separators. */
function walk(root: string, dir = root): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(root, path) : [relative(root, path).split('\\').join('/')];
  });
}

/**
 * What is meant to ship, derived from the sources rather than from dist/: the compiled library
 * and CLI (.js and .d.ts), without tests, examples or source maps (the .ts they would point at
 * does not ship), and src/testing, what `leasehold/testing` exports; the docs, README, CONTRIBUTING.md (the README links
 * to it), LICENSE and package.json.
 */
function meantToShip(): string[] {
  const compiled = ['src', 'cmd']
    .flatMap((dir) => walk(REPO, join(REPO, dir)))
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
    .flatMap((f) => [`dist/${f.replace(/\.ts$/, '.js')}`, `dist/${f.replace(/\.ts$/, '.d.ts')}`]);
  const docs = walk(REPO, join(REPO, 'docs'));
  return [...compiled, ...docs, 'README.md', 'CONTRIBUTING.md', 'LICENSE', 'package.json'].sort();
}

function run(cmd: string, args: string[], cwd: string): SpawnSyncReturns<string> {
  return spawnSync(cmd, args, { cwd, encoding: 'utf8', timeout: 180_000, env: { ...process.env, npm_config_update_notifier: 'false' } });
}

describe('the package as users install it (npm pack, then npm install of the tarball elsewhere)', () => {
  const work = tempDir('leasehold-pack-');
  const app = join(work.path, 'app');
  const installed = join(app, 'node_modules', 'leasehold');
  const node = (file: string) => run(process.execPath, [file], app);

  before(() => {
    // --ignore-scripts: pack the dist/ this run built (prepack rebuilds it from clean otherwise).
    const pack = run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work.path], REPO);
    assert.equal(pack.status, 0, pack.stderr);
    const [{ filename }] = JSON.parse(pack.stdout) as [{ filename: string }];
    run('mkdir', [app], work.path);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }));
    // As a Kubernetes-only user would install it: no store drivers, no native build.
    const install = run(
      'npm',
      ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--omit=optional', join(work.path, filename)],
      app,
    );
    assert.equal(install.status, 0, install.stderr);
  });
  after(() => work.cleanup());

  it('ships exactly the files meant to ship: no tests, test-only helpers, examples or source maps', () => {
    const shipped = walk(installed).sort();
    const want = meantToShip();
    assert.deepEqual(
      { extra: shipped.filter((f) => !want.includes(f)), missing: want.filter((f) => !shipped.includes(f)) },
      { extra: [], missing: [] },
      'if extra files are stale build output, rebuild from clean: rm -rf dist && npm run build',
    );
    const pointing = shipped.filter((f) => f.endsWith('.js') && readFileSync(join(installed, f), 'utf8').includes('sourceMappingURL'));
    assert.deepEqual(pointing, [], 'no shipped file points at a source map that does not ship');
  });

  it('LICENSE is the Apache License 2.0 that package.json names', () => {
    const pkg = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { license: string };
    const text = readFileSync(join(installed, 'LICENSE'), 'utf8');
    assert.equal(pkg.license, 'Apache-2.0');
    assert.match(text, /^\s+Apache License\n\s+Version 2\.0, January 2004\n/);
    assert.match(text, /END OF TERMS AND CONDITIONS/);
  });

  it('without the optional drivers it loads, and a backend that needs one names the package to install', () => {
    writeFileSync(
      join(app, 'drivers.mjs'),
      `
import { openStore, StoreOpenError } from 'leasehold';
const out = {};
for (const settings of [{ backend: 'sqlite', db: 'x.db' }, { backend: 'postgres', db: '', postgresUrl: 'postgres://u@localhost/db' }]) {
  try { await openStore(settings); out[settings.backend] = 'opened'; }
  catch (err) { out[settings.backend] = (err instanceof StoreOpenError) + ' ' + err.code + ' ' + err.message; }
}
const { FencedSqliteResource, readLeadership } = await import('leasehold/fencing');
out.status = readLeadership('nowhere').isLeader;
try { new FencedSqliteResource('r.db'); out.fencing = 'opened'; }
catch (err) { out.fencing = (err instanceof StoreOpenError) + ' ' + err.code + ' ' + err.message; }
console.log(JSON.stringify(out));
`,
    );
    const r = node('drivers.mjs');
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout) as Record<string, string>;
    assert.match(
      out.sqlite!,
      /^true LEASEHOLD_ERR_STORE_OPEN the sqlite backend needs the package better-sqlite3, which is not installed: .*npm install better-sqlite3/,
    );
    assert.match(out.postgres!, /^true LEASEHOLD_ERR_STORE_OPEN the postgres backend needs the package pg, which is not installed: .*npm install pg/);
    assert.equal(out.status, false, 'leasehold/fencing loads; readLeadership needs no driver');
    assert.match(
      out.fencing!,
      /^true LEASEHOLD_ERR_STORE_OPEN FencedSqliteResource needs the package better-sqlite3, which is not installed: .*npm install better-sqlite3\)$/,
    );
  });

  it('leasehold/testing runs the store contract on its in-memory store under node --test, and its fake clock fires timers', () => {
    writeFileSync(
      join(app, 'contract.test.mjs'),
      `
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { leaseStoreContract, MemoryLeaseStore, FakeClock } from 'leasehold/testing';
leaseStoreContract('memory, from the installed package', async () => {
  const store = new MemoryLeaseStore();
  return {
    store,
    writeElsewhere: async (name, record) => void store.put(name, record),
    deleteElsewhere: async (name) => store.delete(name),
    close: () => store.close(),
  };
});
test('the fake clock', async () => {
  const clock = new FakeClock();
  let fired = 0;
  clock.setTimer(() => fired++, 1_000);
  await clock.advance(999);
  assert.equal(fired, 0);
  await clock.advance(1);
  assert.equal(fired, 1);
});
`,
    );
    // A test run of its own: without the variable that makes Node report to this file's runner.
    const { NODE_TEST_CONTEXT: _, ...env } = process.env;
    const r = spawnSync(process.execPath, ['--test', '--test-reporter=tap', 'contract.test.mjs'], { cwd: app, encoding: 'utf8', timeout: 60_000, env });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /^# fail 0$/m);
    assert.match(r.stdout, /^ok \d+ - LeaseStore contract: memory, from the installed package$/m);
  });

  it('a CommonJS app loads the ESM-only package by import() (and require() on Node >= 20.19) and runs an election', () => {
    // The driver as an install with optional dependencies would have it (the repository's build).
    symlinkSync(join(REPO, 'node_modules', 'better-sqlite3'), join(app, 'node_modules', 'better-sqlite3'), 'dir');
    writeFileSync(
      join(app, 'elect.cjs'),
      `
const required = require('leasehold');
(async () => {
  const { LeaderElection } = await import('leasehold');
  let stop;
  const token = await new Promise((resolve, reject) => {
    LeaderElection.start({ store: { backend: 'sqlite', db: 'leases.db' }, lease: 'jobs', identity: 'a',
      leaseDurationMs: 600, renewDeadlineMs: 400, retryPeriodMs: 100,
      callbacks: { onStartedLeading: ({ token }) => resolve(token) } }).then((e) => (stop = () => e.stop()), reject);
  });
  while (!stop) await new Promise((r) => setTimeout(r, 10));
  await stop();
  console.log(JSON.stringify({ token, sameModule: required.LeaderElection === LeaderElection }));
})();
`,
    );
    const r = node('elect.cjs');
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { token: 1, sameModule: true });
  });

  it('a CommonJS TypeScript project as `tsc --init` makes it: a static import is TS1295, the recipes compile and run', () => {
    const tsc = join(REPO, 'node_modules/typescript/bin/tsc');
    const ts = join(work.path, 'ts-app');
    run('mkdir', [ts], work.path);
    writeFileSync(join(ts, 'package.json'), JSON.stringify({ name: 'ts-app', version: '1.0.0', private: true }));
    symlinkSync(join(app, 'node_modules'), join(ts, 'node_modules'), 'dir');
    assert.equal(run(process.execPath, [tsc, '--init'], ts).status, 0);
    writeFileSync(join(ts, 'static.ts'), "import { LeaderElection } from 'leasehold';\nconsole.log(LeaderElection);\n");
    const refused = run(process.execPath, [tsc, '-p', '.', '--noEmit'], ts);
    assert.match(refused.stdout, /static\.ts.*error TS1295/);

    run('rm', ['static.ts'], ts);
    writeFileSync(
      join(ts, 'app.ts'),
      `
import leasehold = require('leasehold');
async function main(): Promise<void> {
  const { LeaderElection, InvalidConfigError } = await import('leasehold');
  try {
    await LeaderElection.start({ store: { backend: 'sqlite', db: 'x.db' }, lease: 'jobs', identity: '', callbacks: { onStartedLeading() {} } });
  } catch (err) {
    console.log(JSON.stringify({ refused: err instanceof InvalidConfigError, same: leasehold.InvalidConfigError === InvalidConfigError }));
  }
}
void main();
`,
    );
    const built = run(process.execPath, [tsc, '-p', '.'], ts);
    assert.equal(built.status, 0, built.stdout + built.stderr);
    const r = run(process.execPath, ['app.js'], ts);
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { refused: true, same: true });
  });
});
