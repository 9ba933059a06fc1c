import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { realClock } from '../clock.js';
import { execProbe } from './exec-probe.js';
import { httpProbe } from './http-probe.js';
import { tcpProbe } from './tcp-probe.js';
import { runProbe } from './probe-timeout.js';
import { classifyError, type Probe } from './probe-result.js';

const run = (probe: Probe, timeoutMs = 2_000) => runProbe(probe, { timeoutMs, clock: realClock });

/** A real HTTP server on loopback; each path answers as its name says. */
async function appServer(): Promise<{ url: string; server: Server; endless: () => { sent: number; closed: boolean } }> {
  let sent = 0;
  let closed = false;
  const server = createHttpServer((req, res) => {
    if (req.url === '/ok') return res.end('ok');
    if (req.url === '/redirect') return res.writeHead(302, { location: '/elsewhere' }).end();
    if (req.url === '/fail') return res.writeHead(503).end('database\ndown');
    if (req.url === '/hang') return; // never answers
    if (req.url === '/endless') {
      res.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const pump = () => {
        while (!res.destroyed && res.write(chunk)) sent += chunk.length;
        if (!res.destroyed) res.once('drain', pump);
      };
      res.on('close', () => {
        closed = true;
        res.removeAllListeners('drain');
      });
      return pump();
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, endless: () => ({ sent, closed }) };
}

async function freePort(): Promise<number> {
  const s = createTcpServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

describe('probes against a real local app', async () => {
  const app = await appServer();
  after(() => {
    app.server.closeAllConnections();
    app.server.close();
  });

  it('http: 200 and 3xx are healthy (a redirect is not followed), each probe on a new connection', async () => {
    let connections = 0;
    const count = () => connections++;
    app.server.on('connection', count);
    assert.deepEqual(await run(httpProbe(`${app.url}/ok`)), { outcome: 'healthy' });
    assert.deepEqual(await run(httpProbe(`${app.url}/redirect`)), { outcome: 'healthy' });
    app.server.off('connection', count);
    assert.equal(connections, 2);
  });

  it('http: another status is unhealthy, with the start of the body on one line', async () => {
    assert.deepEqual(await run(httpProbe(`${app.url}/fail`)), { outcome: 'unhealthy', reason: `GET ${app.url}/fail: status 503: database down` });
    assert.match((await run(httpProbe(`${app.url}/nope`))).outcome, /^unhealthy$/);
  });

  it('http: connection refused is unhealthy', async () => {
    const url = `http://127.0.0.1:${await freePort()}/`;
    assert.deepEqual(await run(httpProbe(url)), { outcome: 'unhealthy', reason: `GET ${url}: connection refused` });
  });

  it('http: no answer within the timeout is unhealthy', async () => {
    const r = await run(httpProbe(`${app.url}/hang`), 300);
    assert.deepEqual(r, { outcome: 'unhealthy', reason: 'no answer within 300 ms' });
  });

  it('http: an endless body is read only up to the bound, then the connection is closed', async () => {
    assert.deepEqual(await run(httpProbe(`${app.url}/endless`)), { outcome: 'healthy' });
    for (let i = 0; i < 200 && !app.endless().closed; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    // What the server could send is the bound plus the socket buffers, not the endless body.
    assert.equal(app.endless().closed, true, 'the probe hung up');
    assert.ok(app.endless().sent < 16 * 1024 * 1024, `sent ${app.endless().sent} bytes`);
  });

  it('tcp: a listener is healthy; a closed port is unhealthy', async () => {
    const port = Number(new URL(app.url).port);
    assert.deepEqual(await run(tcpProbe('127.0.0.1', port)), { outcome: 'healthy' });
    const closed = await freePort();
    assert.deepEqual(await run(tcpProbe('127.0.0.1', closed)), { outcome: 'unhealthy', reason: `connect to 127.0.0.1:${closed}: connection refused` });
  });

  it('exec: exit 0 is healthy, another exit unhealthy with the start of its output', async () => {
    assert.deepEqual(await run(execProbe(['sh', '-c', 'echo fine; exit 0'])), { outcome: 'healthy' });
    const r = await run(execProbe(['sh', '-c', 'echo "disk\nfull" >&2; exit 3']));
    assert.deepEqual(r, { outcome: 'unhealthy', reason: `exec sh -c echo "disk\nfull" >&2; exit 3: exit code 3: disk full` });
  });

  it('exec: a missing command is unhealthy (it will never pass)', async () => {
    const r = await run(execProbe(['/nonexistent/leasehold-check']));
    assert.equal(r.outcome, 'unhealthy');
  });

  it('exec: at the timeout the command and what it started are killed by PID', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-exec-probe-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const pids = join(dir, 'pids');
    // The shell starts a grandchild and waits: both must be gone after the timeout.
    const script = `sleep 60 & echo $$ $! > ${pids}; wait`;
    const r = await run(execProbe(['sh', '-c', script]), 500);
    assert.deepEqual(r, { outcome: 'unhealthy', reason: 'no answer within 500 ms' });
    assert.ok(existsSync(pids));
    const started = readFileSync(pids, 'utf8').trim().split(' ').map(Number);
    t.after(() => started.forEach((pid) => alive(pid) && process.kill(pid, 'SIGKILL')));
    for (let i = 0; i < 200 && started.some(alive); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.deepEqual(started.filter(alive), [], 'nothing the probe started is still running');
  });

  it('exec: what the command leaves running in its group when it exits is killed', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-exec-probe-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const pids = join(dir, 'pids');
    // A check that starts a background job and exits at once: run every period, each would
    // leave one more process behind.
    const script = `sleep 60 & echo $! > ${pids}; exit 0`;
    assert.deepEqual(await run(execProbe(['sh', '-c', script])), { outcome: 'healthy' });
    const left = Number(readFileSync(pids, 'utf8').trim());
    t.after(() => alive(left) && process.kill(left, 'SIGKILL'));
    for (let i = 0; i < 200 && alive(left); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(alive(left), false, 'the background job of the check is not still running');
  });

  /** Runs `script` (given the path of a file to write PIDs to) as a probe; the PIDs it wrote, each cleaned up after the test. */
  async function escaped(t: { after: (fn: () => void) => void }, script: (pids: string) => string, timeoutMs = 2_000) {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-exec-probe-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const pids = join(dir, 'pids');
    const result = await run(execProbe(['sh', '-c', script(pids)]), timeoutMs);
    const started = readFileSync(pids, 'utf8').trim().split(/\s+/).map(Number);
    t.after(() => started.forEach((pid) => running(pid) && process.kill(pid, 'SIGKILL')));
    for (let i = 0; i < 200 && started.some(running); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    return { result, left: started.filter(running) };
  }

  // Each writes its PID once it runs, then waits: the probe's command does not wait for it.
  const waitForPids = (pids: string, n: number) => `while [ "$(wc -w < ${pids} 2>/dev/null || echo 0)" -lt ${n} ]; do sleep 0.01; done`;

  it('exec: what the command started in a session of its own (setsid) is killed when it exits', async (t) => {
    const { result, left } = await escaped(t, (pids) => `setsid sh -c 'echo $$ >> ${pids}; exec sleep 60' & ${waitForPids(pids, 1)}; exit 0`);
    assert.deepEqual(result, { outcome: 'healthy' });
    assert.deepEqual(left, [], 'the process that left the session is not still running');
  });

  it('exec: a daemon (a double fork, its parent gone, in a new session) is killed when the command exits', async (t) => {
    const { result, left } = await escaped(
      t,
      (pids) => `setsid sh -c '(sleep 60 & echo $! >> ${pids}); echo $$ >> ${pids}; exit 0' & ${waitForPids(pids, 2)}; exit 1`,
    );
    assert.equal(result.outcome, 'unhealthy');
    assert.deepEqual(left, []);
  });

  it('exec: at the timeout, what left the session is killed too', async (t) => {
    const { result, left } = await escaped(t, (pids) => `setsid sh -c 'echo $$ >> ${pids}; exec sleep 60' & ${waitForPids(pids, 1)}; sleep 60`, 500);
    assert.deepEqual(result, { outcome: 'unhealthy', reason: 'no answer within 500 ms' });
    assert.deepEqual(left, []);
  });

  it('exec: a child started with an empty environment is found through its parent, while that parent lives', async (t) => {
    const { left } = await escaped(t, (pids) => `setsid sh -c 'env -i sleep 60 & echo $! $$ >> ${pids}; wait' & ${waitForPids(pids, 2)}; exit 0`);
    assert.deepEqual(left, []);
  });

  it("the sidecar's own shortages are notSent, not the app's failure", () => {
    for (const code of ['EMFILE', 'ENFILE', 'EAGAIN', 'ENOMEM', 'ENOBUFS', 'EADDRNOTAVAIL']) {
      const err = Object.assign(new Error(`spawn ${code}`), { code });
      assert.equal(classifyError(err, 'exec x').outcome, 'notSent', code);
    }
    assert.equal(classifyError(Object.assign(new Error('x'), { code: 'ECONNRESET' }), 'GET /').outcome, 'unhealthy');
  });
});

/** Alive and not a zombie: a killed orphan may wait to be reaped by a PID 1 that never does. */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
