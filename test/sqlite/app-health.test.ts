/**
 * The app's health in real `leasehold sidecar` and `leasehold run` processes on one SQLite file
 * (docs/health.md, "In the sidecar and run"): each candidate probes its own app, a tiny HTTP
 * server run as a real process (test/support/health-app.mjs).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO, isAlive, runCli, startCli, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { leadersByStatus, startSidecar, type Candidate } from '../support/sidecars.js';
import { first200, logLines, readStatus, startHealthApp, type HealthApp, type StatusFile } from '../support/health-apps.js';
import { current } from '../support/run-scenario.js';
import { openStream } from '../support/sse-client.js';

const TIMING = { leaseDuration: '3s', renewDeadline: '2s', retryPeriod: '500ms' };
const T = ['--lease-duration', TIMING.leaseDuration, '--renew-deadline', TIMING.renewDeadline, '--retry-period', TIMING.retryPeriod];
const PERIOD_MS = 500;
const FAILURES = 2;
/** How long the probes take to declare a dead app unhealthy: period × failure threshold. */
const FAILURE_MS = PERIOD_MS * FAILURES;
const HEALTH = ['--health-period', `${PERIOD_MS}ms`, '--health-timeout', '400ms', '--health-failure-threshold', String(FAILURES), '--health-hold-down', '1s'];
const escaped = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/**
 * Reads every candidate's status.json every 10 ms until stopped: two at once saying leader, or a
 * new leader with a token not above the last one's, is a violation.
 */
function watchLeaders(cands: Candidate[]) {
  const violations: string[] = [];
  let last: { id: string; token: number } | null = null;
  const timer = setInterval(() => {
    const leaders = leadersByStatus(cands);
    if (leaders.length > 1) violations.push(`two leaders: ${leaders.map((l) => `${l.c.id}@${l.token}`).join(', ')}`);
    const l = leaders[0];
    if (l && (last === null || l.c.id !== last.id || l.token !== last.token)) {
      if (last !== null && l.token <= last.token) violations.push(`token ${l.token} of ${l.c.id} after ${last.token} of ${last.id}`);
      last = { id: l.c.id, token: l.token };
    }
  }, 10);
  return {
    violations,
    stop: () => clearInterval(timer),
  };
}

/** The sidecar's HTTP address from its `campaigning` line. */
async function listenAddress(p: Proc): Promise<string> {
  return waitFor('the campaigning line', () => logLines(p, 'campaigning')[0]?.listen as string | undefined, 10_000);
}

async function metric(base: string, line: RegExp): Promise<string | undefined> {
  const body = await (await fetch(`${base}/metrics`)).text();
  return body.split('\n').find((l) => line.test(l));
}

