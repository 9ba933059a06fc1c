/**
 * A sidecar whose start fails (its --listen address taken between the CLI's check and its own
 * bind) writes nothing on the way out: its status directory was never prepared, so the stop
 * neither creates it nor logs a failed write into it.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteLeaseStore } from '../backends/sqlite/store.js';
import { FakeClock } from '../testing/fake-clock.js';
import type { Logger } from '../log.js';
import { Sidecar } from './sidecar.js';
import { StatusDirInUseError } from '../errors.js';
import { resolveElectionConfig } from '../config/election-options.js';

it('a start that fails at its bind leaves no status files and logs no failed write', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-start-'));
  const taken = createServer();
  t.after(() => {
    taken.close();
    rmSync(dir, { recursive: true, force: true });
  });
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const port = (taken.address() as { port: number }).port;
  const errors: string[] = [];
  const log: Logger = { debug() {}, info() {}, warn: (msg) => errors.push(msg), error: (msg) => errors.push(msg) };
  const store = new SqliteLeaseStore(join(dir, 'leases.db'));
  const statusDir = join(dir, 'status');
  const s = new Sidecar({
    ...resolveElectionConfig({ leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000, lease: 'l', identity: 'me' }),
    store,
    log,
    clock: new FakeClock(),
    statusDir,
    listen: { host: '127.0.0.1', port },
  });
  await assert.rejects(s.start(), { code: 'EADDRINUSE' });
  await s.stop();
  assert.equal(existsSync(statusDir), false, 'no status directory');
  assert.deepEqual(errors, []);
});

it('a start on a status directory another sidecar writes fails with StatusDirInUseError, writing nothing; it is free once that one stops', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-start-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const statusDir = join(dir, 'status');
  const sidecar = (identity: string) =>
    new Sidecar({
      ...resolveElectionConfig({ leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000, lease: 'l', identity }),
      store: new SqliteLeaseStore(join(dir, 'leases.db')),
      lease: 'l',
      identity,
      log: { debug() {}, info() {}, warn() {}, error() {} },
      clock: new FakeClock(),
      statusDir,
    });
  const first = sidecar('first');
  await first.start();
  const status = readFileSync(join(statusDir, 'status.json'), 'utf8');
  const second = sidecar('second');
  await assert.rejects(second.start(), (err: unknown) => err instanceof StatusDirInUseError && err.code === 'LEASEHOLD_ERR_STATUS_DIR');
  await second.stop();
  assert.equal(readFileSync(join(statusDir, 'status.json'), 'utf8'), status, 'the second wrote nothing');
  await first.stop();
  const third = sidecar('third');
  await third.start();
  await third.stop();
  assert.equal((JSON.parse(readFileSync(join(statusDir, 'status.json'), 'utf8')) as { identity: string }).identity, 'third');
});
