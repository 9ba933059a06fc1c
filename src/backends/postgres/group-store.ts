/**
 * The shard groups' records in PostgreSQL (docs/postgres.md, "The group records"): the table
 * `lease_groups` in the lease table's schema (schema.ts), on the lease store's one connection,
 * which this class reaches only through GroupConnection (store.ts hands it over).
 * - created the first time a group is used, if the role may, in one statement (the connection
 *   is shared with the elector: never a BEGIN ... COMMIT of several), under an advisory lock;
 *   a role that may not is told the SQL an administrator runs;
 * - compare-and-swap: `UPDATE ... WHERE key AND version = $n`. Every written row's version is
 *   the writing transaction's id (set by the statement and, for any other writer, by the
 *   table's trigger), so a version never repeats for a key, across deletes and re-creates;
 * - every write notifies the table's channel with the group's name after it has committed, in
 *   a statement of its own, as the leases' writes do (notify.ts: a hint, whose payload is only
 *   matched against the group's name). The connection LISTENs on the channel only while a
 *   group is watched: a candidate that leads a lease alone hears none of the groups' heartbeats.
 */
import type pg from 'pg';
import { realClock } from '../../clock.js';
import {
  BackendError,
  ConflictError,
  InvalidConfigError,
  InvalidRecordError,
  NotFoundError,
  StoreOpenError,
  describeError,
  isLeaseholdError,
} from '../../errors.js';
import { escapeControl } from '../../util/escape-control.js';
import type { Logger } from '../../log.js';
import type { CallOptions } from '../lease-store.js';
import {
  recordKey,
  type GroupChanges,
  type GroupHeader,
  type GroupRecord,
  type GroupWrite,
  type GroupWriteOutcome,
  type HighWaterRaise,
  type RaisedAndTaken,
  type RaisedHighWater,
  type VersionedGroupRecord,
} from '../group-store.js';
import { checkRaise, raiseStored } from '../high-water-raise.js';
import { checkGroupWrites, checkRaiseAndTakes } from '../group-writes.js';
import { checkGroupName, checkGroupRecord } from '../group-record-check.js';
import { MAX_TEXT_BYTES, boundedColumn, oversizedColumn } from '../bounded-sql.js';
import { GROUP_KEY_COLUMNS, GROUP_VALUE_COLUMNS, headerOfRow, memberOfRow, shardOfRow } from '../group-columns.js';
import { HintThrottle, channelName } from './notify.js';
import { GROUP_TABLE, groupAdminScript, groupCreateBlock } from './schema.js';

/** What the group store needs of the lease store's connection, and nothing more. */
export interface GroupConnection {
  /** The server as messages name it, without a password (user@host:port/database). */
  readonly target: string;
  /** The role, for the SQL an administrator runs. */
  readonly role: string;
  /** At most one hint per this many ms, as the leases' watches. */
  readonly hintIntervalMs: number;
  /** Whether the store only reads (`leasehold status`): the table is then never created. */
  readOnly(): boolean;
  readonly log?: Logger | undefined;
  /**
   * Runs one statement on the shared connection, connecting if need be: bounded on the server,
   * cancelled when the signal aborts, its failure a coded error whose `cause` is the driver's.
   */
  query<R extends pg.QueryResultRow>(op: string, sql: string, params: unknown[], opts?: CallOptions): Promise<pg.QueryResult<R>>;
  /** The connection while it is up, for a statement nobody waits for; null otherwise. */
  current(): pg.Client | null;
  /** Runs a statement nobody waits for on `client`, after the ones sent to it before. */
  send(client: pg.Client, sql: string, params?: unknown[]): Promise<unknown>;
}

