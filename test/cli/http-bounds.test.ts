/**
 * The sidecar's HTTP server is bounded below its descriptors: past the bound, the oldest
 * half-sent requests are closed to make room, so /healthz answers while they fill it, a half-sent
 * request is closed at the headers timeout, and streams stop at their bound with room left
 * for probes (a real sidecar process started with a low open-files limit).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { CLI, NODE_FLAGS, start, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { leadersByStatus } from '../support/sidecars.js';
import { openStream, spreadAddress, type SseClient } from '../support/sse-client.js';
import { HEADERS_TIMEOUT_MS, KEEP_ALIVE_TIMEOUT_MS } from '../../src/sidecar/http-server.js';
import { ROOM_FOR_REQUESTS, ROOM_FOR_THE_REST } from '../../src/sidecar/connection-budget.js';

const NOFILE = 256;
const EXCESS = 20;
const T = ['--lease-duration', '6s', '--renew-deadline', '4s', '--retry-period', '1s'];

interface HalfSent {
  socket: Socket;
  received: () => string;
  closed: () => boolean;
  closedAt: () => number | null;
}

/** A connection that sends half a request (no blank line after the headers) and waits. */
function halfSent(port: number): Promise<HalfSent> {
  return new Promise((resolve, reject) => {
    let received = '';
    let closedAt: number | null = null;
    const socket = connect(port, '127.0.0.1', () => {
      socket.write('GET /healthz HTTP/1.1\r\nhost: x\r\n');
      resolve({ socket, received: () => received, closed: () => closedAt !== null, closedAt: () => closedAt });
    });
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (received += d));
    socket.on('close', () => (closedAt = performance.now()));
    socket.on('error', () => {});
    socket.once('error', reject);
  });
}

async function healthz(port: number): Promise<number | null> {
  try {
    return (await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2_000) })).status;
  } catch {
    return null;
  }
}

describe('HTTP connections and streams bounded below the descriptors', () => {
  const procs: Proc[] = [];
  const sockets: Socket[] = [];
  const clients: SseClient[] = [];
  const dir = scratchDir(() => {
    for (const s of sockets) s.destroy();
    for (const c of clients) c.close();
    return procs;
  });

  it(
    'half-sent requests past the bound are closed; /healthz answers once a place is free; the rest close at the headers timeout',
    { timeout: 120_000 },
    async () => {
      const statusDir = join(dir.path, 'status');
      const args = [
        'sidecar',
        '--db',
        join(dir.path, 'leases.db'),
        '--lease',
        'bounds',
        '--identity',
        'a',
        '--status-dir',
        statusDir,
        '--listen',
        '127.0.0.1:0',
        ...T,
      ];
      const proc = start('prlimit', [`--nofile=${NOFILE}:${NOFILE}`, process.execPath, ...NODE_FLAGS, CLI, ...args]);
      procs.push(proc);
      const line = await waitFor('the campaigning line', () => /"msg":"campaigning".*/.exec(proc.stderr())?.[0], 20_000);
      const port = Number(/"listen":"127\.0\.0\.1:(\d+)"/.exec(line)?.[1]);
      const connections = Number(/"httpConnections":(\d+)/.exec(line)?.[1]);
      const streams = Number(/"httpStreams":(\d+)/.exec(line)?.[1]);
      assert.ok(connections > ROOM_FOR_REQUESTS && connections <= NOFILE - ROOM_FOR_THE_REST, `${connections} connections for ${NOFILE} descriptors`);
      assert.equal(streams, connections - ROOM_FOR_REQUESTS, 'room for probes beside a full set of streams');
      const cand = { id: 'a', statusDir, proc };
      await waitFor('a to lead', () => leadersByStatus([cand]).length === 1, 20_000);

      const opened = performance.now();
      // All at once: well inside the headers timeout, which would otherwise close the first ones.
      const held = await Promise.all(Array.from({ length: connections + EXCESS }, () => halfSent(port)));
      sockets.push(...held.map((c) => c.socket));
      await waitFor(`${EXCESS} connections past the bound to be closed`, () => held.filter((c) => c.closed()).length >= EXCESS, HEADERS_TIMEOUT_MS / 2);
      assert.equal(held.filter((c) => c.closed()).length, EXCESS, 'exactly as many as past the bound');
      // Half-sent requests filling the bound do not keep a probe out: the oldest makes room.
      assert.equal(await healthz(port), 200, 'a probe answered while half-sent requests fill the bound');
      await waitFor('one half-sent request closed for it', () => held.filter((c) => c.closed()).length === EXCESS + 1, HEADERS_TIMEOUT_MS / 2);

      held.find((c) => !c.closed())!.socket.destroy();
      assert.equal(await waitFor('/healthz from a fresh connection', () => healthz(port), 10_000), 200);

      // The rest, never completed, are closed by the server at the headers timeout (408).
      await waitFor('the half-sent requests to be closed', () => held.every((c) => c.closed()), HEADERS_TIMEOUT_MS + 10_000);
      const timedOut = held.filter((c) => c.received().startsWith('HTTP/1.1 408'));
      assert.ok(timedOut.length >= connections - 2, `${timedOut.length} answered 408 and closed`);
      for (const c of timedOut) assert.ok(c.closedAt()! - opened >= HEADERS_TIMEOUT_MS - 1_000, 'closed at the headers timeout, not before');

      // A kept-alive connection idle after its answer is closed at the keep-alive timeout.
      const idle = await halfSent(port);
      sockets.push(idle.socket);
      const answered = performance.now();
      idle.socket.write('\r\n'); // completes the request
      await waitFor('the idle connection to be closed', () => idle.closed(), KEEP_ALIVE_TIMEOUT_MS + 10_000);
      assert.match(idle.received(), /^HTTP\/1\.1 200 OK\r\n[\s\S]*ok: /);
      const idleMs = idle.closedAt()! - answered;
      assert.ok(idleMs >= KEEP_ALIVE_TIMEOUT_MS - 1_000 && idleMs < HEADERS_TIMEOUT_MS + KEEP_ALIVE_TIMEOUT_MS, `closed after ${Math.round(idleMs)} ms idle`);

      // Streams stop at their bound; probes still have room beside them.
      // From many addresses: one address alone would meet its own, lower bound first.
      for (let i = 0; i < streams; i++) clients.push(await openStream('127.0.0.1', port, { localAddress: spreadAddress(i) }));
      await waitFor('every stream open', () => clients.every((c) => c.events.length > 0), 10_000);
      const more = await fetch(`http://127.0.0.1:${port}/leader?watch=1`);
      assert.equal(more.status, 503);
      await more.text();
      assert.equal(await healthz(port), 200);

      // The election kept its descriptors throughout: its files were written, and it releases.
      assert.doesNotMatch(proc.stderr(), /cannot write status files|EMFILE/);
      proc.kill('SIGTERM');
      assert.equal((await proc.exited).code, 0, proc.stderr());
      assert.match(proc.stderr(), /"msg":"released lease"/);
    },
  );
});
