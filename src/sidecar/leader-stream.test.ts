import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { Registry } from 'prom-client';
import { StatusServer } from './http-server.js';
import type { LeaderStatus } from '../status/leader-status.js';
import { EventStreams, type StreamCounters, type StreamLimits } from './leader-stream.js';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const status = (over: Partial<LeaderStatus> = {}): LeaderStatus => ({
  lease: 'l',
  identity: 'me',
  holder: 'me',
  isLeader: true,
  fencingToken: 1,
  acquiredAt: '2026-12-02T09:00:00.000Z',
  renewedAt: '2026-12-02T09:00:00.000Z',
  validUntil: '2026-12-02T09:00:10.000Z',
  standingAside: null,
  stoppedAt: null,
  updatedAt: '2026-12-02T09:00:00.000Z',
  ...over,
});

const ok = { ok: true, reason: 'ok' };
const counts = { opened: 0, closed: 0, refused: 0, refusedForClient: 0, dropped: 0 };
const counters: StreamCounters = {
  opened: () => counts.opened++,
  closed: () => counts.closed++,
  refused: (reason) => (reason === 'limit' ? counts.refused++ : counts.refusedForClient++),
  dropped: () => counts.dropped++,
};

/** A real server on a free port; `current` is what /leader answers now. */
async function serve(limits: StreamLimits = {}) {
  let current = status();
  const server = new StatusServer({
    status: () => current,
    liveness: () => ok,
    readiness: () => ok,
    registry: new Registry(),
    streamCounters: counters,
    streamLimits: limits,
  });
  const addr = await server.listen('127.0.0.1', 0);
  return {
    url: `http://127.0.0.1:${addr.port}`,
    port: addr.port,
    server,
    set(s: LeaderStatus) {
      current = s;
      server.publish(s);
    },
    /** What /leader would answer now, without publishing it (a standby's observed renewal). */
    snapshot(s: LeaderStatus) {
      current = s;
    },
  };
}

/** Reads a stream with fetch, collecting the data of each `leader` event. */
async function reader(url: string, headers: Record<string, string> = {}) {
  const abort = new AbortController();
  const res = await fetch(url, { headers, signal: abort.signal });
  const events: Record<string, unknown>[] = [];
  const ids: number[] = [];
  let buf = '';
  const done = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
      buf += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, end);
        buf = buf.slice(end + 2);
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (data) events.push(JSON.parse(data) as Record<string, unknown>);
        const id = /^id: (\d+)$/m.exec(block)?.[1];
        if (id) ids.push(Number(id));
      }
    }
  })().catch(() => undefined);
  return { res, events, ids, done, close: () => abort.abort() };
}

/**
 * A stream over a raw socket from `localAddress` (any of 127.0.0.0/8: another client, as the
 * server counts them): what it has read, and whether it ended.
 */
function rawStream(port: number, localAddress: string): Promise<{ socket: Socket; read: () => string; ended: () => boolean }> {
  return new Promise((resolve, reject) => {
    let read = '';
    let ended = false;
    const socket = connect({ port, host: '127.0.0.1', localAddress }, () => {
      socket.write('GET /leader?watch=1 HTTP/1.1\r\nhost: x\r\n\r\n');
      resolve({ socket, read: () => read, ended: () => ended });
    });
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (read += d));
    socket.on('close', () => (ended = true));
    socket.once('error', reject);
  });
}

/** A client that sends its request and never reads a byte of the answer. */
function stuckReader(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => {
      s.write('GET /leader?watch=1 HTTP/1.1\r\nhost: x\r\n\r\n');
      s.pause();
      resolve(s);
    });
    s.once('error', reject);
  });
}

async function until<T>(what: string, check: () => T | undefined | false, tries = 20_000): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = check();
    if (v !== undefined && v !== false) return v;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`gave up waiting for ${what}`);
}