/** A notification that could not be sent is logged at most once per this. */
const HINT_FAILURE_LOG_INTERVAL_MS = 60_000;
/** The largest value of the version column (BIGINT): anything past it was never issued. */
const MAX_BIGINT = 9223372036854775807n;
/** Text columns, read within a bound (bounded-sql.ts); the others are typed, so bounded by their type. */
const BOUNDED: [string, number][] = [
  ['holder_identity', MAX_TEXT_BYTES],
  ['state', 64],
];
/** The columns a read of the group's rows selects; the text ones bounded. */
const ROW_COLUMNS = `kind, idx, ${BOUNDED.map(([c, max]) => boundedColumn(c, max)).join(', ')}, session, renew_time_ms, lease_duration_seconds, token, owner_slot, owner_session, acquire_time_ms, shards, created_at_ms, version, ${oversizedColumn(BOUNDED)}`;
/** Each value column's type (schema.ts), for the arrays a batch sends. */
const BATCH_TYPES: Record<(typeof GROUP_VALUE_COLUMNS)[number], string> = {
  holder_identity: 'text',
  session: 'bigint',
  state: 'text',
  renew_time_ms: 'bigint',
  lease_duration_seconds: 'float8',
  token: 'bigint',
  owner_slot: 'int',
  owner_session: 'bigint',
  acquire_time_ms: 'bigint',
  shards: 'int',
  created_at_ms: 'bigint',
};
/** Every column the store reads and writes: a table without one is refused, naming it. */
const COLUMNS = [...GROUP_KEY_COLUMNS, ...GROUP_VALUE_COLUMNS, 'version'];

/** The header's highWater raised: from the larger of its own and the raise's start, by the count (each a parameter). */
function raised(atLeast: string, count: string): string {
  return `GREATEST(COALESCE(token, 0), ${atLeast}::bigint) + ${count}::bigint`;
}

/**
 * A header row the reader takes (headerOfRow, fromRow's count and time): its creation time an
 * integer from 0 up, its highWater absent or from 0 up, its longest lease absent or a positive
 * finite number (PostgreSQL orders NaN above Infinity). The raise writes only such a header:
 * the row is parsed after the statement has committed, and a raise that wrote takes and then
 * found the header unreadable would leave them owned by a member that was told it failed.
 */
const HEADER_READABLE = `created_at_ms BETWEEN 0 AND ${Number.MAX_SAFE_INTEGER} AND (token IS NULL OR token >= 0)
  AND (lease_duration_seconds IS NULL OR (lease_duration_seconds > 0 AND lease_duration_seconds < 'Infinity'::float8))`;

/** The header row of group `g` with shard count `shards`, readable, if raised by `count` from `atLeast` it stays at most `max`. */
function raiseWhere(g: string, atLeast: string, count: string, shards: string, max: string): string {
  return `group_name = ${g} AND kind = 'group' AND idx = 0 AND shards = ${shards} AND ${raised(atLeast, count)} <= ${max}::bigint AND ${HEADER_READABLE}`;
}

/**
 * A batch's steps for a WITH (its parameters: PostgresGroupStore.batchOf): the writes unnested
 * as `w`, each update a compare-and-swap on its expected version, each create an INSERT ... ON
 * CONFLICT DO NOTHING. `joined`: a step each write is joined to (the raise), so nothing is
 * written without its row; `token`: the token written in place of the record's.
 */
function batchSteps(qualified: string, joined: string, token: string | null): string {
  const value = (c: string) => (c === 'token' && token !== null ? token : `w.${c}`);
  const from = joined ? `w, ${joined}` : 'w';
  return `w AS (
         SELECT * FROM unnest($2::int[], $3::text[], $4::int[], $5::bigint[], ${GROUP_VALUE_COLUMNS.map((c, i) => `$${i + 6}::${BATCH_TYPES[c]}[]`).join(', ')})
           AS w(ord, kind, idx, expected, ${GROUP_VALUE_COLUMNS.join(', ')})
       ), updated AS (
         UPDATE ${qualified} t SET ${GROUP_VALUE_COLUMNS.map((c) => `${c} = ${value(c)}`).join(', ')}, version = txid_current()
         FROM ${from} WHERE w.expected IS NOT NULL AND t.group_name = $1 AND t.kind = w.kind AND t.idx = w.idx AND t.version = w.expected
         RETURNING w.ord, t.version
       ), created AS (
         INSERT INTO ${qualified} (group_name, kind, idx, ${GROUP_VALUE_COLUMNS.join(', ')}, version)
         SELECT $1, w.kind, w.idx, ${GROUP_VALUE_COLUMNS.map(value).join(', ')}, txid_current() FROM ${from} WHERE w.expected IS NULL
         ON CONFLICT (group_name, kind, idx) DO NOTHING
         RETURNING kind, idx, version
       )`;
}

