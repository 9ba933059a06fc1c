/**
 * withPostgresFence and the SQL function on a real PostgreSQL: a writer paused (SIGSTOP) past a
 * newer writer's write is refused when it resumes; a work that throws leaves the fence where it
 * was; 16 writers at once never see a key's accepted tokens go down and lose no accepted write;
 * a pool, a client and a pool's client; each isolation level; bad input refused before anything
 * is written.
 */
import { it, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { pausedWriterScenario } from '../support/fenced-pause.js';
import { prng } from '../support/prng.js';
import type { Proc } from '../support/cli.js';
import { createPostgresFenceTable, shardFenceKey, withPostgresFence, StaleTokenError, type PgClientBase } from '../../src/fencing/index.js';

const serverStarted = startPostgres();
let server: PostgresServer;
let pool: pg.Pool;
const procs: Proc[] = [];

before(async () => {
  server = await serverStarted;
  pool = new pg.Pool({ connectionString: server.url(), max: 20 });
  pool.on('error', () => {});
  await createPostgresFenceTable(pool, { withFunction: true });
  await pool.query('CREATE TABLE fenced_data (seq bigserial PRIMARY KEY, key text NOT NULL, token bigint NOT NULL, label text NOT NULL)');
});
after(async () => {
  for (const p of procs) {
    p.kill('SIGCONT');
    p.kill('SIGKILL');
  }
  await pool?.end();
  await (await serverStarted).stop();
});

const insert = (key: string, token: number, label: string) => (tx: PgClientBase) =>
  tx.query('INSERT INTO fenced_data (key, token, label) VALUES ($1, $2, $3)', [key, token, label]).then((r) => r.rowCount);
const labels = async (key: string) =>
  (await pool.query<{ label: string }>('SELECT label FROM fenced_data WHERE key = $1 ORDER BY seq', [key])).rows.map((r) => r.label);
const fence = async (key: string) => {
  const r = await pool.query<{ token: string }>('SELECT token FROM leasehold_fences WHERE key = $1', [key]);
  return r.rows[0] === undefined ? undefined : Number(r.rows[0].token);
};
function isStale(key: string, presented: number, highest: number) {
  return (e: unknown) => {
    assert.ok(e instanceof StaleTokenError, String(e));
    assert.deepEqual([e.code, e.key, e.presented, e.highest], ['LEASEHOLD_ERR_STALE_TOKEN', key, presented, highest]);
    return true;
  };
}

describe('withPostgresFence', () => {
  it('a pool: equal and higher accepted (the fence raised), lower refused before its work runs', { timeout: 60_000 }, async () => {
    assert.equal(await withPostgresFence(pool, { key: 'orders', token: 5 }, insert('orders', 5, 'first')), 1);
    assert.equal(await withPostgresFence(pool, { key: 'orders', token: 5 }, insert('orders', 5, 'same term')), 1);
    let ran = false;
    await assert.rejects(
      withPostgresFence(pool, { key: 'orders', token: 4 }, async () => {
        ran = true;
      }),
      isStale('orders', 4, 5),
    );
    assert.equal(ran, false);
    await withPostgresFence(pool, { key: 'orders', token: 9 }, insert('orders', 9, 'newer'));
    await assert.rejects(withPostgresFence(pool, { key: 'orders', token: 8 }, insert('orders', 8, 'stale')), isStale('orders', 8, 9));
    assert.deepEqual(await labels('orders'), ['first', 'same term', 'newer']);
    assert.equal(await fence('orders'), 9);
    assert.equal(pool.totalCount - pool.idleCount, 0, 'every client went back to the pool');
  });

  it('a work that throws: rolled back with the fence, rethrown, the connection reusable', { timeout: 60_000 }, async () => {
    await withPostgresFence(pool, { key: 'throws', token: 3 }, insert('throws', 3, 'kept'));
    const boom = new Error('the work failed');
    await assert.rejects(
      withPostgresFence(pool, { key: 'throws', token: 7 }, async (tx) => {
        await insert('throws', 7, 'rolled back')(tx);
        throw boom;
      }),
      (e) => e === boom,
    );
    assert.equal(await fence('throws'), 3, 'the fence stays at 3');
    assert.deepEqual(await labels('throws'), ['kept']);
    // A failing statement in the work (the transaction aborted on the server) is rolled back too.
    const client = new pg.Client({ connectionString: server.url() });
    await client.connect();
    try {
      await assert.rejects(
        withPostgresFence(client, { key: 'throws', token: 8 }, (tx) => tx.query('INSERT INTO no_such_table VALUES (1)')),
        (e: { code?: string }) => e.code === '42P01',
      );
      assert.equal(await fence('throws'), 3);
      // The client is out of the transaction: the next fenced write on it works.
      await withPostgresFence(client, { key: 'throws', token: 4 }, insert('throws', 4, 'after'));
    } finally {
      await client.end();
    }
    assert.deepEqual(await labels('throws'), ['kept', 'after']);
  });

  it("a client and a pool's client, under each isolation level the caller asks for", { timeout: 60_000 }, async () => {
    const client = new pg.Client({ connectionString: server.url() });
    await client.connect();
    const poolClient = await pool.connect();
    try {
      const levels = [undefined, 'read committed', 'repeatable read', 'serializable'] as const;
      let token = 1;
      for (const db of [client, poolClient, pool]) {
        for (const isolationLevel of levels) {
          const seen = await withPostgresFence(
            db,
            { key: 'levels', token: token++ },
            async (tx) => (await tx.query<{ level: string }>("SELECT current_setting('transaction_isolation') AS level")).rows[0]!.level,
            { isolationLevel },
          );
          assert.equal(seen, isolationLevel ?? 'read committed');
        }
      }
      assert.equal(await fence('levels'), token - 1);
    } finally {
      poolClient.release();
      await client.end();
    }
  });

  it('a writer paused (SIGSTOP) past a newer write: refused when it resumes, nothing of it committed', { timeout: 120_000 }, async () => {
    const out = await pausedWriterScenario(
      {
        store: 'postgres',
        target: server.url(),
        write: async (key, token, label) => void (await withPostgresFence(pool, { key, token }, insert(key, token, label))),
        labels: (key = 'billing') => labels(key),
        fence: (key) => fence(key),
      },
      'billing',
      procs,
    );
    assert.deepEqual(
      [out.a.written, out.a.code, out.a.key, out.a.presented, out.a.highest],
      [false, 'LEASEHOLD_ERR_STALE_TOKEN', 'billing', 1, 2],
      JSON.stringify(out.a),
    );
    assert.match(out.a.message!, /fencing token 1 for key "billing" is behind the highest token accepted for it \(2\)/);
    assert.deepEqual(out.labels, ['A: first value', 'B: fresh value']);
    assert.equal(out.fence, 2);
  });

  it('16 writers at once, random tokens, three keys, every isolation level: no key goes back, no accepted write lost', { timeout: 120_000 }, async () => {
    const random = prng(4242);
    const keys = ['c0', 'c1', 'c2'];
    const levels = ['read committed', 'repeatable read', 'serializable'] as const;
    const accepted = new Set<string>();
    const failed = new Set<string>();
    const counts = { accepted: 0, stale: 0, serialization: 0 };
    const until = Date.now() + 3_000;
    await Promise.all(
      Array.from({ length: 16 }, async (_, w) => {
        for (let i = 0; Date.now() < until; i++) {
          const key = keys[Math.floor(random() * keys.length)]!;
          // Tokens drift upward with time, with stragglers far behind, as terms would.
          const token = 1 + Math.floor(random() * 20) + i;
          const label = `w${w}-${i}`;
          try {
            await withPostgresFence(pool, { key, token }, insert(key, token, label), { isolationLevel: levels[w % 3] });
            accepted.add(label);
            counts.accepted++;
          } catch (e) {
            failed.add(label);
            if (e instanceof StaleTokenError) {
              assert.ok(e.highest > token, `refused ${token} with highest ${e.highest}`);
              counts.stale++;
            } else if ((e as { code?: string }).code === '40001' || (e as { code?: string }).code === '40P01') counts.serialization++;
            else throw e;
          }
        }
      }),
    );
    const rows = (await pool.query<{ key: string; token: string; label: string }>("SELECT key, token, label FROM fenced_data WHERE key LIKE 'c_' ORDER BY seq"))
      .rows;
    // Within a key, rows are inserted under its fence row's lock, so their order is the commit order.
    const last = new Map<string, number>();
    for (const r of rows) {
      const t = Number(r.token);
      assert.ok(t >= (last.get(r.key) ?? 0), `key ${r.key}: token ${t} committed after ${last.get(r.key)}`);
      last.set(r.key, t);
      assert.ok(accepted.has(r.label), `${r.label} committed but its writer was told it failed`);
    }
    assert.equal(rows.length, accepted.size, 'every accepted write is in the table, and only those');
    for (const k of keys) assert.equal(await fence(k), last.get(k), `the fence of ${k} is its last accepted token`);
    assert.ok(counts.accepted > 16 && counts.stale > 0, JSON.stringify(counts));
    process.stderr.write(`# 16 writers for 3 s: ${JSON.stringify(counts)}\n`);
  });

  it('bad input: one line naming the value and the rule, nothing written', { timeout: 60_000 }, async () => {
    const cases: [unknown, unknown, object | undefined, RegExp][] = [
      ['k', 0, undefined, /^invalid fencing token 0: must be a positive safe integer/],
      ['k', '3', undefined, /^invalid fencing token "3": must be a positive safe integer/],
      ['k', 2 ** 53, undefined, /^invalid fencing token 9007199254740992 \(past 2\^53 − 1\)/],
      ['', 1, undefined, /^invalid fence key "": must be a string of 1 to 200 UTF-8 bytes/],
      ['x'.repeat(201), 1, undefined, /^invalid fence key "x{60}…" \(201 bytes\)/],
      ['a\tb', 1, undefined, /^invalid fence key "a\\tb"/],
      [
        'k',
        1,
        { table: 'public.fences; DROP TABLE fenced_data' },
        /^invalid fence table "public\.fences; DROP TABLE fenced_data": must be name or schema\.name/,
      ],
      ['k', 1, { table: 'Fences' }, /^invalid fence table "Fences": must be name or schema\.name, each a lowercase SQL identifier/],
      ['k', 1, { isolationLevel: 'snapshot' }, /^invalid isolation level "snapshot": must be one of 'read committed', 'repeatable read', 'serializable'$/],
    ];
    const before = await pool.query('SELECT count(*) AS n FROM fenced_data');
    for (const [key, token, options, want] of cases) {
      let ran = false;
      await assert.rejects(
        withPostgresFence(pool, { key, token } as { key: string; token: number }, async () => (ran = true), options),
        (e: { code?: string; message: string }) => {
          assert.equal(e.code, 'LEASEHOLD_ERR_INVALID_CONFIG', e.message);
          assert.match(e.message, want);
          assert.equal(e.message.includes('\n'), false);
          return true;
        },
      );
      assert.equal(ran, false);
    }
    assert.deepEqual((await pool.query('SELECT count(*) AS n FROM fenced_data')).rows, before.rows);
    assert.equal(await fence('k'), undefined);
  });
});

describe('a fence table of another name', () => {
  it('is used when named, with its own function; a missing one is named, never created', { timeout: 60_000 }, async () => {
    await createPostgresFenceTable(pool, { table: 'public.shard_fences', withFunction: true, functionName: 'public.shard_fence' });
    const key = shardFenceKey('orders', 3);
    await withPostgresFence(pool, { key, token: 4 }, insert(key, 4, 'shard 3'), { table: 'public.shard_fences' });
    await assert.rejects(pool.query('SELECT public.shard_fence($1, $2)', [key, 3]), (e: pg.DatabaseError) => e.code === 'LH409');
    assert.deepEqual((await pool.query('SELECT key, token FROM public.shard_fences')).rows, [{ key: 'orders/shard/3', token: '4' }]);
    assert.equal(await fence(key), undefined, 'the default table was not touched');
    await assert.rejects(
      withPostgresFence(pool, { key, token: 5 }, insert(key, 5, 'no table'), { table: 'absent_fences' }),
      /^InvalidConfigError: the fence table "public"."absent_fences" must exist: create it with createPostgresFenceTable/,
    );
    assert.equal((await pool.query<{ t: string | null }>("SELECT to_regclass('absent_fences') AS t")).rows[0]!.t, null);
    assert.deepEqual(await labels(key), ['shard 3']);
  });
});

describe('the SQL function leasehold_fence, in the caller’s own transaction', () => {
  it('raises the fence it shares with withPostgresFence; a stale token aborts with SQLSTATE LH409', { timeout: 60_000 }, async () => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      assert.deepEqual((await client.query('SELECT leasehold_fence($1, $2) AS token', ['sql-form', 6])).rows, [{ token: '6' }]);
      await client.query('INSERT INTO fenced_data (key, token, label) VALUES ($1, $2, $3)', ['sql-form', 6, 'own sql']);
      await client.query('COMMIT');
      await assert.rejects(withPostgresFence(pool, { key: 'sql-form', token: 5 }, insert('sql-form', 5, 'stale helper')), isStale('sql-form', 5, 6));

      await client.query('BEGIN');
      await client.query('INSERT INTO fenced_data (key, token, label) VALUES ($1, $2, $3)', ['sql-form', 2, 'stale own sql']);
      await assert.rejects(client.query('SELECT leasehold_fence($1, $2)', ['sql-form', 2]), (e: pg.DatabaseError) => {
        assert.equal(e.code, 'LH409');
        assert.match(e.message, /fencing token 2 for key 'sql-form' is behind the highest token accepted for it \(6\)/);
        return true;
      });
      await client.query('ROLLBACK');
      await assert.rejects(client.query('SELECT leasehold_fence($1, $2)', ['sql-form', 0]), (e: pg.DatabaseError) => e.code === '22023');
    } finally {
      client.release();
    }
    assert.deepEqual(await labels('sql-form'), ['own sql']);
    assert.equal(await fence('sql-form'), 6);
  });
});
