/**
 * `GET /leader?watch=1` on real sidecar processes: readers that never read do not slow the
 * election nor the other readers, and each stream's events come in the order the sidecar
 * wrote its status files.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { REPO, start, startCli, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { validLeaders, type Candidate } from '../support/sidecars.js';
import { openStream, type SseClient } from '../support/sse-client.js';

const T = ['--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '400ms'];
const STUCK_PER_SIDECAR = 20;

/** Drops `name` (the stream's extra field): the rest is status.json's object. */
const asStatus = (json: string) => {
  const { name: _, ...rest } = JSON.parse(json) as Record<string, unknown>;
  return JSON.stringify(rest);
};

/** True when `sub` appears in `seq` in the same order (not necessarily adjacent). */
function isSubsequence(sub: string[], seq: string[]): boolean {
  let i = 0;
  for (const s of seq) if (i < sub.length && s === sub[i]) i++;
  return i === sub.length;
}

describe('GET /leader?watch=1 on real sidecars', () => {
  const procs: Proc[] = [];
  const clients: SseClient[] = [];
  const dir = scratchDir(() => {
    for (const c of clients) c.close();
    return procs;
  });

  it('stuck readers slow neither the handoff nor the other readers; events follow the status files', { timeout: 90_000 }, async () => {
    const db = join(dir.path, 'leases.db');
    const cands: (Candidate & { port: number })[] = [];
    for (const id of ['a', 'b']) {
      const statusDir = join(dir.path, `status-${id}`);
      const proc = startCli(['sidecar', '--db', db, '--lease', 'stream', '--identity', id, '--status-dir', statusDir, '--listen', '127.0.0.1:0', ...T]);
      procs.push(proc);
      const port = Number(await waitFor(`${id}'s address`, () => /"listen":"127\.0\.0\.1:(\d+)"/.exec(proc.stderr())?.[1], 20_000));
      cands.push({ id, statusDir, proc, port });
    }
    const poller = start(process.execPath, ['--import', 'tsx', join(REPO, 'test/support/status-json-poller.ts'), ...cands.map((c) => c.statusDir)]);
    procs.push(poller);
    const first = await waitFor('a first leader', () => validLeaders(cands)[0], 20_000);
    // The poller prints each file's content when it first reads it. Streams open only once it
    // reads both files: its start-up (tsx compiling it) takes seconds on a loaded machine, and
    // the states streamed before it ran would be missing from what the files are compared with.
    await waitFor('the poller to read both status files', () => cands.every((c) => poller.stdout().includes(JSON.stringify(c.statusDir))), 30_000);
    const leader = cands.find((c) => c === first.c)!;
    const standby = cands.find((c) => c !== leader)!;

    for (const c of cands) for (let i = 0; i < STUCK_PER_SIDECAR; i++) clients.push(await openStream('127.0.0.1', c.port, { stuck: true }));
    const live = new Map<Candidate, SseClient>();
    for (const c of cands) {
      const s = await openStream('127.0.0.1', c.port);
      live.set(c, s);
      clients.push(s);
    }
    const leaderEvents = live.get(leader)!.events;
    // Renewals keep coming to the reader beside the stuck ones (one event per renewal).
    await waitFor('three renewals on the leader stream', () => leaderEvents.length >= 4, 10_000);

    const began = Date.now();
    leader.proc.kill('SIGTERM'); // "not leader", release: the standby takes over at once
    await waitFor('the standby to lead', () => validLeaders([standby])[0], 10_000);
    const handoffMs = Date.now() - began;
    assert.ok(handoffMs < 3_000, `handoff took ${handoffMs} ms with ${STUCK_PER_SIDECAR} stuck readers on each sidecar`);
    const standbyEvents = live.get(standby)!.events;
    await waitFor('the standby stream to say it leads', () => standbyEvents.some((e) => (JSON.parse(e) as { isLeader: boolean }).isLeader), 5_000);
    await waitFor('the old leader stream to end', () => live.get(leader)!.ended(), 10_000);
    const last = JSON.parse(leaderEvents.at(-1)!) as { isLeader: boolean };
    assert.equal(last.isLeader, false, 'the stream ends on "not leader", as the files do');
    const n = standbyEvents.length;
    await waitFor('renewals on the new leader stream', () => standbyEvents.length >= n + 3, 10_000);

    // The metrics the dashboard shows: the takeover time from the release, and the open streams.
    const metrics = await (await fetch(`http://127.0.0.1:${standby.port}/metrics`)).text();
    assert.match(metrics, /^leasehold_takeover_seconds_count\{lease="stream"\} 1$/m);
    const takeover = Number(/^leasehold_takeover_seconds_sum\{lease="stream"\} (\S+)$/m.exec(metrics)?.[1]);
    assert.ok(takeover >= 0 && takeover * 1000 <= handoffMs, `takeover ${takeover} s, within the handoff's ${handoffMs} ms`);
    assert.match(metrics, new RegExp(`^leasehold_http_streams ${STUCK_PER_SIDECAR + 1}$`, 'm'));
    assert.match(metrics, /^leasehold_http_streams_rejected_total\{reason="limit"\} 0$/m);

    standby.proc.kill('SIGTERM');
    await Promise.all(cands.map((c) => c.proc.exited));
    poller.child.stdin!.end();
    await poller.exited;
    const lines = poller
      .stdout()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { dir: string; status?: unknown; torn?: string });
    assert.deepEqual(
      lines.filter((l) => l.torn !== undefined),
      [],
    );

    for (const c of cands) {
      const events = live.get(c)!.events;
      for (const e of events) {
        const o = JSON.parse(e) as { name: string; holder: string | null };
        assert.equal(o.name, o.holder ?? '');
      }
      const streamed = events.map(asStatus);
      const files = lines.filter((l) => l.dir === c.statusDir).map((l) => JSON.stringify(l.status));
      const from = files.indexOf(streamed[0]!);
      const to = files.lastIndexOf(streamed.at(-1)!);
      assert.ok(from >= 0 && to > from, `${c.id}: the stream's first and last states are ones the files held`);
      const window = files.slice(from, to + 1);
      assert.ok(window.length >= 4, `${c.id}: ${window.length} file states while streaming`);
      assert.ok(isSubsequence(window, streamed), `${c.id}: every state the files showed is in the stream, in the same order`);
    }
  });
});