/** What a batch's steps wrote: each written row's place in the batch and its new version. */
const BATCH_OUTCOMES = `SELECT ord, version FROM updated
       UNION ALL SELECT w.ord, created.version FROM created JOIN w ON w.expected IS NULL AND w.kind = created.kind AND w.idx = created.idx`;

interface GroupRow {
  kind: string;
  idx: number;
  holder_identity: string;
  session: string | null;
  state: string | null;
  renew_time_ms: string | null;
  lease_duration_seconds: number | null;
  token: string | null;
  owner_slot: number | null;
  owner_session: string | null;
  acquire_time_ms: string | null;
  shards: number | null;
  created_at_ms: string | null;
  version: string;
  oversized: string | null;
}

interface Watcher {
  group: string;
  hints: HintThrottle;
  onHealth?: ((healthy: boolean) => void) | undefined;
}

export class PostgresGroupStore {
  readonly location: string;
  private readonly qualified: string;
  readonly channel: string;
  /** The table checked (and made, if missing and the role may) once: shared by concurrent calls. */
  private ready: Promise<boolean> | null = null;
  private readonly watchers = new Map<number, Watcher>();
  private watchSeq = 0;
  /** The connection LISTENing on the channel (each new one LISTENs again while anyone watches). */
  private listeningOn: pg.Client | null = null;
  /** A LISTEN on its way. */
  private listening: Promise<void> | null = null;
  /** Clients whose notifications this store hears (each gets one listener). */
  private readonly heard = new WeakSet<pg.Client>();
  private hintFailureLoggedAt = -Infinity;
  /** The rows reported holding values over their bound, so each is told once. */
  private readonly toldOversized = new Set<string>();

  constructor(
    private readonly conn: GroupConnection,
    private readonly schema: string,
    /** The lease table: a group table of the same name cannot exist beside it. */
    private readonly leaseTable: string,
  ) {
    this.qualified = `"${schema}"."${GROUP_TABLE}"`;
    this.channel = channelName(schema, GROUP_TABLE);
    this.location = `table ${schema}.${GROUP_TABLE} on ${conn.target}`;
  }

  async listGroup(group: string, opts?: CallOptions): Promise<VersionedGroupRecord[]> {
    checkGroupName(group);
    if (!(await this.ensureTable(opts))) return [];
    const r = await this.conn.query<GroupRow>('group list', `SELECT ${ROW_COLUMNS} FROM ${this.qualified} WHERE group_name = $1`, [group], opts);
    return r.rows.map((row) => this.fromRow(group, row));
  }

  /**
   * The rows written since the cursor, and the group's count of rows (a deletion shows there),
   * in one statement. A version is the writing
   * transaction's id, and ids are not handed out in the order transactions commit: a row
   * versioned 100 can commit after one versioned 101 was read. So the cursor is not the largest
   * version seen but the read's horizon, the oldest transaction id its snapshot still saw
   * running (txid_snapshot_xmin): every id below it had ended when the read ran, so each row
   * written by one was there to read. The next read takes the rows at or past it, a few of them
   * again (harmless, GroupStore says so). A transaction left open on the server holds the
   * horizon back, and reads grow back towards the whole group until it ends; never wrong. A
   * cursor past the server's newest id is from another server (a restore, a failover to a
   * copy): a full read.
   */
  async readGroupChanges(group: string, cursor: string | undefined, opts?: CallOptions): Promise<GroupChanges> {
    checkGroupName(group);
    const since = cursor !== undefined && /^\d{1,19}$/.test(cursor) && BigInt(cursor) <= MAX_BIGINT ? cursor : null;
    if (!(await this.ensureTable(opts))) return { records: [], cursor: '0', full: true, total: 0 };
    const r = await this.conn.query<Partial<GroupRow> & { horizon: string; full: boolean; total: number }>(
      'group changes',
      `SELECT h.horizon::text AS horizon, h.full, (SELECT count(*)::int FROM ${this.qualified} WHERE group_name = $1) AS total, t.*
       FROM (SELECT s.horizon, $2::bigint IS NULL OR $2::bigint > s.newest AS full
             FROM (SELECT txid_snapshot_xmin(txid_current_snapshot()) AS horizon, txid_snapshot_xmax(txid_current_snapshot()) AS newest) s) h
       LEFT JOIN LATERAL (SELECT ${ROW_COLUMNS} FROM ${this.qualified} WHERE group_name = $1 AND (h.full OR version >= $2::bigint)) t ON true`,
      [group, since],
      opts,
    );
    const head = r.rows[0];
    if (!head) throw new BackendError(`postgres group changes on ${this.location}: the read came back without its horizon`);
    const records = r.rows
      .filter((row): row is GroupRow & { horizon: string; full: boolean; total: number } => row.kind != null)
      .map((row) => this.fromRow(group, row));
    return { records, cursor: head.horizon, full: head.full, total: head.total };
  }

