/**
 * The library on a real PostgreSQL: the store an election opens bounds its statements on the
 * server by the election's own request timeout (renewDeadline / 2), as the CLI's does
 * (docs/postgres.md, "every statement is bounded on the server"), not by the store's default
 * for callers without timings.
 */
import { it, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { LeaderElection } from '../../src/election/leader-election.js';
import type { Logger } from '../../src/log.js';
import { startPostgres } from '../support/postgres.js';
import { waitFor } from '../support/cli.js';

const server = startPostgres();
after(async () => (await server).stop());

it('an election with renewDeadlineMs 2000: a request on a locked table is ended by the server at 80% of 1000 ms', { timeout: 60_000 }, async () => {
  const s = await server;
  const warnings: string[] = [];
  const quiet = () => {};
  const log: Logger = { debug: quiet, info: quiet, error: quiet, warn: (msg, fields) => warnings.push(`${msg} ${JSON.stringify(fields ?? {})}`) };
  let leading = false;
  const election = await LeaderElection.start({
    store: { backend: 'postgres', postgresUrl: s.url(), postgresTable: 'public.library_bound' },
    lease: 'bound',
    identity: 'lib',
    leaseDurationMs: 3_000,
    renewDeadlineMs: 2_000,
    retryPeriodMs: 500,
    log,
    callbacks: {
      onStartedLeading: () => {
        leading = true;
      },
      onStoppedLeading: () => {
        leading = false;
      },
    },
  });
  const admin = new pg.Client({ connectionString: s.url('postgres') });
  admin.on('error', () => {});
  await admin.connect();
  try {
    await waitFor('the election to lead', () => leading, 20_000);
    await admin.query('BEGIN');
    await admin.query('LOCK TABLE public.library_bound IN ACCESS EXCLUSIVE MODE');
    // The leader steps down at renewDeadline; the first request that gives up says who ended it:
    // the server at its statement bound, or the client at its own timeout.
    const failed = await waitFor('a request to give up', () => warnings.find((w) => /timed out after \d+ ms|no answer within \d+ ms/.test(w)), 10_000);
    assert.match(failed, /no answer within 800 ms/, failed);
  } finally {
    await admin.query('ROLLBACK').catch(() => {});
    await admin.end();
    await election.stop();
  }
});
