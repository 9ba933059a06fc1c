import pg from 'pg';
import { channelName } from '../../src/backends/postgres/notify.js';
import type { PostgresNeighbour } from './run-chaos.js';

/**
 * The chaos run's neighbour on PostgreSQL, another role on the same database: `reader` (only
 * CONNECT) forges notifications on the table's channel (and on the channel of an earlier leasehold),
 * alternately "released" and "deleted" with token 2^53 − 1; the superuser locks the table.
 */
export function postgresNeighbour(url: (role: 'reader' | 'postgres') => string): PostgresNeighbour {
  const client = async (role: 'reader' | 'postgres') => {
    const c = new pg.Client({ connectionString: url(role), application_name: 'neighbour' });
    c.on('error', () => {});
    await c.connect();
    return c;
  };
  return {
    async forge(ms) {
      const c = await client('reader');
      try {
        const until = Date.now() + ms;
        for (let version = 1_000_000; Date.now() < until; version++) {
          const row = {
            name: 'chaos',
            holder_identity: '',
            fencing_token: 1,
            renew_time: Date.now() / 1000,
            lease_duration_seconds: 2,
            acquire_time: 0,
            version,
          };
          const deleted = { ...row, deleted: true, fencing_token: Number.MAX_SAFE_INTEGER };
          for (const ch of [channelName('public', 'leases'), 'leasehold_public_leases']) {
            await c.query('SELECT pg_notify($1, $2)', [ch, JSON.stringify(version % 2 ? row : deleted)]);
          }
          await new Promise((r) => setTimeout(r, 10));
        }
      } finally {
        await c.end().catch(() => {});
      }
    },
    async lock(ms) {
      const c = await client('postgres');
      try {
        await c.query('BEGIN');
        await c.query('LOCK TABLE public.leases IN ACCESS EXCLUSIVE MODE');
        await new Promise((r) => setTimeout(r, ms));
        await c.query('COMMIT');
      } finally {
        await c.end().catch(() => {});
      }
    },
  };
}