/** Writes `requests` on one connection and collects what the server sends back. */
function rawConnection(port: number, requests: string): { received: () => string; ended: () => boolean; socket: Socket } {
  let received = '';
  let ended = false;
  const socket = connect(port, '127.0.0.1', () => socket.write(requests));
  socket.setEncoding('utf8');
  socket.on('data', (d: string) => (received += d));
  socket.on('close', () => (ended = true));
  socket.on('error', () => {});
  return { received: () => received, ended: () => ended, socket };
}

describe('GET and HEAD /leader: what opens a stream', () => {
  const procs: Proc[] = [];
  const sockets: Socket[] = [];
  const dir = scratchDir(() => {
    for (const s of sockets) s.destroy();
    return procs;
  });
  let port = 0;
  const streamsOpen = async () => Number(/^leasehold_http_streams (\d+)$/m.exec(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text())?.[1]);

  before(async () => {
    const db = join(dir.path, 'leases.db');
    const proc = startCli([
      'sidecar',
      '--db',
      db,
      '--lease',
      'watch',
      '--identity',
      'a',
      '--status-dir',
      join(dir.path, 'status'),
      '--listen',
      '127.0.0.1:0',
      ...T,
    ]);
    procs.push(proc);
    port = Number(await waitFor('the address', () => /"listen":"127\.0\.0\.1:(\d+)"/.exec(proc.stderr())?.[1], 20_000));
  });

  it('a repeated, contradictory or unknown watch parameter gets 400 and one line naming it and the rule', { timeout: 60_000 }, async () => {
    const refused: [string, string][] = [
      ['watch=1&watch=0', 'watch is given 2 times: give it once, watch=1 or true (a stream), watch=0 or false\n'],
      ['watch=0&watch=1', 'watch is given 2 times: give it once, watch=1 or true (a stream), watch=0 or false\n'],
      ['watch=1&watch=1', 'watch is given 2 times: give it once, watch=1 or true (a stream), watch=0 or false\n'],
      ['watch=true&watch=false&watch=1', 'watch is given 3 times: give it once, watch=1 or true (a stream), watch=0 or false\n'],
      ['watch=yes', 'watch=yes is not allowed: use watch=1 or true (a stream), watch=0 or false\n'],
      ['watch=', 'watch= is not allowed: use watch=1 or true (a stream), watch=0 or false\n'],
      // All after the first '?' is the query: not cut to watch=1 at the second.
      ['watch=1?x', 'watch=1?x is not allowed: use watch=1 or true (a stream), watch=0 or false\n'],
      ['watch=%C2%9B2J', 'watch=\\u009b2J is not allowed: use watch=1 or true (a stream), watch=0 or false\n'],
      [`watch=${'x'.repeat(5000)}`, `watch=${'x'.repeat(32)}… is not allowed: use watch=1 or true (a stream), watch=0 or false\n`],
    ];
    for (const [query, line] of refused) {
      const ac = new AbortController();
      const res = await fetch(`http://127.0.0.1:${port}/leader?${query}`, { headers: { accept: 'text/event-stream' }, signal: ac.signal });
      if (res.status !== 400) ac.abort(); // a stream never ends by itself
      assert.equal(res.status, 400, `${query}: ${res.headers.get('content-type')}`);
      assert.equal(res.headers.get('content-type'), 'text/plain');
      assert.equal(await res.text(), line, query);
    }
    for (const query of ['watch=0', 'watch=false']) {
      const res = await fetch(`http://127.0.0.1:${port}/leader?${query}`, { headers: { accept: 'text/event-stream' } });
      assert.equal(res.headers.get('content-type'), 'application/json', query);
      await res.text();
    }
    assert.equal(await streamsOpen(), 0, 'none of them opened a stream');
  });

  it('HEAD answers the headers of a stream and ends: the connection serves the next request', { timeout: 30_000 }, async () => {
    for (const head of ['HEAD /leader?watch=1 HTTP/1.1\r\nhost: x\r\n', 'HEAD /leader HTTP/1.1\r\nhost: x\r\naccept: text/event-stream\r\n']) {
      // Pipelined: a stream started by the HEAD would hold the connection and /healthz would never be answered.
      const c = rawConnection(port, `${head}\r\nGET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`);
      sockets.push(c.socket);
      await waitFor(`${head.split('\r')[0]}: the next request answered and the connection closed`, () => c.ended() && c.received().includes('ok: '), 10_000);
      const [headResponse, rest] = c.received().split(/\r\n\r\n(?=HTTP\/1\.1 )/, 2) as [string, string | undefined];
      assert.match(headResponse, /^HTTP\/1\.1 200 OK\r\n/);
      assert.match(headResponse, /\r\ncontent-type: text\/event-stream\r\n/);
      assert.doesNotMatch(c.received(), /event: leader|data: /, 'no event was written');
      assert.match(rest ?? '', /^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nok: /);
    }
    const res = await fetch(`http://127.0.0.1:${port}/leader?watch=1`, { method: 'HEAD' });
    assert.equal(res.status, 200);
    assert.equal(await res.text(), '');
    assert.equal(await streamsOpen(), 0, 'a HEAD opens no stream');
  });
});

