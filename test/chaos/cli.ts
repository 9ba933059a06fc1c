/**
 * npm run chaos [-- --seed N] [--seconds S] [--backend sqlite|kubernetes|postgres|both|all] [--history]
 * Runs the chaos driver (test/chaos/run-chaos.ts) and prints its report; exits 1 on any
 * violation. A failing seed is printed and can be replayed with --seed. `--history` records
 * every store call on the lease and every fenced write, and checks them with the independent
 * checker (test/porcupine; docs/testing.md "Recorded histories"); on a violation the run's
 * folder is kept, with the history and Porcupine's visualization in it.
 *
 * npm run chaos -- --backend workloads [--seconds S] [--seed N]
 * Jepsen's lock-protected set on leasehold (test/chaos/workloads.ts), unfenced then fenced, and
 * 16 writers with random tokens on a fenced register (on SQLite, then on a PostgreSQL server of
 * its own, through withSqliteFence and withPostgresFence), S seconds each, every history checked by
 * the independent checker: the unfenced set MUST be flagged (lost updates: the negative
 * control; not flagged is a failure of the run), the fenced set and the writers must be clean.
 *
 * npm run chaos -- --backend shard-history [--seconds S] [--seed N]
 * A shard group of 3 sidecars (16 shards) on SQLite, then on PostgreSQL, members frozen past
 * the lease or killed, every group store call recorded and checked (test/chaos/shard-history.ts).
 *
 * npm run chaos -- --backend elector [--seeds N] [--seed FIRST] [--versions unique|restart|both] [--only leases|shards]
 * Runs the elector's seeded simulation (test/support/elector-sim.ts) over N seeds (default
 * 20000; the unit tier runs 200), each on a store whose versions never repeat and on one whose
 * versions start again when the record is re-created (default both), and the shard groups'
 * (test/support/shard-sim.ts) once per seed, printing progress; `--only` runs one of the two. A
 * failing seed prints its violations and the events before them, and replays with
 * LEASEHOLD_SIM_SEED=N (and LEASEHOLD_SIM_VERSIONS, or LEASEHOLD_SHARD_SIM_SEED) in the unit test.
 *
 * npm run chaos -- --backend shard-pause-sqlite|shard-pause-postgres|shard-pause-kubernetes|shard-pause
 * Issue 41's finding A at its size (test/support/shard-pause.ts): 3 members, N = 2048
 * (LEASEHOLD_SHARD_PAUSE_N sets it), lease 4 s, 11 pauses of 4.0-4.5 s in 50 ms steps, a sampler
 * on every shards.json every 10 ms; on one store (Kubernetes: a control plane started for it) or
 * all three. Exits 1 on a shard listed by two members, a token reused, or a member gone.
 *
 * npm run chaos -- --backend shards-sqlite|shards-postgres|shards [--seconds S] [--seed N]
 * Runs the shard chaos driver (test/chaos/shard-chaos.ts): 3 members over 32 shards, each app
 * writing its shards through the fence, members frozen at random for S seconds (default 120),
 * on SQLite, PostgreSQL (a server started for it) or both; exits 1 on a stale write accepted,
 * or when the freezes produced no stale write to refuse.
 */
import { join } from 'node:path';
import { numberOption, option } from '../../bench/cli-args.js';
import { tempDir as scratch, type Proc } from '../support/cli.js';
import { startControlPlane } from '../support/control-plane.js';
import { formatReport, runChaos, type ChaosReport } from './run-chaos.js';
import { leaseMetadataChurn } from '../support/lease-churn.js';

const seed = numberOption('seed', Date.now() % 1_000_000 || 1);
const seconds = numberOption('seconds', 120);
const which = option('backend', 'both');
const history = process.argv.includes('--history');
const say = (l: string) => process.stderr.write(`[chaos] ${l}\n`);
const reports: ChaosReport[] = [];
/** A run's folder; kept when its recorded history failed the check, for the history and the picture. */
function tempDir(prefix: string): { path: string; cleanup: () => void } {
  const dir = scratch(prefix);
  return {
    path: dir.path,
    cleanup: () => {
      const failed = reports.at(-1)?.history && reports.at(-1)!.violations.length > 0 && reports.at(-1)!.history!.dir.startsWith(dir.path);
      if (failed) say(`kept ${dir.path}: the recorded history and the checker's visualization are there`);
      else dir.cleanup();
    },
  };
}