  async createGroupRecord(group: string, record: GroupRecord, opts?: CallOptions): Promise<string> {
    checkGroupRecord(group, record);
    this.refuseWrite('create');
    await this.ensureTable(opts);
    const r = await this.conn.query<{ version: string }>(
      'group create',
      `INSERT INTO ${this.qualified} (group_name, kind, idx, ${GROUP_VALUE_COLUMNS.join(', ')}, version)
       VALUES ($1, $2, $3, ${GROUP_VALUE_COLUMNS.map((_, i) => `$${i + 4}`).join(', ')}, txid_current())
       ON CONFLICT (group_name, kind, idx) DO NOTHING RETURNING version`,
      [group, record.kind, record.index, ...toValues(record)],
      opts,
    );
    if (r.rows.length === 0) throw new ConflictError(`group ${group} record ${recordKey(record)} already exists in ${this.location}`);
    this.hintAfterCommit(group);
    return String(r.rows[0]!.version);
  }

  async updateGroupRecord(group: string, record: GroupRecord, expectedVersion: string, opts?: CallOptions): Promise<string> {
    checkGroupRecord(group, record);
    this.refuseWrite('update');
    if (!issued(expectedVersion))
      throw new ConflictError(`group ${group} record ${recordKey(record)}: version ${JSON.stringify(expectedVersion)} is not one this store issued`);
    await this.ensureTable(opts);
    const r = await this.conn.query<{ version: string }>(
      'group update',
      `UPDATE ${this.qualified} SET ${GROUP_VALUE_COLUMNS.map((c, i) => `${c} = $${i + 5}`).join(', ')}, version = txid_current()
       WHERE group_name = $1 AND kind = $2 AND idx = $3 AND version = $4 RETURNING version`,
      [group, record.kind, record.index, expectedVersion, ...toValues(record)],
      opts,
    );
    if (r.rows.length === 0)
      throw new ConflictError(`group ${group} record ${recordKey(record)} changed or was deleted since version ${expectedVersion} was read (${this.location})`);
    this.hintAfterCommit(group);
    return String(r.rows[0]!.version);
  }

  /**
   * The header's highWater raised in one UPDATE: PostgreSQL reads the row and writes it under its
   * row lock, so two raises run one after the other and neither loses (the compare-and-swap raise
   * of 32 members lost most of theirs in a leave). A raise the UPDATE did not write (no header,
   * another shard count, past the largest token) reads the header to say why.
   */
  async raiseHighWater(group: string, raise: HighWaterRaise, opts?: CallOptions): Promise<RaisedHighWater> {
    checkGroupName(group);
    checkRaise(group, raise, Number.MAX_SAFE_INTEGER);
    this.refuseWrite('raise');
    await this.ensureTable(opts);
    const r = await this.conn.query<GroupRow>(
      'group raise',
      `UPDATE ${this.qualified} SET token = ${raised('$2', '$3')}, version = txid_current() WHERE ${raiseWhere('$1', '$2', '$3', '$4', '$5')} RETURNING ${ROW_COLUMNS}`,
      [group, raise.atLeast, raise.count, raise.shards, Number.MAX_SAFE_INTEGER],
      opts,
    );
    if (!r.rows[0]) return this.refusedRaise('group raise', group, raise, '', opts);
    const header = this.fromRow(group, r.rows[0]) as VersionedGroupRecord<GroupHeader>;
    this.hintAfterCommit(group);
    return { from: header.record.highWater! - raise.count, header };
  }