describe('the app health of real sidecars on one SQLite file', () => {
  const procs: Array<Proc | { proc: Proc }> = [];
  const dir = scratchDir(() => procs);
  const db = join(dir.path, 'leases.db');
  const app = async (mode: string, port = 0) => {
    const a = await startHealthApp(mode, port);
    procs.push(a.proc);
    return a;
  };

  it(
    'the leader whose app is killed stands aside and releases; a healthy standby leads before an expiry could have let it; the app back, it rejoins as a standby',
    { timeout: 90_000 },
    async () => {
      const ids = ['a', 'b', 'c'];
      const apps: HealthApp[] = [];
      for (const _ of ids) apps.push(await app('ok'));
      const cands = ids.map((id, i) =>
        startSidecar(dir.path, id, ['--db', db, '--lease', 'health-failover'], TIMING, ['--health-http', apps[i]!.url, ...HEALTH]),
      );
      procs.push(...cands);
      const watch = watchLeaders(cands);
      try {
        const first = await waitFor('a leader', () => leadersByStatus(cands)[0], 30_000, 10);
        await waitFor(
          'every candidate campaigning, the others seeing the leader',
          () => cands.every((c) => readStatus(c.statusDir)?.standingAside === null && readStatus(c.statusDir)?.holder === first.c.id),
          10_000,
        );
        const i = cands.indexOf(first.c);
        const killedAt = Date.now();
        apps[i]!.proc.kill('SIGKILL');
        const next = await waitFor('another leader', () => leadersByStatus(cands).find((l) => l.c !== first.c), FAILURE_MS + 10_000, 10);
        const tookMs = Date.now() - killedAt;
        console.log(`app killed: another sidecar led after ${tookMs} ms (failure time ${FAILURE_MS} ms)`);
        // A release, not an expiry: the old leader said so, and the standby led before the lease
        // could have expired after the failure was seen (the speed itself is the bench's: a timed
        // bound tighter than this failed under CI's load, 2,118 ms against 2,000).
        await waitFor("the old leader's release line", () => /"msg":"released lease"/.test(first.c.proc.stderr()), 10_000);
        const leaseMs = Number.parseInt(TIMING.leaseDuration, 10) * 1000;
        assert.ok(tookMs < FAILURE_MS + leaseMs, `another leader within ${FAILURE_MS} + ${leaseMs} ms (before an expiry), took ${tookMs} ms`);
        assert.ok(next.token > first.token, 'a higher token');
        const old = readStatus(first.c.statusDir)!;
        assert.equal(old.isLeader, false);
        assert.match(old.standingAside!.reason, new RegExp(`^app unhealthy: GET ${escaped(apps[i]!.url)}: connection refused$`));
        assert.ok(Date.parse(old.standingAside!.since) >= killedAt - 10 && Date.parse(old.standingAside!.since) <= Date.now());
        const stepDowns = await waitFor(
          'the step-down line',
          () => logLines(first.c.proc, 'stopped leading').length > 0 && logLines(first.c.proc, 'stopped leading'),
          5_000,
        );
        assert.equal(stepDowns.length, 1);
        assert.equal(stepDowns[0]!.reason, old.standingAside!.reason, 'the step-down gives the same reason');
        // The files are written before the line is logged: waited for, not assumed.
        await waitFor('the warn line', () => logLines(first.c.proc, 'standing aside').length > 0, 5_000);

        // The app back on its port: the old leader campaigns again, as a standby.
        apps[i] = await app('ok', apps[i]!.port);
        await waitFor(
          'the old leader to campaign again as a standby',
          () => {
            const s = readStatus(first.c.statusDir);
            return s?.standingAside === null && !s.isLeader && s.holder === next.c.id;
          },
          15_000,
        );
        assert.deepEqual(
          leadersByStatus(cands).map((l) => l.c.id),
          [next.c.id],
          'the new leader keeps the lease',
        );
        await waitFor('the info line again', () => logLines(first.c.proc, 'the app is eligible: campaigning').length === 2, 5_000);
        assert.equal(logLines(first.c.proc, 'standing aside').length, 1, 'one warn line');
        assert.equal(logLines(first.c.proc, 'the app is eligible: campaigning').length, 2, 'eligible at the start, and again');
      } finally {
        watch.stop();
      }
      assert.deepEqual(watch.violations, []);
    },
  );

  it('an app flapping every second for 20 s costs at most one step-down (the default hold-down)', { timeout: 90_000 }, async () => {
    const flapping = await app('flap:1000');
    const c = startSidecar(dir.path, 'flappy', ['--db', db, '--lease', 'health-flap'], TIMING, [
      '--health-http',
      flapping.url,
      '--health-period',
      '250ms',
      '--health-timeout',
      '200ms',
      '--health-failure-threshold',
      '1',
    ]);
    procs.push(c);
    // It leads once its probes have found the app healthy for a lease duration (an absent lease
    // is created only after that wait): a dozen probes in a row. On a loaded machine one of them
    // may go unanswered within the 200 ms, a loss of health at a failure threshold of 1, and the
    // default hold-down (30 s) then keeps it from leading before the flapping starts. Either way
    // the flapping meets the hold-down, and a broken one lets it lead (and step down) again.
    // Which came first is read from the log, which keeps both: status.json's isLeader may be gone
    // again before a poll saw it.
    const began = await waitFor(
      'it leads, or stands aside first',
      () => (logLines(c.proc, 'became leader').length > 0 ? 'led' : logLines(c.proc, 'standing aside')[0]),
      30_000,
      10,
    );
    const ledBefore = logLines(c.proc, 'became leader').length;
    if (began !== 'led') {
      // The app answers 200 until it flaps: the one failure it can have is a probe not answered in time.
      assert.equal(began.reason, 'app unhealthy: no answer within 200 ms', 'standing aside before it led: only a probe late on a loaded machine');
      console.log(`a probe went unanswered within 200 ms before it led (load): held down from ${String(began.since)}, it never led`);
    }
    flapping.proc.kill('SIGUSR2');
    // Twenty flips of the app, each seen by the probes (four probes a second).
    const answers = () => [...flapping.proc.stdout().matchAll(/^answered \d+$/gm)].length;
    const start = answers();
    await waitFor('80 more probes of the flapping app (20 s)', () => answers() >= start + 80, 40_000, 100);
    const stepDowns = logLines(c.proc, 'stopped leading');
    const terms = logLines(c.proc, 'became leader');
    assert.ok(stepDowns.length <= 1, `at most one step-down, got ${stepDowns.length}`);
    assert.equal(terms.length, ledBefore, 'it never led again: no term began while the app flapped');
    const s = readStatus(c.statusDir)!;
    assert.equal(s.isLeader, false);
    // Unhealthy for the last failure, a 503 or (on a loaded machine) a probe not answered in time.
    assert.match(s.standingAside!.reason, /^app (unhealthy: (GET .*: status 503|no answer within 200 ms)|healthy again, held down)/);
  });

  it('a candidate whose app is not healthy yet never leads; it leads once the app is', { timeout: 60_000 }, async () => {
    const late = await app('until-signal');
    const statusDir = join(dir.path, 'status-late');
    const p = startCli([
      'sidecar',
      '--db',
      db,
      '--lease',
      'health-late',
      '--identity',
      'late',
      '--status-dir',
      statusDir,
      '--listen',
      '127.0.0.1:0',
      ...T,
      ...HEALTH,
      '--health-http',
      late.url,
    ]);
    procs.push(p);
    const address = await listenAddress(p);
    const base = `http://${address}`;
    const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1))];
    assert.equal(logLines(p, 'campaigning')[0]!.health, `http GET ${late.url}`, 'the campaigning line names the probe');
    const aside = await waitFor('standing aside in status.json', () => readStatus(statusDir)?.standingAside ?? undefined, 10_000, 10);
    // Unknown until the first verdict, and still unknown (naming the last failure) until the
    // failure threshold is reached: whichever the file shows first is right.
    assert.match(
      aside.reason,
      new RegExp(
        `^app (health unknown: (no verdict yet|GET ${escaped(late.url)}: status 503: not ready)|unhealthy: GET ${escaped(late.url)}: status 503: not ready)$`,
      ),
    );
    const leader = (await (await fetch(`${base}/leader`)).json()) as { standingAside: unknown; isLeader: boolean };
    assert.equal(leader.isLeader, false);
    assert.ok(leader.standingAside !== null, '/leader says it stands aside');
    assert.equal((await fetch(`${base}/healthz`)).status, 200, 'standing aside, it is alive: liveness must not restart it');
    const stream = await openStream(host, port);
    const events = () => stream.events.map((e) => JSON.parse(e) as { isLeader: boolean; standingAside: { reason: string } | null });
    await waitFor('the stream says it stands aside', () => events()[0]?.standingAside?.reason.startsWith('app '), 10_000);
    assert.equal(await metric(base, /^leasehold_app_eligible\{name="health-late"\}/), 'leasehold_app_eligible{name="health-late"} 0');
    // `leasehold status --status-dir` shows the candidate beside the lease (none yet: exit 1).
    const st = await runCli(['status', '--db', db, '--lease', 'health-late', '--status-dir', statusDir]);
    assert.equal(st.code, 1, st.stderr);
    assert.match(st.stdout, /^sidecar {2}late: standing aside since \S+: app (health unknown|unhealthy): /m);
    const js = await runCli(['status', '--json', '--db', db, '--lease', 'health-late', '--status-dir', statusDir]);
    const candidate = (JSON.parse(js.stdout) as { candidate: { identity: string; standingAside: { reason: string } } }).candidate;
    assert.equal(candidate.identity, 'late');
    assert.match(candidate.standingAside.reason, /^app (health unknown|unhealthy): /);
    assert.equal(first200(late), undefined, 'the app never answered 200 before it was told to');
    late.proc.kill('SIGUSR2');
    let leaderAt: number | undefined;
    await waitFor(
      'it leads',
      () => {
        if (readStatus(statusDir)?.isLeader) leaderAt ??= Date.now();
        return leaderAt;
      },
      30_000,
      10,
    );
    const healthyAt = first200(late);
    assert.ok(healthyAt !== undefined && leaderAt! >= healthyAt, `led at ${leaderAt}, the app first healthy at ${healthyAt}`);
    assert.equal(readStatus(statusDir)!.standingAside, null);
    await waitFor('the stream says it leads, campaigning', () => events().some((e) => e.isLeader && e.standingAside === null), 10_000);
    stream.close();
    assert.match((await runCli(['status', '--db', db, '--lease', 'health-late', '--status-dir', statusDir])).stdout, /^sidecar {2}late: leader$/m);
    assert.equal(await metric(base, /^leasehold_app_eligible\{/), 'leasehold_app_eligible{name="health-late"} 1');
    assert.equal(await metric(base, /^leasehold_health_step_downs_total\{/), 'leasehold_health_step_downs_total{name="health-late"} 0');
    // Its app stops: one health step-down, counted.
    late.proc.kill('SIGKILL');
    await waitFor('the step-down', () => readStatus(statusDir)?.isLeader === false, 10_000, 10);
    assert.equal(await metric(base, /^leasehold_health_step_downs_total\{/), 'leasehold_health_step_downs_total{name="health-late"} 1');
    assert.equal(await metric(base, /^leasehold_app_eligible\{/), 'leasehold_app_eligible{name="health-late"} 0');
    // Stopped, its last file says so: `status` must not call it a standby (nor standing aside).
    p.kill('SIGTERM');
    assert.equal((await p.exited).code, 0, p.stderr());
    const stoppedAt = readStatus(statusDir)?.stoppedAt;
    assert.ok(stoppedAt && Date.parse(stoppedAt) <= Date.now(), `stoppedAt ${stoppedAt}`);
    const after = await runCli(['status', '--db', db, '--lease', 'health-late', '--status-dir', statusDir]);
    assert.match(after.stdout, new RegExp(`^sidecar {2}late: stopped at ${escaped(stoppedAt)}, not campaigning$`, 'm'));
  });

  it('an app unreachable at the start is no error: the candidate stands aside until it answers', { timeout: 60_000 }, async () => {
    const gone = await app('ok');
    gone.proc.kill('SIGKILL');
    await gone.proc.exited;
    const c = startSidecar(dir.path, 'early', ['--db', db, '--lease', 'health-early'], TIMING, ['--health-tcp', String(gone.port), ...HEALTH]);
    procs.push(c);
    const aside = await waitFor(
      'standing aside',
      () => {
        const a = readStatus(c.statusDir)?.standingAside;
        return a?.reason.startsWith('app unhealthy') ? a : undefined;
      },
      10_000,
    );
    assert.equal(aside.reason, `app unhealthy: connect to 127.0.0.1:${gone.port}: connection refused`);
    assert.equal(c.proc.child.exitCode, null, 'still running');
    await app('ok', gone.port);
    await waitFor('it leads once the app answers', () => leadersByStatus([c])[0], 20_000, 10);
  });

  it('--health-exec runs a command line with /bin/sh -c: healthy on exit 0', { timeout: 60_000 }, async () => {
    const ready = join(dir.path, 'app ready');
    const check = `test -f '${ready}' && echo "ready"`;
    const c = startSidecar(dir.path, 'exec', ['--db', db, '--lease', 'health-exec'], TIMING, ['--health-exec', check, ...HEALTH]);
    procs.push(c);
    const aside = await waitFor(
      'standing aside',
      () => {
        const a = readStatus(c.statusDir)?.standingAside;
        return a?.reason.startsWith('app unhealthy') ? a : undefined;
      },
      10_000,
    );
    assert.equal(aside.reason, `app unhealthy: exec /bin/sh -c ${check}: exit code 1`);
    writeFileSync(ready, '');
    await waitFor('it leads once the command passes', () => leadersByStatus([c])[0], 20_000, 10);
  });

  it('a new reason for standing aside reaches status.json and the /leader stream at once', { timeout: 60_000 }, async () => {
    // The app stays unhealthy throughout; only what its check says changes. Nothing else happens
    // to this lone standby that would make it write its files.
    const said = join(dir.path, 'check says');
    writeFileSync(said, 'starting');
    const statusDir = join(dir.path, 'status-reason');
    const p = startCli([
      'sidecar',
      '--db',
      db,
      '--lease',
      'health-reason',
      '--identity',
      'reason',
      '--status-dir',
      statusDir,
      '--listen',
      '127.0.0.1:0',
      ...T,
      '--health-exec',
      `cat '${said}'; exit 1`,
      ...HEALTH,
    ]);
    procs.push(p);
    const [host, port] = (await listenAddress(p)).split(':') as [string, string];
    const reasonIn = (word: string) => () => readStatus(statusDir)?.standingAside?.reason.endsWith(`exit code 1: ${word}`);
    await waitFor('the first reason in status.json', reasonIn('starting'), 20_000, 10);
    const stream = await openStream(host, Number(port));
    try {
      writeFileSync(said, 'migrating');
      // A few probe periods; before the fix the files kept "starting" until another event.
      await waitFor('the new reason in status.json', reasonIn('migrating'), 4 * PERIOD_MS + 2_000, 10);
      const last = await waitFor(
        'the new reason on the stream',
        () => {
          const e = stream.events.at(-1);
          return e && (JSON.parse(e) as StatusFile).standingAside?.reason.endsWith('exit code 1: migrating') ? e : undefined;
        },
        2_000,
        10,
      );
      assert.equal((JSON.parse(last) as StatusFile).standingAside!.reason, readStatus(statusDir)!.standingAside!.reason);
    } finally {
      stream.close();
    }
  });

  it('--health-exec: what each check starts with setsid is gone after the check; nothing outlives the sidecar', { timeout: 60_000 }, async () => {
    // Every check leaves a process in a session of its own, as the attack round's did (50 in 10 s
    // at a 200 ms period); the variable below, set in the sidecar's environment, finds them.
    const tag = `escape-${process.pid}-${Date.now()}`;
    const runs = join(dir.path, 'escape-runs');
    const p = startCli(
      [
        'sidecar',
        '--db',
        db,
        '--lease',
        'health-escape',
        '--identity',
        'escape',
        '--listen',
        'off',
        ...T,
        '--health-exec',
        // The check waits until its child has left for a session of its own, then exits.
        `f='${dir.path}/escaped.'$$; setsid sh -c 'echo $$ > "$1"; exec sleep 300' sh "$f" & while [ ! -s "$f" ]; do sleep 0.01; done; echo run >> '${runs}'`,
        '--health-period',
        '200ms',
        '--health-timeout',
        '190ms',
      ],
      { LEASEHOLD_TEST_ESCAPE: tag },
    );
    procs.push(p);
    const left = () => processesWith(`LEASEHOLD_TEST_ESCAPE=${tag}`);
    const killLeft = () => left().forEach((pid) => process.kill(pid, 'SIGKILL'));
    try {
      let most = 0;
      await waitFor(
        '15 checks',
        () => {
          most = Math.max(most, left().length);
          return existsSync(runs) && readFileSync(runs, 'utf8').split('\n').length > 15;
        },
        30_000,
        20,
      );
      // The sidecar itself carries the variable; beside it, only the processes of the check that runs.
      assert.ok(most <= 4, `${most} processes carried the variable at once`);
      p.kill('SIGTERM');
      assert.equal((await p.exited).code, 0);
      await waitFor('every process a check started to be gone', () => left().length === 0, 5_000);
    } finally {
      killLeft();
    }
  });

  it('SIGTERM while the app is held down: the sidecar exits at once, not at the end of the hold-down', { timeout: 60_000 }, async () => {
    const held = await app('ok');
    // A probe's timeout with room for a loaded machine: with one failure enough and a minute's
    // hold-down, one slow answer at the start (200 ms was once too short beside CI's other
    // tiers) held the candidate aside for the whole test. The kill below is refused at once.
    const c = startSidecar(dir.path, 'held', ['--db', db, '--lease', 'health-held'], TIMING, [
      '--health-http',
      held.url,
      '--health-period',
      '1s',
      '--health-timeout',
      '1s',
      '--health-failure-threshold',
      '1',
      '--health-hold-down',
      '1m',
    ]);
    procs.push(c);
    await waitFor('it campaigns', () => readStatus(c.statusDir)?.standingAside === null, 10_000, 10);
    held.proc.kill('SIGKILL');
    await waitFor('unhealthy', () => readStatus(c.statusDir)?.standingAside?.reason.startsWith('app unhealthy'), 10_000, 10);
    await app('ok', held.port);
    await waitFor('held down', () => readStatus(c.statusDir)?.standingAside?.reason.startsWith('app healthy again, held down until'), 10_000, 10);
    const termAt = Date.now();
    c.proc.kill('SIGTERM');
    const exit = await c.proc.exited;
    assert.equal(exit.code, 0);
    assert.ok(Date.now() - termAt < 10_000, `exited ${Date.now() - termAt} ms after SIGTERM`);
  });

  it('a sidecar without a health source has no health metrics and standingAside null', { timeout: 30_000 }, async () => {
    const statusDir = join(dir.path, 'status-plain');
    const p = startCli(['sidecar', '--db', db, '--lease', 'health-none', '--identity', 'plain', '--status-dir', statusDir, '--listen', '127.0.0.1:0', ...T]);
    procs.push(p);
    const base = `http://${await listenAddress(p)}`;
    await waitFor('status.json', () => readStatus(statusDir), 10_000);
    assert.equal(readStatus(statusDir)!.standingAside, null);
    assert.equal(await metric(base, /^leasehold_(app_eligible|health_step_downs_total)\{/), undefined);
  });
});

describe('leasehold run with --health-tcp', () => {
  const procs: Array<Proc | { proc: Proc }> = [];
  const dir = scratchDir(() => procs);
  const db = join(dir.path, 'leases.db');
  const CHILD = join(REPO, 'test/support/exclusive_child.py');

  it("stops its command when its app's port closes; the other candidate's command starts", { timeout: 90_000 }, async () => {
    const work = join(dir.path, 'work');
    mkdirSync(work);
    const runs: Record<string, { proc: Proc; app: HealthApp; statusDir: string }> = {};
    for (const id of ['r1', 'r2']) {
      const app = await startHealthApp('ok');
      procs.push(app.proc);
      const statusDir = join(dir.path, `status-${id}`);
      const proc = startCli([
        'run',
        '--db',
        db,
        '--lease',
        'health-run',
        '--identity',
        id,
        '--status-dir',
        statusDir,
        ...T,
        ...HEALTH,
        '--health-tcp',
        `127.0.0.1:${app.port}`,
        '--',
        'python3',
        CHILD,
        work,
      ]);
      procs.push(proc);
      runs[id] = { proc, app, statusDir };
    }
    const first = await waitFor('a command running', () => current(work), 30_000, 10);
    const other = first.identity === 'r1' ? 'r2' : 'r1';
    await waitFor('the other campaigning', () => readStatus(runs[other]!.statusDir)?.standingAside === null, 10_000);
    const killedAt = Date.now();
    runs[first.identity]!.app.proc.kill('SIGKILL');
    // A release, not an expiry: the other sidecar leads before the lease could have expired after
    // the failure was seen, and the first said it released. The command's start is waited for
    // untimed: a bound on it (failure time + 2 s) measured python's start under load too, and
    // failed at 3,545 ms beside other tests; the handoff's speed is the bench's.
    await waitFor('the other sidecar leading', () => readStatus(runs[other]!.statusDir)?.isLeader === true, FAILURE_MS + 10_000, 10);
    const tookMs = Date.now() - killedAt;
    const leaseMs = Number.parseInt(TIMING.leaseDuration, 10) * 1000;
    assert.ok(tookMs < FAILURE_MS + leaseMs, `the other sidecar led within ${FAILURE_MS} + ${leaseMs} ms (before an expiry), took ${tookMs} ms`);
    await waitFor("the first sidecar's release line", () => /"msg":"released lease"/.test(runs[first.identity]!.proc.stderr()), 10_000);
    const next = await waitFor('the other command', () => (current(work)?.identity === other ? current(work) : undefined), 10_000, 10);
    assert.ok(next.token > first.token);
    assert.equal(isAlive(first.pid), false, 'the first command was stopped');
    assert.equal(existsSync(join(work, 'violations')), false, 'never two commands at once');
    const s = readStatus(runs[first.identity]!.statusDir)!;
    assert.match(s.standingAside!.reason, new RegExp(`^app unhealthy: connect to 127\\.0\\.0\\.1:${runs[first.identity]!.app.port}: connection refused$`));

    // Its app back, then the other's gone: the first candidate's command runs again, for a new term.
    const back = await startHealthApp('ok', runs[first.identity]!.app.port);
    procs.push(back.proc);
    await waitFor('the first candidate campaigning again', () => readStatus(runs[first.identity]!.statusDir)?.standingAside === null, 15_000);
    runs[other]!.app.proc.kill('SIGKILL');
    const again = await waitFor(
      'the first command again',
      () => (current(work)?.identity === first.identity ? current(work) : undefined),
      FAILURE_MS + 10_000,
      10,
    );
    assert.ok(again.token > next.token);
    assert.equal(existsSync(join(work, 'violations')), false, 'never two commands at once');
  });

  it("a step-down for its app's health: the other's command starts only once this one's has stopped (it takes 1.5 s)", { timeout: 90_000 }, async () => {
    // The issue's reproduction: before the end-of-term gate, run released at the step-down and
    // the other's command started while this one still finished (3 s of two commands).
    const work = join(dir.path, 'work-slow');
    mkdirSync(work);
    const slow = ['--lease-duration', '6s', '--renew-deadline', '4s', '--retry-period', '500ms', '--grace-period', '1900ms'];
    const runs: Record<string, { proc: Proc; app: HealthApp }> = {};
    for (const id of ['s1', 's2']) {
      const app = await startHealthApp('ok');
      procs.push(app.proc);
      const proc = startCli([
        'run',
        '--db',
        db,
        '--lease',
        'health-run-slow',
        '--identity',
        id,
        ...slow,
        ...HEALTH,
        '--health-http',
        app.url,
        '--',
        'python3',
        CHILD,
        work,
        '--stop-after',
        '1500',
      ]);
      procs.push(proc);
      runs[id] = { proc, app };
    }
    const first = await waitFor('a command running', () => current(work), 30_000, 10);
    const other = first.identity === 's1' ? 's2' : 's1';
    const unhealthyAt = Date.now();
    runs[first.identity]!.app.proc.kill('SIGKILL');
    const next = await waitFor('the other command', () => (current(work)?.identity === other ? current(work) : undefined), FAILURE_MS + 15_000, 10);
    assert.ok(next.token > first.token);
    assert.equal(existsSync(join(work, 'violations')), false, 'the other command started while the first still ran');
    const stopped = logLines(runs[first.identity]!.proc, 'command stopped')[0];
    assert.ok(stopped, runs[first.identity]!.proc.stderr());
    assert.ok(Date.now() - unhealthyAt >= 1_500, 'the handoff waited for the command to finish');
    assert.ok(logLines(runs[first.identity]!.proc, 'released lease').length === 1, 'then released: a handoff, not an expiry');
  });
});

/** Running processes (zombies aside) whose environment holds `entry` (NAME=value) as a whole entry. */
function processesWith(entry: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const environ = readFileSync(`/proc/${name}/environ`, 'latin1').split('\0');
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
      if (environ.includes(entry) && stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z') out.push(Number(name));
    } catch {
      // gone, or another user's
    }
  }
  return out;
}