if (which === 'elector') {
  const { runSimulation } = await import('../support/elector-sim.js');
  const { runShardSimulation } = await import('../support/shard-sim.js');
  const count = numberOption('seeds', 20_000);
  const first = numberOption('seed', 1);
  const versions = option('versions', 'both');
  const only = option('only', 'both');
  const modes = versions === 'both' ? ['unique', 'restart'] : [versions];
  if (!modes.every((m) => m === 'unique' || m === 'restart')) {
    say(`--versions ${versions}: expected unique, restart or both`);
    process.exit(2);
  }
  if (!['both', 'leases', 'shards'].includes(only)) {
    say(`--only ${only}: expected leases or shards (both when not given)`);
    process.exit(2);
  }
  const t0 = Date.now();
  let terms = 0;
  let gains = 0;
  for (let i = 0; i < count; i++) {
    for (const mode of only === 'shards' ? [] : modes) {
      const r = await runSimulation(first + i, undefined, false, { versionsRestart: mode === 'restart' });
      terms += r.terms;
      if (r.violations.length > 0) {
        say(`seed ${r.seed} (versions ${mode}): ${r.violations.join('; ')}`);
        for (const e of r.events.slice(-40)) say(`  ${e}`);
        process.exit(1);
      }
    }
    if (only !== 'leases') {
      const r = await runShardSimulation(first + i);
      gains += r.gains;
      if (r.violations.length > 0) {
        say(`shard group seed ${r.seed} (${r.shards} shards): ${r.violations.join('; ')}`);
        for (const e of r.events.slice(-40)) say(`  ${e}`);
        process.exit(1);
      }
    }
    if ((i + 1) % 200 === 0) {
      const rate = (i + 1) / ((Date.now() - t0) / 1000);
      say(`${i + 1}/${count} seeds, ${terms} terms, ${gains} shard changes, no violation; about ${Math.round((count - i - 1) / rate)} s left`);
    }
  }
  console.log(
    `elector simulation: ${count} seeds from ${first} (versions ${versions}, ${only === 'both' ? 'leases and shard groups' : only}), ${terms} terms, ${gains} shard changes of owner, 0 violations, ${Math.round((Date.now() - t0) / 1000)} s`,
  );
  process.exit(0);
}

if (which === 'shards' || which === 'shards-sqlite' || which === 'shards-postgres') {
  const { runShardChaos, formatShardChaosReport } = await import('./shard-chaos.js');
  const stores = which === 'shards' ? (['sqlite', 'postgres'] as const) : ([which === 'shards-sqlite' ? 'sqlite' : 'postgres'] as const);
  let failed = false;
  for (const store of stores) {
    const dir = tempDir('leasehold-shard-chaos-');
    const procs: Proc[] = [];
    const pg = store === 'postgres' ? await (await import('../support/postgres.js')).startPostgres() : null;
    try {
      say(`shards on ${store}: seed ${seed}, ${seconds} s`);
      const r = await runShardChaos({
        store,
        backendArgs: pg
          ? ['--backend', 'postgres', '--postgres-url', pg.url(), '--lease', 'workers']
          : ['--db', join(dir.path, 'leases.db'), '--lease', 'workers'],
        target: pg ? pg.url() : join(dir.path, 'resource.db'),
        dir: dir.path,
        seed,
        seconds,
        procs,
        log: say,
      });
      console.log(formatShardChaosReport(r));
      failed ||= r.verdict.violations.length > 0 || r.verdict.stale === 0;
    } finally {
      for (const p of procs) {
        p.kill('SIGCONT');
        p.kill('SIGKILL');
      }
      await Promise.all(procs.map((p) => p.exited));
      await pg?.stop();
      dir.cleanup();
    }
  }
  process.exit(failed ? 1 : 0);
}

