import { describe, it, after } from 'node:test';
import { join } from 'node:path';
import { tempDir } from '../support/cli.js';
import { raceRounds } from '../support/race.js';
import { SqliteLeaseStore } from '../../src/backends/sqlite/store.js';

const ROUNDS = 25;

describe('8 real processes race for an empty SQLite lease', () => {
  const dir = tempDir();
  after(dir.cleanup);

  it(`exactly one wins, in each of ${ROUNDS} rounds, with token 1`, { timeout: 300_000 }, async () => {
    const db = (round: number) => join(dir.path, `race-${round}.db`);
    const winners = await raceRounds(
      8,
      ROUNDS,
      (round) => ({ backend: 'sqlite', db: db(round), lease: 'race' }),
      async (round) => {
        const store = new SqliteLeaseStore(db(round));
        const holder = (await store.get('race'))?.record.holderIdentity;
        await store.close();
        return holder;
      },
    );
    // A record that the race was real (different winners), not a fairness assertion.
    console.log(`winners over ${ROUNDS} rounds: ${JSON.stringify(Object.fromEntries(winners))}`);
  });
});