describe('GET /leader as a server-sent-events stream', () => {
  const servers: StatusServer[] = [];
  const sockets: Socket[] = [];
  after(async () => {
    for (const s of sockets) s.destroy();
    for (const s of servers) await s.close();
  });

  it('a stream opens on the state last published (the files), never on a newer snapshot', async () => {
    const srv = await serve();
    servers.push(srv.server);
    const follower = status({ isLeader: false, holder: 'other', fencingToken: null, validUntil: null });
    srv.set(follower);
    // A standby's snapshot moves with each renewal it observes; its files change only when the
    // leadership does, and a stream must not run ahead of them.
    const newer = { ...follower, renewedAt: '2026-12-02T09:00:05.000Z' };
    srv.snapshot(newer);
    const r = await reader(`${srv.url}/leader?watch=1`);
    await until('the first event', () => r.events.length === 1);
    assert.equal(r.events[0]!.renewedAt, follower.renewedAt, 'the first event is what the files hold');
    r.close();
    await r.done;
  });

  it('with no stream open nothing is serialised; a stream that opens then starts on the last state published', async () => {
    let bodies = 0;
    const streams = new EventStreams<LeaderStatus>(counters, {}, { event: 'leader', path: '/leader', body: (s) => (bodies++, JSON.stringify(s)) });
    const http = createServer((_req, res) => streams.open(res, status({ fencingToken: 99 })));
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    try {
      for (let t = 1; t <= 5; t++) streams.publish(status({ fencingToken: t }));
      assert.equal(bodies, 0, 'five states published to no stream built no event');
      const r = await reader(`http://127.0.0.1:${(http.address() as AddressInfo).port}/`);
      await until('the first event', () => r.events.length === 1);
      assert.equal(r.events[0]!.fencingToken, 5, 'the last published state, not the current snapshot');
      assert.equal(bodies, 1);
      streams.publish(status({ fencingToken: 6 }));
      await until('the next event', () => r.events.length === 2);
      assert.equal(r.events[1]!.fencingToken, 6);
      r.close();
      await r.done;
    } finally {
      streams.endAll();
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    }
  });

  it('sends the current state first, then one event per change; the old shape stays', async () => {
    const srv = await serve();
    servers.push(srv.server);
    const plain = (await (await fetch(`${srv.url}/leader`)).json()) as Record<string, unknown>;
    assert.equal(plain.name, 'me');
    assert.equal(plain.fencingToken, 1);

    const byQuery = await reader(`${srv.url}/leader?watch=1`);
    const byAccept = await reader(`${srv.url}/leader`, { accept: 'text/event-stream' });
    for (const r of [byQuery, byAccept]) {
      assert.equal(r.res.status, 200);
      assert.equal(r.res.headers.get('content-type'), 'text/event-stream');
    }
    await until('the first event', () => byQuery.events.length === 1 && byAccept.events.length === 1);
    srv.set(status({ updatedAt: '2026-12-02T09:00:01.000Z' })); // only updatedAt: no event
    srv.set(status({ renewedAt: '2026-12-02T09:00:02.000Z', validUntil: '2026-12-02T09:00:12.000Z' }));
    srv.set(status({ isLeader: false, holder: 'other', fencingToken: null, validUntil: null }));
    await until('three events', () => byQuery.events.length === 3 && byAccept.events.length === 3);
    for (const r of [byQuery, byAccept]) {
      assert.deepEqual(
        r.events.map((e) => [e.name, e.isLeader, e.renewedAt]),
        [
          ['me', true, '2026-12-02T09:00:00.000Z'],
          ['me', true, '2026-12-02T09:00:02.000Z'],
          ['other', false, '2026-12-02T09:00:00.000Z'],
        ],
      );
      assert.deepEqual(r.ids, [r.ids[0], r.ids[0]! + 1, r.ids[0]! + 2], 'ids grow by one per event: a gap would show');
    }
    await srv.server.close();
    await Promise.all([byQuery.done, byAccept.done]);
  });

  it('more streams than one turn writes: every one gets every event, in order, and the final one before the end', async () => {
    const srv = await serve({ maxStreamsPerClient: 250 }); // one address for all: fetch cannot choose its own
    servers.push(srv.server);
    const readers = await Promise.all(Array.from({ length: 250 }, () => reader(`${srv.url}/leader?watch=1`)));
    await until('250 streams', () => srv.server.streams.size === 250 && readers.every((r) => r.events.length === 1));
    for (let i = 1; i <= 5; i++) srv.set(status({ renewedAt: new Date(Date.UTC(2026, 11, 2, 9, 0, i)).toISOString() }));
    srv.set(status({ isLeader: false, holder: '', fencingToken: null, validUntil: null }));
    await srv.server.close(); // at once: the queued events still go out before each stream ends
    await Promise.all(readers.map((r) => r.done));
    for (const r of readers) {
      assert.deepEqual(
        r.events.map((e) => e.renewedAt),
        [0, 1, 2, 3, 4, 5, 0].map((i) => new Date(Date.UTC(2026, 11, 2, 9, 0, i)).toISOString()),
      );
      assert.equal(r.events.at(-1)!.isLeader, false);
    }
  });

  it('refuses a bad watch value with one line naming the rule', async () => {
    const srv = await serve();
    servers.push(srv.server);
    const res = await fetch(`${srv.url}/leader?watch=yes`);
    assert.equal(res.status, 400);
    assert.equal(await res.text(), 'watch=yes is not allowed: use watch=1 or true (a stream), watch=0 or false\n');
    const once = await fetch(`${srv.url}/leader?watch=0`, { headers: { accept: 'text/event-stream' } });
    assert.equal(once.headers.get('content-type'), 'application/json', 'watch=0 answers once whatever Accept says');
    await once.text();
  });

  it('bounds the number of open streams: one more is refused with 503, a closed one frees its place', async () => {
    const srv = await serve({ maxStreams: 2, maxStreamsPerClient: 2 });
    servers.push(srv.server);
    const refusedBefore = counts.refused;
    const a = await reader(`${srv.url}/leader?watch=1`);
    const b = await reader(`${srv.url}/leader?watch=1`);
    await until('both streams', () => srv.server.streams.size === 2);
    const third = await fetch(`${srv.url}/leader?watch=1`);
    assert.equal(third.status, 503);
    assert.equal(third.headers.get('retry-after'), '5');
    assert.match(await third.text(), /^too many streams: 2 are open, the most this sidecar serves; retry later or poll \/leader\n$/);
    assert.equal(counts.refused, refusedBefore + 1);
    a.close();
    await until('the closed stream to free its place', () => srv.server.streams.size === 1);
    const again = await reader(`${srv.url}/leader?watch=1`);
    assert.equal(again.res.status, 200);
    await srv.server.close();
    await Promise.all([a.done, b.done, again.done]);
  });

  it('bounds the streams of one client (its address): it is refused with 503 while others still open theirs', async () => {
    const srv = await serve({ maxStreams: 10, maxStreamsPerClient: 3 });
    servers.push(srv.server);
    const before = { ...counts };
    const neighbour = await Promise.all([1, 2, 3].map(() => rawStream(srv.port, '127.0.0.2')));
    sockets.push(...neighbour.map((s) => s.socket));
    await until('the neighbour holds its 3 streams', () => srv.server.streams.size === 3);
    const fourth = await rawStream(srv.port, '127.0.0.2');
    sockets.push(fourth.socket);
    await until('the fourth to be answered', () => fourth.read().endsWith('poll /leader\n'));
    assert.match(fourth.read(), /^HTTP\/1\.1 503 /);
    assert.match(fourth.read(), /\r\nretry-after: 5\r\n/);
    assert.match(
      fourth.read(),
      /\r\n\r\ntoo many streams from 127\.0\.0\.2: it holds 3, the most one address may hold; close one, retry later or poll \/leader\n$/,
    );
    assert.equal(counts.refusedForClient, before.refusedForClient + 1);
    assert.equal(counts.refused, before.refused, 'not the global bound');
    // Another address (the app's own readers) still gets a stream, and as many as its own bound.
    const app = await Promise.all([1, 2, 3].map(() => rawStream(srv.port, '127.0.0.1')));
    sockets.push(...app.map((s) => s.socket));
    await until('the app streams', () => app.every((s) => s.read().includes('event: leader')));
    for (const s of app) assert.match(s.read(), /^HTTP\/1\.1 200 /);
    // A neighbour stream closed frees one of its own places, counted per address.
    neighbour[0]!.socket.destroy();
    await until('the closed stream to be gone', () => srv.server.streams.size === 5);
    const again = await rawStream(srv.port, '127.0.0.2');
    sockets.push(again.socket);
    await until('the neighbour stream again', () => again.read().includes('event: leader'));
    assert.equal(srv.server.streams.size, 6);
  });

  it('the per-client bound is at most half of the stream bound by default', async () => {
    const srv = await serve({ maxStreams: 4 });
    servers.push(srv.server);
    assert.equal(srv.server.streams.maxStreamsPerClient, 2);
    const big = await serve({ maxStreams: 1024 });
    servers.push(big.server);
    assert.equal(big.server.streams.maxStreamsPerClient, 64);
  });

  it('drain: every stream is handed the newest event before it returns; one whose socket does not take it is closed at the bound', async () => {
    const srv = await serve({ maxBufferedBytes: 64 * 1024 * 1024 });
    servers.push(srv.server);
    const droppedBefore = counts.dropped;
    const stuck = await stuckReader(srv.port);
    sockets.push(stuck);
    const live = await reader(`${srv.url}/leader?watch=1`);
    await until('both streams', () => srv.server.streams.size === 2);
    // More than the kernel's socket buffers hold: the stuck reader's stream keeps bytes unsent.
    const pad = 'x'.repeat(64 * 1024);
    for (let i = 1; i <= 256; i++) {
      srv.set(status({ renewedAt: new Date(Date.UTC(2026, 11, 2, 9, 0, i)).toISOString(), holder: `me${pad}` }));
      await new Promise((r) => setImmediate(r)); // the turn that writes it
    }
    srv.set(status({ isLeader: false, holder: '', fencingToken: null, validUntil: null }));
    // At once, before the batched writes of the published events have had a turn.
    assert.deepEqual(await srv.server.drainStreams(50), { streams: 2, closed: 1 });
    assert.equal(counts.dropped, droppedBefore + 1);
    await until('the last event to reach the reader', () => live.events.at(-1)?.isLeader === false);
    assert.equal(live.events.length, 258, 'every event, the last one included');
    await until('the closed stream to be gone; the reader that reads stays open', () => srv.server.streams.size === 1);
    await srv.server.close();
    await live.done;
  });

  it('a reader that never reads is closed once its backlog passes the bound; the others get every event in order', async () => {
    const srv = await serve({ maxBufferedBytes: 256 * 1024 });
    servers.push(srv.server);
    const droppedBefore = counts.dropped;
    const stuck = await stuckReader(srv.port);
    sockets.push(stuck);
    const live = await reader(`${srv.url}/leader?watch=1`);
    await until('both streams', () => srv.server.streams.size === 2);
    // Big events fill the stuck reader's socket buffers (the kernel's first) within a few MB.
    const pad = 'x'.repeat(32 * 1024);
    let sent = 1;
    await until(
      'the stuck reader to be closed',
      () => {
        const began = performance.now();
        srv.set(status({ renewedAt: new Date(Date.UTC(2026, 11, 2, 9, 0, sent)).toISOString(), holder: `me${pad}` }));
        sent++;
        // publish only hands bytes to sockets: it never waits for a reader.
        assert.ok(performance.now() - began < 250, 'a broadcast returned at once');
        return counts.dropped > droppedBefore;
      },
      2_000,
    );
    assert.equal(counts.dropped, droppedBefore + 1);
    await until('the stuck stream to be gone', () => srv.server.streams.size === 1);
    await until('every event to reach the reader', () => live.events.length === sent);
    const seconds = live.events.map((e) => (Date.parse(e.renewedAt as string) - Date.UTC(2026, 11, 2, 9, 0, 0)) / 1000);
    assert.deepEqual(
      seconds,
      seconds.map((_, i) => i),
      'in order, none missing',
    );
    await srv.server.close();
    await live.done;
  });
});
