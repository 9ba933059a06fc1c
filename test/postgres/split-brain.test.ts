/**
 * The split-brain example (examples/split-brain/) on PostgreSQL: the leases in leasehold's
 * table, the resource a row fenced by withPostgresFence, on a server started for the test.
 * Also as users run it: `npm run example:split-brain -- --postgres-url URL`, twice on the same
 * database (each run its own lease names and rows).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { REPO, start } from '../support/cli.js';
import { runSplitBrainDemo } from '../../examples/split-brain/split-brain.js';

describe('the split-brain example on PostgreSQL', () => {
  let pg: PostgresServer;
  before(async () => {
    pg = await startPostgres();
  });
  after(async () => {
    await pg?.stop();
  });

  it("unfenced, the paused old leader's write lands; fenced, it is refused and B's value stays", async () => {
    const lines: string[] = [];
    const o = await runSplitBrainDemo({ postgresUrl: pg.url() }, (l) => lines.push(l));
    assert.ok(o.tokenB > o.tokenA);
    assert.deepEqual(o.unfenced, { value: "A's STALE value", writtenBy: 'candidate-a' }, 'step 5: the stale write silently won');
    assert.equal(o.fenced.accepted, false);
    assert.match(
      o.fenced.reason,
      new RegExp(`fencing token ${o.tokenA} for key "split-brain/split-brain-fenced-[a-z0-9]+" is behind the highest token accepted for it \\(${o.tokenB}\\)`),
    );
    assert.deepEqual([o.fenced.value, o.fenced.writtenBy], ["B's fresh value", 'candidate-b'], "step 6: B's value stays");
    assert.ok(lines.some((l) => l.startsWith("A's write: rejected")));
  });

  it('runs as users run it, with --postgres-url, again on the same database', { timeout: 60_000 }, async () => {
    for (let run = 0; run < 2; run++) {
      const p = start(process.execPath, ['dist/examples/split-brain/split-brain.js', '--postgres-url', pg.url()], {}, REPO);
      const exit = await p.exited;
      assert.equal(exit.code, 0, p.stderr());
      assert.match(p.stdout(), /A's write: nothing checked it/);
      assert.match(p.stdout(), /A's write: rejected: fencing token \d+ for key/);
    }
  });

  it('refuses --postgres-url without a URL, exit 2, one line', async () => {
    const p = start(process.execPath, ['dist/examples/split-brain/split-brain.js', '--postgres-url'], {}, REPO);
    assert.equal((await p.exited).code, 2);
    assert.equal(p.stderr(), 'split-brain: --postgres-url needs a postgres:// URL\n');
  });
});
