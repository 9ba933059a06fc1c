import type Database from 'better-sqlite3';
import { requireDriver } from '../backends/driver.js';

/**
 * The tutorial's step-5 bug, kept for the split-brain demonstration (examples/): a write to a
 * FencedSqliteResource's file with no token check at all. Not part of the public API, so no
 * app reaches for it by mistake.
 */
export function writeUnfenced(path: string, value: string, writtenBy: string): void {
  const Sqlite = requireDriver<typeof Database>('better-sqlite3', 'writeUnfenced');
  const db = new Sqlite(path, { timeout: 5_000 });
  try {
    db.prepare('UPDATE resource SET value = ?, written_by = ? WHERE id = 1').run(value, writtenBy);
  } finally {
    db.close();
  }
}
