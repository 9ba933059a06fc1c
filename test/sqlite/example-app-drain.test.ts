/**
 * The chart's example app (deploy/helm/leasehold/files/example-app.sh, which the example
 * Deployment runs with `sh -c`) is a well-behaved drainer: run so by busybox beside real `leasehold sidecar
 * --drain-timeout` processes on one SQLite file, it follows the `/leader` stream, and when its
 * sidecar is stopped it says its leader work stopped, so the sidecar releases on the app's word
 * (not at the drain timeout) and the other app starts only after this one stopped.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { REPO, startCli, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';

const SCRIPT = join(REPO, 'deploy/helm/leasehold/files/example-app.sh');
const T = ['--lease-duration', '4s', '--renew-deadline', '3s', '--retry-period', '500ms'];
/** The longest drain these timings allow (renew-deadline/2 − retry-period): a silent app would hold the release this long. */
const DRAIN = '1000ms';

/** One line of an app's stdout and when this process read it. */
interface Line {
  text: string;
  at: number;
}

/** The example app in its own process group, so that its httpd and wget children go with it. */
interface App {
  child: ChildProcess;
  lines: Line[];
  /** Its leader work started or stopped for a token. */
  find: (what: 'started' | 'stopped') => (Line & { token: number }) | undefined;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

describe("the chart's example app drains with its sidecar", () => {
  const procs: Proc[] = [];
  const apps: App[] = [];
  const dir = scratchDir(() => procs);
  const db = join(dir.path, 'leases.db');
  after(() => {
    for (const a of apps) {
      try {
        process.kill(-a.child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  });

  function startApp(sidecarUrl: string, statusDir: string, httpPort: number): App {
    const child = spawn('busybox', ['sh', '-c', readFileSync(SCRIPT, 'utf8')], {
      env: { PATH: process.env.PATH, SIDECAR_URL: sidecarUrl, STATUS_DIR: statusDir, HTTP_PORT: String(httpPort) },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const lines: Line[] = [];
    let rest = '';
    child.stdout.on('data', (d: Buffer) => {
      const at = performance.now();
      const parts = (rest + d.toString()).split('\n');
      rest = parts.pop()!;
      for (const text of parts) lines.push({ text, at });
    });
    child.stderr.on('data', (d: Buffer) => lines.push({ text: `stderr: ${d.toString().trim()}`, at: performance.now() }));
    const find = (what: 'started' | 'stopped') => {
      for (const l of lines) {
        const m = new RegExp(`^app: leader work ${what} \\(token (\\d+)\\)$`).exec(l.text);
        if (m) return { ...l, token: Number(m[1]) };
      }
      return undefined;
    };
    const app = { child, lines, find };
    apps.push(app);
    return app;
  }

  async function pair(id: string) {
    const statusDir = join(dir.path, id);
    mkdirSync(statusDir);
    const sidecar = startCli([
      'sidecar',
      '--db',
      db,
      '--lease',
      'example',
      '--identity',
      id,
      '--status-dir',
      statusDir,
      '--listen',
      '127.0.0.1:0',
      '--drain-timeout',
      DRAIN,
      ...T,
    ]);
    procs.push(sidecar);
    const address = await waitFor(`${id}'s listen address`, () => /"listen":"([\d.:]+)"/.exec(sidecar.stderr())?.[1], 20_000);
    const httpPort = await freePort();
    return { id, sidecar, address, httpPort, app: startApp(`http://${address}`, statusDir, httpPort) };
  }

  it('the old app says it stopped, the sidecar releases on that, the new app starts after', { timeout: 90_000 }, async () => {
    const pairs = [await pair('a'), await pair('b')];
    const old = await waitFor('an app doing leader work', () => pairs.find((p) => p.app.find('started')), 30_000);
    const next = pairs.find((p) => p !== old)!;
    const term = old.app.find('started')!.token;

    // The app still serves the status directory over HTTP (the chart's readinessProbe port).
    const served = (await (await fetch(`http://127.0.0.1:${old.httpPort}/status.json`)).json()) as { isLeader: boolean; fencingToken: number };
    assert.deepEqual([served.isLeader, served.fencingToken], [true, term]);
    // The standby follows the leader before the stop, as in a rollout.
    await waitFor(
      'the standby to see the leader',
      async () => ((await (await fetch(`http://${next.address}/leader`)).json()) as { holder: string }).holder === old.id,
      20_000,
    );
    assert.equal(next.app.find('started'), undefined, 'the standby app does no leader work');

    const signalledAt = performance.now();
    old.sidecar.kill('SIGTERM');
    const started = await waitFor('the new app to start its leader work', () => next.app.find('started'), 20_000);
    assert.equal((await old.sidecar.exited).code, 0, old.sidecar.stderr());
    const stopped = old.app.find('stopped');
    const story = () => `old app:\n${old.app.lines.map((l) => l.text).join('\n')}\nold sidecar:\n${old.sidecar.stderr()}`;
    assert.ok(stopped, `the old app said it stopped\n${story()}`);
    assert.equal(stopped.token, term);
    assert.ok(started.at >= stopped.at, `the new app started ${(stopped.at - started.at).toFixed(1)} ms before the old one stopped`);
    assert.ok(started.token > term);
    // The release came on the app's word, not at the drain timeout.
    const log = old.sidecar.stderr();
    assert.match(log, new RegExp(`"msg":"the app stopped its leader work: releasing".*"token":${term}`), story());
    assert.doesNotMatch(log, /did not say its leader work stopped/, story());
    assert.doesNotMatch(old.app.lines.map((l) => l.text).join('\n'), /could not tell the sidecar/);
    // With the drain key from the status directory: the sidecar takes no word without it.
    assert.ok(
      old.app.lines.some((l) => l.text === `app: told the sidecar that token ${term} stopped`),
      story(),
    );
    assert.ok(started.at - signalledAt < 3_000, `a release, not an expiry of the 4 s lease (${(started.at - signalledAt).toFixed(0)} ms)`);
  });
});