  /**
   * A batch in one statement, so one transaction (the connection is shared: never a BEGIN ...
   * COMMIT of several): the writes as arrays, an UPDATE per row whose version is still the
   * expected one and an INSERT ... ON CONFLICT DO NOTHING per create. A row another transaction
   * changed first fails its own WHERE (READ COMMITTED re-checks it on the row's newest version),
   * so it is reported, not the batch. A version this store never issued is a conflict unsent.
   */
  async writeGroupRecords(group: string, writes: readonly GroupWrite[], opts?: CallOptions): Promise<GroupWriteOutcome[]> {
    checkGroupWrites(group, writes);
    this.refuseWrite('batch');
    if (writes.length === 0) return [];
    await this.ensureTable(opts);
    const batch = this.batchOf(group, writes);
    const r = await this.conn.query<{ ord: number; version: string }>(
      'group batch',
      `WITH ${batchSteps(this.qualified, '', null)} ${BATCH_OUTCOMES}`,
      batch.params,
      opts,
    );
    for (const row of r.rows) batch.outcomes[row.ord] = { written: true, version: String(row.version) };
    if (r.rows.length > 0) this.hintAfterCommit(group);
    return this.outcomesOf(group, writes, batch.outcomes);
  }

  /**
   * The raise and the takes it reserves tokens for in one statement, so one transaction
   * (GroupStore.raiseAndTake): the header's UPDATE as raiseHighWater's, and the batch's writes
   * joined to its one returned row, each take with token from + 1 + its place. The takes' rows
   * are locked only once the join has that row, so the header's row lock comes first: the
   * members taking at once after a leave queue on it once, where they queued for the raise and
   * then sent their batches (docs/benchmarks.md). No row returned: the header was not raised and
   * nothing was written (no take can join); the header is read to say why.
   */
  async raiseAndTake(group: string, raise: Omit<HighWaterRaise, 'count'>, takes: readonly GroupWrite[], opts?: CallOptions): Promise<RaisedAndTaken> {
    checkGroupName(group);
    const full = checkRaiseAndTakes(group, raise, takes);
    this.refuseWrite('take');
    await this.ensureTable(opts);
    const batch = this.batchOf(group, takes);
    const n = batch.params.length;
    const [atLeast, count, shards, max] = [n + 1, n + 2, n + 3, n + 4].map((i) => `$${i}`) as [string, string, string, string];
    const r = await this.conn.query<GroupRow & { take_ord: number | null; take_version: string | null }>(
      'group take',
      `WITH raised AS (
         UPDATE ${this.qualified} SET token = ${raised(atLeast, count)}, version = txid_current()
         WHERE ${raiseWhere('$1', atLeast, count, shards, max)} RETURNING ${ROW_COLUMNS}
       ), ${batchSteps(this.qualified, 'raised', `raised.token - ${count}::bigint + 1 + w.ord`)}
       SELECT raised.*, o.ord AS take_ord, o.version::text AS take_version
       FROM raised LEFT JOIN (${BATCH_OUTCOMES}) o ON true`,
      [...batch.params, full.atLeast, full.count, full.shards, Number.MAX_SAFE_INTEGER],
      opts,
    );
    if (!r.rows[0]) return this.refusedRaise('group take', group, full, ', nothing was taken', opts);
    const header = this.fromRow(group, r.rows[0]) as VersionedGroupRecord<GroupHeader>;
    for (const row of r.rows) if (row.take_ord !== null) batch.outcomes[row.take_ord] = { written: true, version: String(row.take_version) };
    this.hintAfterCommit(group);
    return { from: header.record.highWater! - full.count, header, outcomes: this.outcomesOf(group, takes, batch.outcomes) };
  }

  /**
   * A raise the UPDATE did not write: the header read (by `op`, the call's own), and what kept
   * the UPDATE from writing thrown: no header, another shard count, past the largest token, or
   * a header the reader refuses (fromRow's InvalidRecordError).
   */
  private async refusedRaise(op: string, group: string, raise: HighWaterRaise, refused: string, opts?: CallOptions): Promise<never> {
    const now = await this.conn.query<GroupRow>(
      op,
      `SELECT ${ROW_COLUMNS} FROM ${this.qualified} WHERE group_name = $1 AND kind = 'group' AND idx = 0`,
      [group],
      opts,
    );
    const stored = now.rows[0] ? this.fromRow(group, now.rows[0]).record : null;
    if (stored?.kind !== 'group') throw new NotFoundError(`group ${group} has no header in ${this.location}: its highWater was not raised${refused}`);
    raiseStored(group, stored, raise, Number.MAX_SAFE_INTEGER); // throws what kept the UPDATE from writing
    throw new ConflictError(`group ${group}'s header changed while it was raised (${this.location}): nothing was written`);
  }

