/**
 * The chart's example app in shard mode (deploy/helm/leasehold/files/example-app.sh with SHARDS
 * set, as the chart's Deployment runs it with `shards.count`), run by busybox beside real
 * `leasehold sidecar --shards --drain-timeout` processes on one SQLite file: it follows the
 * `/shards` stream, prints the shards it owns, and for each shard its sidecar gives up (to a
 * member that joined, or because the sidecar stops) posts `/shards/stopped` with that shard's
 * token and the drain key, so each shard is released on the app's word and its next owner's app
 * starts it only after this one stopped it.
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
const SHARDS = 8;
const T = ['--lease-duration', '4s', '--renew-deadline', '3s', '--retry-period', '500ms'];
/** The longest drain these timings allow (renew-deadline/2 − retry-period): a silent app would hold each release this long. */
const DRAIN = '1000ms';

/** One line of an app's stdout and when this process read it. */
interface Line {
  text: string;
  at: number;
}

interface App {
  child: ChildProcess;
  lines: Line[];
  /** The shards its last "owns" line lists, or null before it printed one. */
  owns: () => number[] | null;
  /** When it said the work of shard `shard` started or stopped (its first such line), with the token. */
  said: (what: 'started' | 'stopped', shard: number) => (Line & { token: number }) | undefined;
  text: () => string;
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

describe("the chart's example app in shard mode drains each shard with its sidecar", () => {
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
    // In its own process group, so that its httpd and wget children go with it.
    const child = spawn('busybox', ['sh', '-c', readFileSync(SCRIPT, 'utf8')], {
      env: { PATH: process.env.PATH, SIDECAR_URL: sidecarUrl, STATUS_DIR: statusDir, HTTP_PORT: String(httpPort), SHARDS: String(SHARDS) },
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
    const owns = () => {
      const last = lines.filter((l) => l.text.startsWith('app: owns ')).at(-1);
      if (!last) return null;
      const m = /^app: owns (\d+) shards:((?: \d+)*)$/.exec(last.text);
      assert.ok(m, `malformed: ${last.text}`);
      const list = m[2]!.trim() === '' ? [] : m[2]!.trim().split(' ').map(Number);
      assert.equal(list.length, Number(m[1]), last.text);
      return list;
    };
    const said = (what: 'started' | 'stopped', shard: number) => {
      for (const l of lines) {
        const m = new RegExp(`^app: shard ${shard} work ${what} \\(token (\\d+)\\)$`).exec(l.text);
        if (m) return { ...l, token: Number(m[1]) };
      }
      return undefined;
    };
    const app = { child, lines, owns, said, text: () => lines.map((l) => l.text).join('\n') };
    apps.push(app);
    return app;
  }

  async function member(id: string) {
    const statusDir = join(dir.path, id);
    mkdirSync(statusDir);
    const sidecar = startCli([
      'sidecar',
      '--shards',
      String(SHARDS),
      '--db',
      db,
      '--lease',
      'example-shards',
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
    return { id, sidecar, app: startApp(`http://${address}`, statusDir, await freePort()) };
  }

  /** Each shard `from`'s app gave up: stopped and told, released on that word, and started by `to`'s app after that with a higher token. */
  function handedOver(from: Awaited<ReturnType<typeof member>>, to: Awaited<ReturnType<typeof member>>, shards: number[]) {
    const story = () => `${from.id}'s app:\n${from.app.text()}\n${from.id}'s sidecar:\n${from.sidecar.stderr()}\n${to.id}'s app:\n${to.app.text()}`;
    for (const s of shards) {
      const stopped = from.app.said('stopped', s);
      assert.ok(stopped, `${from.id}'s app did not stop shard ${s}\n${story()}`);
      assert.ok(
        from.app.lines.some((l) => l.text === `app: told the sidecar that shard ${s} (token ${stopped.token}) stopped`),
        story(),
      );
      assert.match(from.sidecar.stderr(), new RegExp(`"msg":"the app stopped the shard's work: releasing".*"shard":${s},"token":${stopped.token}\\b`), story());
      const started = to.app.said('started', s);
      assert.ok(started, `${to.id}'s app did not start shard ${s}\n${story()}`);
      assert.ok(started.token > stopped.token, `shard ${s}: token ${started.token} after ${stopped.token}`);
      assert.ok(started.at >= stopped.at, `shard ${s}: ${to.id}'s app started it ${(stopped.at - started.at).toFixed(1)} ms before ${from.id}'s stopped it`);
    }
    assert.doesNotMatch(from.app.text(), /could not tell the sidecar/, story());
    assert.doesNotMatch(from.sidecar.stderr(), /did not say/, story());
  }

  it("a join moves the newcomer's share, a stop moves the rest, each on the app's word", { timeout: 120_000 }, async () => {
    const a = await member('a');
    await waitFor(`a's app to own all ${SHARDS} shards`, () => a.app.owns()?.length === SHARDS, 30_000);
    for (let s = 0; s < SHARDS; s++) assert.ok(a.app.said('started', s), `a's app printed no start of shard ${s}`);

    const b = await member('b');
    const half = await waitFor(
      'each app to own half',
      () => {
        const [oa, ob] = [a.app.owns(), b.app.owns()];
        return oa?.length === SHARDS / 2 && ob?.length === SHARDS / 2 && { a: oa, b: ob };
      },
      30_000,
    );
    assert.deepEqual(
      [...half.a, ...half.b].sort((x, y) => x - y),
      [...Array(SHARDS).keys()],
      'every shard owned once',
    );
    handedOver(a, b, half.b);

    a.sidecar.kill('SIGTERM');
    await waitFor(`b's app to own all ${SHARDS} shards`, () => b.app.owns()?.length === SHARDS, 30_000);
    assert.equal((await a.sidecar.exited).code, 0, a.sidecar.stderr());
    handedOver(a, b, half.a);
    assert.deepEqual(a.app.owns(), [], "a's app owns nothing once its sidecar stopped");
  });
});