if (which === 'shard-pause' || which.startsWith('shard-pause-')) {
  // Issue 41's finding A at its own size: 3 members, N = 2048 (LEASEHOLD_SHARD_PAUSE_N), lease
  // 4 s, 11 pauses of 4.0-4.5 s in 50 ms steps, on each store asked for.
  const { ISSUE_TIMING, formatPauseReport, pauseScenario, pausesPast } = await import('../support/shard-pause.js');
  const all = ['sqlite', 'postgres', 'kubernetes'];
  const stores = which === 'shard-pause' ? all : [which.slice('shard-pause-'.length)];
  if (!stores.every((s) => all.includes(s))) {
    say(`--backend ${which}: expected shard-pause or shard-pause-sqlite, -postgres, -kubernetes`);
    process.exit(2);
  }
  const n = Number(process.env.LEASEHOLD_SHARD_PAUSE_N ?? 2048);
  let failed = false;
  for (const store of stores) {
    const dir = tempDir('leasehold-shard-pause-');
    const procs: Proc[] = [];
    const pg = store === 'postgres' ? await (await import('../support/postgres.js')).startPostgres() : null;
    const cp = store === 'kubernetes' ? await startControlPlane() : null;
    try {
      const backendArgs = pg
        ? ['--backend', 'postgres', '--postgres-url', pg.url(), '--lease', 'workers']
        : cp
          ? ['--backend', 'kubernetes', '--kubeconfig', cp.adminKubeconfig, '--namespace', 'default', '--lease', 'workers']
          : ['--db', join(dir.path, 'leases.db'), '--lease', 'workers'];
      say(`shard pauses on ${store}: N = ${n}`);
      const r = await pauseScenario({
        dir: dir.path,
        backendArgs,
        shards: n,
        timing: ISSUE_TIMING,
        pausesMs: pausesPast(ISSUE_TIMING.leaseMs, 500, 50),
        procs,
        settleMs: 600_000,
        say,
      });
      console.log(formatPauseReport(r));
      failed ||= r.shardsTwice > 0 || r.tokensReused > 0 || r.exited.length > 0;
    } catch (err) {
      say(`shard pauses on ${store} did not finish: ${err instanceof Error ? err.message : String(err)}`);
      failed = true;
    } finally {
      for (const p of procs) {
        p.kill('SIGCONT');
        p.kill('SIGKILL');
      }
      await Promise.all(procs.map((p) => p.exited));
      await pg?.stop();
      await cp?.stop();
      dir.cleanup();
    }
  }
  process.exit(failed ? 1 : 0);
}

if (which === 'workloads') {
  const { formatFencedWriters, runFencedWriters, runLockSet } = await import('./workloads.js');
  const failures: string[] = [];
  for (const fenced of [false, true]) {
    const dir = scratch('leasehold-lock-set-');
    const r = await runLockSet({ dir: dir.path, fenced, seconds, seed, log: say });
    const flagged = r.verdict.code === 1 && r.verdict.output.includes('LOST');
    const expected = fenced ? r.verdict.code === 0 : flagged;
    console.log(`lock-protected set, ${r.mode}: ${seconds} s, ${r.terms} terms, ${r.pauses} pauses of the leader past its lease; checker: ${r.verdict.output}`);
    if (!expected) failures.push(fenced ? `the fenced set failed the check (${dir.path} kept)` : `the negative control was NOT flagged (${dir.path} kept)`);
    else dir.cleanup();
  }
  const { startPostgres } = await import('../support/postgres.js');
  for (const store of ['sqlite', 'postgres'] as const) {
    const dir = scratch('leasehold-fenced-writers-');
    const pg = store === 'postgres' ? await startPostgres() : undefined;
    try {
      const w = await runFencedWriters({ dir: dir.path, seconds, store, postgresUrl: pg?.url() });
      console.log(formatFencedWriters(w, seconds));
      if (w.verdict.code !== 0) failures.push(`the fenced writers on ${store} failed the check (${dir.path} kept)`);
      else dir.cleanup();
    } finally {
      await pg?.stop();
    }
  }
  for (const f of failures) say(f);
  process.exit(failures.length > 0 ? 1 : 0);
}