  /**
   * A batch's parameters ($1 the group, then the writes as arrays: batchSteps' order), and its
   * outcomes so far: a version this store never issued is a conflict, left unsent.
   */
  private batchOf(group: string, writes: readonly GroupWrite[]): { params: unknown[]; outcomes: (GroupWriteOutcome | undefined)[] } {
    const outcomes: (GroupWriteOutcome | undefined)[] = writes.map(({ record, expectedVersion }) =>
      expectedVersion !== null && !issued(expectedVersion)
        ? { written: false, conflict: `group ${group} record ${recordKey(record)}: version ${JSON.stringify(expectedVersion)} is not one this store issued` }
        : undefined,
    );
    const sent = writes.flatMap((w, ord) => (outcomes[ord] ? [] : [{ ord, ...w }]));
    const columns = sent.map((w) => toValues(w.record));
    const array = (i: number) => columns.map((values) => values[i] ?? null);
    const params = [
      group,
      sent.map((w) => w.ord),
      sent.map((w) => w.record.kind),
      sent.map((w) => w.record.index),
      sent.map((w) => w.expectedVersion),
      ...GROUP_VALUE_COLUMNS.map((_, i) => array(i)),
    ];
    return { params, outcomes };
  }

  /** Each write's outcome: the one found, else the conflict that kept its row from being written. */
  private outcomesOf(group: string, writes: readonly GroupWrite[], found: readonly (GroupWriteOutcome | undefined)[]): GroupWriteOutcome[] {
    return writes.map(
      ({ record, expectedVersion }, i) =>
        found[i] ?? {
          written: false,
          conflict:
            expectedVersion === null
              ? `group ${group} record ${recordKey(record)} already exists in ${this.location}`
              : `group ${group} record ${recordKey(record)} changed or was deleted since version ${expectedVersion} was read (${this.location})`,
        },
    );
  }

  /**
   * Hints for one group: a notification naming it, at most one per hint interval. Healthy once
   * the connection LISTENs on the channel; every reconnect is a hint, since notifications sent
   * while it was down are lost.
   */
  watchGroup(group: string, onChange: () => void, onHealth?: (healthy: boolean) => void): () => void {
    checkGroupName(group);
    const id = this.watchSeq++;
    const hints = new HintThrottle(realClock, this.conn.hintIntervalMs, onChange);
    this.watchers.set(id, { group, hints, onHealth });
    void this.listen().then(
      () => {
        if (this.watchers.has(id)) onHealth?.(true);
      },
      () => {}, // the connection's failure: connected() LISTENs again when it is back, and up() says so
    );
    return () => {
      hints.cancel();
      this.watchers.delete(id);
      const client = this.conn.current();
      if (this.watchers.size === 0 && client && this.listeningOn === client) {
        this.listeningOn = null;
        this.conn.send(client, `UNLISTEN "${this.channel}"`).catch(() => {});
      }
    };
  }

  /**
   * LISTENs on the channel, connecting if need be; one statement for any number of watchers
   * asking at once (the connection is shared: each statement waits for the one before).
   */
  private listen(): Promise<void> {
    const client = this.conn.current();
    if (client && this.listeningOn === client) return Promise.resolve();
    this.listening ??= this.conn
      .query('group listen', `LISTEN "${this.channel}"`, [])
      .then(() => {
        const now = this.conn.current();
        if (now) this.hear(now);
        this.listeningOn = now;
      })
      .finally(() => {
        this.listening = null;
      });
    return this.listening;
  }

  /** Whether anyone watches a group: the connection then reconnects on its own. */
  watching(): boolean {
    return this.watchers.size > 0;
  }

  /**
   * A new connection, before it is handed out: it LISTENs on the channel if anyone watches. Run
   * by the lease store inside its connect, so a failure is a failed connect.
   */
  async connected(client: pg.Client): Promise<void> {
    this.hear(client);
    if (this.watchers.size === 0) return;
    await client.query(`LISTEN "${this.channel}"`);
    this.listeningOn = client;
  }

