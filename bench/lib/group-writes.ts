/**
 * Counting a shard group's writes at the store itself, for the shard groups' bench
 * (bench/scenarios/shards.ts), so that the figure does not rest on the members' own account:
 *   - SQLite: the file's version counter (`lease_groups_version`), which the table's triggers
 *     move on every INSERT and UPDATE of `lease_groups`, whoever writes (src/backends/sqlite/group-table.ts);
 *   - PostgreSQL: `n_tup_ins + n_tup_upd` of `lease_groups` in `pg_stat_user_tables` (rows
 *     written; a compare-and-swap that matched no row writes none). A backend reports its counts
 *     when it goes idle, at most once a second, so each end of a window can be a second late;
 *     both ends are, alike;
 *   - Kubernetes: the API server's audit log, the create, update, patch and delete requests on
 *     Leases that succeeded, by the members' users (bench/lib/audit-log.ts).
 */
import Database from 'better-sqlite3';
import { auditBytes, auditEventsSince, countsAsRequest } from './audit-log.js';
import type { PostgresServer } from '../../test/support/postgres.js';

export interface GroupWriteCounter {
  /** How the writes are counted, for the doc. */
  readonly how: string;
  /** Opens a window; its close() gives the writes that landed in it, every member together. */
  open(): Promise<{ close(): Promise<number> }>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function sqliteGroupWrites(db: string): GroupWriteCounter {
  const read = (): number => {
    const conn = new Database(db, { readonly: true, fileMustExist: true });
    try {
      const has = conn.prepare("SELECT 1 FROM sqlite_schema WHERE name = 'lease_groups_version'").pluck().get();
      return has ? Number(conn.prepare('SELECT last FROM lease_groups_version WHERE id = 1').pluck().get() ?? 0) : 0;
    } finally {
      conn.close();
    }
  };
  return {
    how: "the file's version counter (`lease_groups_version`, moved by a trigger on every INSERT and UPDATE of `lease_groups`)",
    async open() {
      const from = read();
      return { close: async () => read() - from };
    },
  };
}

export function postgresGroupWrites(pg: PostgresServer): GroupWriteCounter {
  const read = (): number =>
    Number(pg.sql("SELECT coalesce(sum(n_tup_ins + n_tup_upd), 0) FROM pg_stat_user_tables WHERE relname = 'lease_groups'", 'leases').trim());
  return {
    how: '`n_tup_ins + n_tup_upd` of `lease_groups` in `pg_stat_user_tables` (each backend reports at most once a second)',
    async open() {
      const from = read();
      return { close: async () => read() - from };
    },
  };
}

const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete']);

/** Writes on Leases that succeeded, by the users `isMember` accepts (every member's, not the plain sidecar's). */
export function auditGroupWrites(auditLog: string, isMember: (user: string) => boolean): GroupWriteCounter {
  const count = (from: number): number => {
    let n = 0;
    for (const e of auditEventsSince(auditLog, from)) {
      const code = e.responseStatus?.code ?? 0;
      if (countsAsRequest(e) && isMember(e.user.username) && WRITE_VERBS.has(e.verb) && code >= 200 && code < 300) n++;
    }
    return n;
  };
  return {
    how: "the API server's audit log: create, update, patch and delete requests on Leases that succeeded, by the members' users",
    async open() {
      // The log is written as requests complete: let the ones under way land on the right side.
      await sleep(200);
      const from = auditBytes(auditLog);
      return {
        close: async () => {
          await sleep(500);
          return count(from);
        },
      };
    },
  };
}
