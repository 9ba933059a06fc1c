/**
 * The trigger of the earliest leasehold (a function named after the table, a JSON payload on
 * `leasehold_<schema>_<table>`) notified inside every write, as the later one on this table's
 * channel did: with the server's NOTIFY queue full (any role that may connect can fill it),
 * every lease write failed at commit. Its body is brought up to date at start like the later
 * one's, on a real server: leasehold's own writes then notify nothing inside their transaction.
 */
import { it, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { PostgresLeaseStore } from '../../src/backends/postgres/store.js';
import { channelName } from '../../src/backends/postgres/notify.js';
import { notifyFunction } from '../../src/backends/postgres/schema.js';
import { startPostgres } from '../support/postgres.js';
import { waitFor } from '../support/cli.js';

const server = startPostgres();
after(async () => (await server).stop());

it("the earliest leasehold's trigger (another channel) no longer notifies inside leasehold's writes", async (t) => {
  const pgServer = await server;
  const oldChannel = 'leasehold_public_earliest';
  pgServer.sql(
    `CREATE TABLE public.earliest (name TEXT PRIMARY KEY, holder_identity TEXT NOT NULL, fencing_token BIGINT NOT NULL, renew_time DOUBLE PRECISION NOT NULL, lease_duration_seconds DOUBLE PRECISION NOT NULL, acquire_time DOUBLE PRECISION NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 1);
     CREATE FUNCTION public.earliest_leasehold_notify() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN PERFORM pg_notify('${oldChannel}', json_build_object('name', NEW.name)::text); RETURN NULL; END $f$;
     CREATE TRIGGER leasehold_notify AFTER INSERT OR UPDATE OR DELETE ON public.earliest FOR EACH ROW EXECUTE FUNCTION public.earliest_leasehold_notify();
     ALTER TABLE public.earliest OWNER TO leasehold;
     ALTER FUNCTION public.earliest_leasehold_notify() OWNER TO leasehold;`,
    'leases',
  );
  // A neighbour hears both channels: a notification on the old one can only come from inside a write.
  const heard: string[] = [];
  const neighbour = new pg.Client({ connectionString: pgServer.url('reader') });
  neighbour.on('error', () => {});
  neighbour.on('notification', (n) => heard.push(n.channel));
  await neighbour.connect();
  t.after(() => neighbour.end().catch(() => {}));
  await neighbour.query(`LISTEN ${oldChannel}`);
  await neighbour.query(`LISTEN ${channelName('public', 'earliest')}`);

  const store = await PostgresLeaseStore.open({ url: pgServer.url(), table: 'public.earliest' });
  t.after(() => store.close());
  await store.create('e', { holderIdentity: 'a', leaseDurationSeconds: 3, acquireTime: new Date(), renewTime: new Date(), leaseTransitions: 1 });
  // Sent after the write's commit: anything its transaction notified came before it.
  await waitFor("the hint for leasehold's write", () => heard.length >= 1, 5_000);
  assert.deepEqual(heard, [channelName('public', 'earliest')], 'only the hint sent after the commit');
  // Another writer's change is still hinted, by the trigger, on this table's channel.
  pgServer.sql("UPDATE public.earliest SET holder_identity = 'x' WHERE name = 'e'", 'leases');
  await waitFor("a hint for another writer's change", () => heard.length >= 2, 5_000);
  assert.deepEqual(heard, [channelName('public', 'earliest'), channelName('public', 'earliest')]);
});

it('a neighbour holding the lock leasehold changes the table under does not keep a candidate from starting', async (t) => {
  const pgServer = await server;
  const fn = notifyFunction('public', 'locked');
  const channel = channelName('public', 'locked');
  pgServer.sql(
    `CREATE TABLE public.locked (name TEXT PRIMARY KEY, holder_identity TEXT NOT NULL, fencing_token BIGINT NOT NULL, renew_time DOUBLE PRECISION NOT NULL, lease_duration_seconds DOUBLE PRECISION NOT NULL, acquire_time DOUBLE PRECISION NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 1, successor TEXT NOT NULL DEFAULT '');
     CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN PERFORM pg_notify('${channel}', NEW.name); RETURN NULL; END $f$;
     CREATE TRIGGER leasehold_notify AFTER INSERT OR UPDATE OR DELETE ON public.locked FOR EACH ROW EXECUTE FUNCTION ${fn}();
     ALTER TABLE public.locked OWNER TO leasehold;
     ALTER FUNCTION ${fn}() OWNER TO leasehold;`,
    'leases',
  );
  // A role that may only connect takes the advisory lock and keeps it.
  const neighbour = new pg.Client({ connectionString: pgServer.url('reader') });
  neighbour.on('error', () => {});
  await neighbour.connect();
  t.after(() => neighbour.end().catch(() => {}));
  await neighbour.query('SELECT pg_advisory_lock(hashtext($1))', ['leasehold:public.locked']);

  const lines: string[] = [];
  const log = { debug() {}, info() {}, error() {}, warn: (m: string) => void lines.push(m) };
  const store = await PostgresLeaseStore.open({ url: pgServer.url(), table: 'public.locked', requestTimeoutMs: 1_000, log });
  t.after(() => store.close());
  assert.ok(
    lines.some((l) => /earlier leasehold_notify trigger function, .*could not be replaced now .*the next start tries again/.test(l)),
    lines.join('\n'),
  );
  await store.create('l', { holderIdentity: 'a', leaseDurationSeconds: 3, acquireTime: new Date(), renewTime: new Date(), leaseTransitions: 1 });
  assert.equal((await store.get('l'))?.record.holderIdentity, 'a');
});