  /** The connection is up and listening: watchers are healthy, and hear of what they missed. */
  up(): void {
    if (this.listeningOn === null || this.listeningOn !== this.conn.current()) return;
    for (const w of this.watchers.values()) {
      w.onHealth?.(true);
      w.hints.hint();
    }
  }

  /** The connection broke: watchers are unhealthy until it is back. */
  down(): void {
    this.listeningOn = null;
    for (const w of this.watchers.values()) w.onHealth?.(false);
  }

  close(): void {
    for (const w of this.watchers.values()) w.hints.cancel();
    this.watchers.clear();
  }

  /** Reads a notification on the groups' channel off `client`, once per client. */
  private hear(client: pg.Client): void {
    if (this.heard.has(client)) return;
    this.heard.add(client);
    client.on('notification', (n) => {
      if (n.channel !== this.channel) return;
      // The payload is only matched against a watched group's name: it carries nothing else in.
      for (const w of this.watchers.values()) if (w.group === n.payload) w.hints.hint();
    });
  }

  private refuseWrite(op: string): void {
    if (this.conn.readOnly()) throw new BackendError(`postgres group ${op} on ${this.location}: this store was opened read-only`);
  }

  /**
   * The table, checked once (and made, if missing and the role may): true when it is there. A
   * reader finds none in a schema no group has used (its lists are empty); a lease table that
   * has the groups table's name leaves no room for it.
   */
  private ensureTable(opts: CallOptions | undefined): Promise<boolean> {
    if (this.leaseTable === GROUP_TABLE) {
      return Promise.reject(
        new InvalidConfigError(
          `the lease table ${this.schema}.${GROUP_TABLE} has the name of the shard groups' table: shard groups need another lease table name (postgresTable)`,
          { field: 'postgresTable' },
        ),
      );
    }
    this.ready ??= this.checkTable(opts).catch((err: unknown) => {
      this.ready = null;
      throw err;
    });
    return this.ready;
  }

  private async checkTable(opts: CallOptions | undefined): Promise<boolean> {
    const present = async () =>
      (await this.conn.query<{ ok: boolean }>('group check table', 'SELECT to_regclass($1) IS NOT NULL AS ok', [`"${this.schema}"."${GROUP_TABLE}"`], opts))
        .rows[0]?.ok === true;
    if (!(await present())) {
      if (this.conn.readOnly()) {
        this.ready = null; // a candidate may make it later
        return false;
      }
      try {
        await this.conn.query('group create table', groupCreateBlock(this.schema), [], opts);
      } catch (err) {
        const code = codeOf(err);
        if (code === '42501' || code === '3F000') {
          throw new StoreOpenError(
            `${this.location}: the shard groups' table does not exist and this role may not create it (${describeError(err)}); have an administrator run (docs/postgres.md): ${groupAdminScript(this.schema, this.conn.role).replace(/\s+/g, ' ')}`,
            { cause: err },
          );
        }
        throw err;
      }
    }
    try {
      await this.conn.query('group check table', `SELECT 1 FROM ${this.qualified} WHERE false FOR UPDATE`, [], opts);
    } catch (err) {
      if (codeOf(err) === '42501') {
        throw new StoreOpenError(
          `${this.location}: no permission on the shard groups' table (${describeError(err)}); grant it with: GRANT SELECT, INSERT, UPDATE ON ${this.schema}.${GROUP_TABLE} TO <role>`,
          { cause: err },
        );
      }
      throw err;
    }
    const cols = await this.conn.query<{ name: string }>(
      'group check table',
      'SELECT attname AS name FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped',
      [`"${this.schema}"."${GROUP_TABLE}"`],
      opts,
    );
    const have = new Set(cols.rows.map((r) => r.name));
    const missing = COLUMNS.filter((c) => !have.has(c));
    if (missing.length > 0) {
      throw new StoreOpenError(
        `${this.location} has the wrong columns: missing ${missing.join(', ')}; leasehold needs ${COLUMNS.join(', ')} (see docs/postgres.md)`,
      );
    }
    return true;
  }