if (which === 'shard-history') {
  const { runShardHistory } = await import('./shard-history.js');
  const { startPostgres } = await import('../support/postgres.js');
  let failed = false;
  for (const backend of ['sqlite', 'postgres'] as const) {
    const dir = scratch('leasehold-shard-history-');
    const pg = backend === 'postgres' ? await startPostgres() : undefined;
    try {
      const backendArgs = pg
        ? ['--backend', 'postgres', '--postgres-url', pg.url(), '--lease', 'workers']
        : ['--db', join(dir.path, 'leases.db'), '--lease', 'workers'];
      const r = await runShardHistory({ backend, backendArgs, dir: dir.path, seconds, seed, log: say });
      const faults = Object.entries(r.faults)
        .map(([k, n]) => `${k} ${n}`)
        .join(', ');
      console.log(`shard group on ${backend}, ${seconds} s, faults ${faults}; checker: ${r.verdict.output.split('\n').join('; ')}`);
      if (r.verdict.code !== 0) {
        failed = true;
        say(`kept ${dir.path}: the recorded history and the checker's visualization are there`);
      }
    } finally {
      await pg?.stop();
      if (!failed) dir.cleanup();
    }
  }
  process.exit(failed ? 1 : 0);
}

if (which === 'sqlite' || which === 'both' || which === 'all') {
  const dir = tempDir('leasehold-chaos-');
  try {
    say(`sqlite: seed ${seed}, ${seconds} s`);
    reports.push(
      await runChaos({
        backend: 'sqlite',
        backendArgs: ['--db', join(dir.path, 'leases.db'), '--lease', 'chaos'],
        dir: dir.path,
        seed,
        seconds,
        history,
        log: say,
      }),
    );
  } finally {
    dir.cleanup();
  }
}
if (which === 'postgres' || which === 'all') {
  const dir = tempDir('leasehold-chaos-');
  const { startPostgres } = await import('../support/postgres.js');
  const { postgresNeighbour } = await import('./postgres-neighbour.js');
  const pg = await startPostgres();
  try {
    say(`postgres: seed ${seed}, ${seconds} s`);
    const backendArgs = ['--backend', 'postgres', '--postgres-url', pg.url(), '--lease', 'chaos'];
    reports.push(
      await runChaos({
        backend: 'postgres',
        backendArgs,
        dir: dir.path,
        seed,
        seconds,
        database: { stop: pg.stopServer, start: pg.startServer },
        postgresNeighbour: postgresNeighbour((role) => pg.url(role)),
        history,
        log: say,
      }),
    );
  } finally {
    await pg.stop();
    dir.cleanup();
  }
}
if (which === 'kubernetes' || which === 'both' || which === 'all') {
  const dir = tempDir('leasehold-chaos-');
  const cp = await startControlPlane();
  try {
    say(`kubernetes: seed ${seed}, ${seconds} s`);
    const backendArgs = ['--backend', 'kubernetes', '--kubeconfig', cp.adminKubeconfig, '--namespace', 'default', '--lease', 'chaos'];
    reports.push(
      await runChaos({
        backend: 'kubernetes',
        backendArgs,
        dir: dir.path,
        seed,
        seconds,
        apiServer: { stop: cp.stopApiServer, start: cp.startApiServer },
        etcd: { stop: cp.stopEtcd, start: cp.startEtcd },
        neighbour: leaseMetadataChurn({ binDir: cp.binDir, kubeconfig: cp.adminKubeconfig, namespace: 'default', lease: 'chaos' }),
        history,
        log: say,
      }),
    );
  } finally {
    await cp.stop();
    dir.cleanup();
  }
}
for (const r of reports) console.log(formatReport(r));
process.exit(reports.some((r) => r.violations.length > 0) ? 1 : 0);