describe('GET /leader?watch=1: one client cannot take every stream place', () => {
  const procs: Proc[] = [];
  const clients: SseClient[] = [];
  const dir = scratchDir(() => {
    for (const c of clients) c.close();
    return procs;
  });

  it('a neighbour holding 64 streams is refused the next with 503; the app on another address still opens its own', { timeout: 60_000 }, async () => {
    const statusDir = join(dir.path, 'status');
    const proc = startCli([
      'sidecar',
      '--db',
      join(dir.path, 'leases.db'),
      '--lease',
      'neighbour',
      '--identity',
      'a',
      '--status-dir',
      statusDir,
      '--listen',
      '127.0.0.1:0',
      ...T,
    ]);
    procs.push(proc);
    const line = await waitFor('the campaigning line', () => /"msg":"campaigning".*/.exec(proc.stderr())?.[0], 20_000);
    const port = Number(/"listen":"127\.0\.0\.1:(\d+)"/.exec(line)?.[1]);
    assert.match(line, /"httpStreams":1024,"httpStreamsPerClient":64/);
    await waitFor('it leads', () => validLeaders([{ id: 'a', statusDir, proc }]).length === 1, 20_000);

    const neighbour: SseClient[] = [];
    for (let i = 0; i < 64; i++) neighbour.push(await openStream('127.0.0.1', port, { localAddress: '127.0.0.2' }));
    clients.push(...neighbour);
    await waitFor('the 64 neighbour streams', () => neighbour.every((c) => c.events.length > 0), 20_000);
    const more = await openStream('127.0.0.1', port, { localAddress: '127.0.0.2' });
    clients.push(more);
    await waitFor('the 65th answered', () => more.raw().includes('poll /leader\n'), 10_000);
    assert.match(more.raw(), /^HTTP\/1\.1 503 /);
    assert.match(more.raw(), /too many streams from 127\.0\.0\.2: it holds 64, the most one address may hold; close one, retry later or poll \/leader\n$/);
    assert.equal(more.events.length, 0);

    // The app's own reader, on another address, is not pushed to polling.
    const app = await openStream('127.0.0.1', port);
    clients.push(app);
    await waitFor("the app's stream", () => app.events.length > 0, 10_000);
    assert.equal((JSON.parse(app.events[0]!) as { isLeader: boolean }).isLeader, true);

    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    assert.match(metrics, /^leasehold_http_streams 65$/m);
    assert.match(metrics, /^leasehold_http_streams_rejected_total\{reason="client_limit"\} 1$/m);
    assert.match(metrics, /^leasehold_http_streams_rejected_total\{reason="limit"\} 0$/m);
  });
});