  /** Tells the listeners of a write that has committed: its own statement, not awaited, as the leases' (store.ts). */
  private hintAfterCommit(group: string): void {
    const client = this.conn.current();
    if (!client) return;
    this.conn.send(client, 'SELECT pg_notify($1, $2)', [this.channel, group]).catch((err: unknown) => {
      const now = performance.now();
      if (now - this.hintFailureLoggedAt < HINT_FAILURE_LOG_INTERVAL_MS) return;
      this.hintFailureLoggedAt = now;
      this.conn.log?.warn('postgres notification not sent: group members learn of changes by listing', { store: this.location, error: describeError(err) });
    });
  }

  /**
   * The record a row holds. Any role with rights on the table can store anything in it: a value
   * no group store writes is an InvalidRecordError naming the row (escaped), never a guess. A
   * holder over its bound reads as a note of its size, told once per row.
   */
  private fromRow(group: string, row: GroupRow): VersionedGroupRecord {
    const key = `${row.kind}/${row.idx}`;
    const where = `the row of group ${group} ${escapeControl(key)} in ${this.location}`;
    const bad = (column: string, value: unknown, rule: string): never => {
      throw new InvalidRecordError(`${where} holds ${column} ${escapeControl(JSON.stringify(value) ?? String(value))}, which is not ${rule}`);
    };
    const count = (column: string, value: string | number | null): number => {
      const n = Number(value);
      return value !== null && Number.isSafeInteger(n) && n >= 0 ? n : bad(column, value, `an integer from 0 to ${Number.MAX_SAFE_INTEGER}`);
    };
    const time = (column: string, value: string | null): Date | null => (value === null ? null : new Date(count(column, value)));
    const readers = { count, time, bad };
    const told = `${group}/${key}`;
    if (row.oversized === null) this.toldOversized.delete(told);
    else if (!this.toldOversized.has(told)) {
      this.toldOversized.add(told);
      this.conn.log?.warn(
        `the record ${key} of group ${group} in ${this.location} holds values over their bound (${row.oversized}; at most ${MAX_TEXT_BYTES} bytes for the holder): each was read as a note of its size, never loaded, and no rule accepts it (a holder over it is nobody's identity)`,
        { store: this.location },
      );
    }
    let record: GroupRecord;
    switch (row.kind) {
      case 'group':
        record = headerOfRow<string | number | null>(row, count('idx', row.idx), readers);
        break;
      case 'member':
        record = memberOfRow<string | number | null>(row, count('idx', row.idx), row.holder_identity, readers);
        break;
      case 'shard':
        record = shardOfRow<string | number | null>(row, count('idx', row.idx), row.holder_identity, readers);
        break;
      default:
        return bad('kind', row.kind, 'group, member or shard');
    }
    return { record, version: String(row.version) };
  }
}

/** The driver's SQLSTATE, on the error or on the coded error's cause. */
function codeOf(err: unknown): string {
  const own = (err as { code?: unknown }).code;
  if (isLeaseholdError(err)) return ((err.cause as { code?: unknown } | undefined)?.code as string | undefined) ?? '';
  return typeof own === 'string' ? own : '';
}

/** Whether `version` could be one this store issued: a BIGINT's digits. */
function issued(version: string): boolean {
  return /^\d{1,19}$/.test(version) && BigInt(version) <= MAX_BIGINT;
}

/** The value columns, in GROUP_VALUE_COLUMNS' order; those another kind uses are NULL. */
function toValues(r: GroupRecord): unknown[] {
  const ms = (d: Date | null) => (d ? d.getTime() : null);
  switch (r.kind) {
    case 'group':
      // The header's token column holds the group's high-water token, its lease_duration_seconds the
      // longest lease announced (each NULL: written before it existed; no new column, no migration).
      return ['', null, null, null, r.longestLeaseSeconds ?? null, r.highWater ?? null, null, null, null, r.shards, r.createdAt.getTime()];
    case 'member':
      return [r.holderIdentity, r.session, r.state, ms(r.renewTime), r.leaseDurationSeconds, null, null, null, null, null, null];
    case 'shard':
      return [r.holderIdentity, null, null, null, null, r.token, r.owner?.slot ?? null, r.owner?.session ?? null, ms(r.acquireTime), null, null];
  }
}
