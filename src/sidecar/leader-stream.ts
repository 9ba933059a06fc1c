import type { ServerResponse } from 'node:http';
import type { LeaderStatus } from '../status/leader-status.js';
import { jsonForTerminal } from '../util/escape-control.js';

/** Streams open at once by default: enough for every pod of a large app, small enough to bound memory. */
export const DEFAULT_MAX_STREAMS = 1024;
/**
 * Streams one client (one remote address) may hold at once by default, and never more than half
 * of maxStreams (a low open-files limit lowers it): a neighbour that opens streams until refused leaves places for the app's own
 * readers and everyone else's, instead of pushing them to polling. An app's process opens one;
 * 64 leaves room for a pool of them behind one address.
 */
export const DEFAULT_MAX_STREAMS_PER_CLIENT = 64;
/**
 * Bytes a stream may hold unsent in this process. A reader this far behind is not reading (the
 * kernel's socket buffers are full as well): it is closed, so its backlog cannot grow without
 * bound. A reader that reconnects gets the current state first and loses nothing it needs.
 */
export const DEFAULT_MAX_BUFFERED_BYTES = 64 * 1024;
/** A comment line this often keeps proxies from closing an idle stream and finds dead peers. */
const HEARTBEAT_MS = 15_000;

export interface StreamLimits {
  maxStreams?: number;
  /** Default DEFAULT_MAX_STREAMS_PER_CLIENT, or half of maxStreams when that is fewer (at least 1). */
  maxStreamsPerClient?: number;
  maxBufferedBytes?: number;
}

export interface StreamCounters {
  opened(): void;
  closed(): void;
  /** `limit`: maxStreams were open; `client_limit`: this client held maxStreamsPerClient. */
  refused(reason: 'limit' | 'client_limit'): void;
  dropped(): void;
}

/**
 * Who a stream belongs to, for the per-client bound: its remote address, an IPv4 address mapped
 * into IPv6 (a dual-stack listener's view) counted as the IPv4 one it is.
 */
export function clientOf(res: ServerResponse): string {
  const address = res.req.socket.remoteAddress ?? 'unknown';
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice('::ffff:'.length) : address;
}

/**
 * `/leader`'s body, the shape of the old leader-elector sidecar: the status plus `name`. The
 * holder comes from the store, where anyone who can write the record put it: what a terminal
 * would act on is escaped (jsonForTerminal), and the JSON still parses to the same value.
 */
export function leaderBody(s: LeaderStatus): string {
  return jsonForTerminal({ name: s.holder ?? '', ...s });
}

/** Streams written to per turn of the event loop: the election's timers and I/O run between batches. */
const BATCH = 100;
/** Events kept for streams not yet written to; far more than can pile up between two turns. */
const KEPT_EVENTS = 64;

/** What a set of streams sends: its event's name, the path a refused reader may poll instead, and each state's data line. */
export interface StreamKind<S extends { updatedAt: string }> {
  event: string;
  path: string;
  body: (s: S) => string;
}

/**
 * The server-sent-events side of `GET /leader` (LeaderStreams) and `GET /shards`
 * (shard-endpoints.ts): each open stream gets the current state first (as last published),
 * then one event per change, in the order the status files were written.
 * publish() only queues the event; the streams are written later, a batch per turn of the
 * event loop, so a thousand streams add nothing to the election's own path. A write only
 * hands bytes to a socket and never waits on one, so a reader that does not read can never
 * slow the election or the other readers; it is closed once its backlog passes
 * maxBufferedBytes.
 */
export class EventStreams<S extends { updatedAt: string }> {
  /** Each open stream and the sequence number of the last event written to it. */
  private readonly streams = new Map<ServerResponse, number>();
  /** Open streams by client (clientOf); a client with none has no entry. */
  private readonly perClient = new Map<string, number>();
  private readonly maxStreams: number;
  readonly maxStreamsPerClient: number;
  private readonly maxBufferedBytes: number;
  private seq = 0;
  private lastKey = '';
  /** The newest events, oldest first; the last one is the current state. */
  private readonly events: { seq: number; chunk: string }[] = [];
  /**
   * The state published last while no stream was open, not yet an event: it becomes one only
   * when a stream opens, so a sidecar nobody streams from never serialises its states for
   * nobody (a shard member's at N = 4096 is about 1 MB, on each heartbeat).
   */
  private unsent: S | null = null;
  private flushing = false;
  private heartbeat: NodeJS.Timeout | null = null;

  constructor(
    private readonly counters: StreamCounters,
    limits: StreamLimits,
    private readonly kind: StreamKind<S>,
  ) {
    this.maxStreams = limits.maxStreams ?? DEFAULT_MAX_STREAMS;
    // By default never more than half of the places, however few descriptors left maxStreams.
    const perClient = limits.maxStreamsPerClient ?? Math.min(DEFAULT_MAX_STREAMS_PER_CLIENT, Math.floor(this.maxStreams / 2));
    this.maxStreamsPerClient = Math.max(1, Math.min(perClient, this.maxStreams));
    this.maxBufferedBytes = limits.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
  }

  get size(): number {
    return this.streams.size;
  }

  /**
   * Opens a stream on `res`, or answers 503 when maxStreams are already open, or when this
   * client (its remote address) already holds maxStreamsPerClient of them.
   */
  open(res: ServerResponse, current: S): void {
    if (this.streams.size >= this.maxStreams) {
      this.counters.refused('limit');
      return refuse(res, `too many streams: ${this.maxStreams} are open, the most this sidecar serves; retry later or poll ${this.kind.path}\n`);
    }
    const client = clientOf(res);
    const held = this.perClient.get(client) ?? 0;
    if (held >= this.maxStreamsPerClient) {
      this.counters.refused('client_limit');
      return refuse(
        res,
        `too many streams from ${client}: it holds ${held}, the most one address may hold; close one, retry later or poll ${this.kind.path}\n`,
      );
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', 'x-accel-buffering': 'no' });
    if (res.req.method === 'HEAD') {
      res.end();
      return;
    }
    // A stream starts on the last published state, the one the status files hold, and not on a
    // fresh snapshot: a standby's snapshot carries the leader's newest renewal, which the files
    // (written on each change of leadership, not on each renewal observed) do not, and a stream
    // must never run ahead of the files. `current` serves only before anything was published.
    if (this.unsent !== null) this.queue(this.unsent);
    else if (this.events.length === 0) this.queue(current);
    this.unsent = null;
    const newest = this.events.at(-1)!;
    this.streams.set(res, newest.seq);
    this.perClient.set(client, held + 1);
    this.counters.opened();
    res.once('close', () => {
      if (this.streams.delete(res)) {
        this.counters.closed();
        const left = (this.perClient.get(client) ?? 1) - 1;
        if (left > 0) this.perClient.set(client, left);
        else this.perClient.delete(client);
      }
      if (this.streams.size === 0) this.stopHeartbeat();
    });
    this.write(res, newest.chunk);
    this.startHeartbeat();
  }

  /** Queues one event for every stream when anything but updatedAt changed; with none open, only keeps the state. */
  publish(status: S): void {
    if (this.streams.size === 0) {
      this.unsent = status;
      return;
    }
    this.queue(status);
  }

  private queue(status: S): void {
    const key = JSON.stringify({ ...status, updatedAt: '' });
    if (key === this.lastKey && this.events.length > 0) return;
    this.lastKey = key;
    this.seq += 1;
    this.events.push({ seq: this.seq, chunk: `id: ${this.seq}\nevent: ${this.kind.event}\ndata: ${this.kind.body(status)}\n\n` });
    if (this.events.length > KEPT_EVENTS) this.events.shift();
    if (this.streams.size > 0 && !this.flushing) {
      this.flushing = true;
      setImmediate(() => this.flush([...this.streams.keys()], 0));
    }
  }

  /**
   * Hands the newest event to every stream now, all of them in this turn rather than a batch
   * per turn, and waits until each socket has taken all it was given, at most `timeoutMs`. A
   * stream still holding bytes then is closed: its reader sees the stream end rather than
   * "leader" (or a shard it no longer owns). Called before a release, so no reader of this
   * sidecar still sees "leader" once the next leader can start. Returns the streams written to
   * and the ones closed.
   */
  async drain(timeoutMs: number): Promise<{ streams: number; closed: number }> {
    const waiting = new Set<ServerResponse>();
    const flushed: Promise<void>[] = [];
    const count = this.streams.size;
    for (const res of this.streams.keys()) {
      this.catchUp(res);
      if (res.destroyed || res.writableLength === 0) continue;
      waiting.add(res);
      flushed.push(
        new Promise<void>((resolve) => {
          const done = () => {
            waiting.delete(res);
            resolve();
          };
          res.once('close', done);
          // A comment line (readers ignore it) whose callback runs once the socket has taken
          // every byte before it: writes go out in order.
          res.write(': flushed\n\n', done);
        }),
      );
    }
    if (waiting.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.all(flushed), new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
      clearTimeout(timer);
    }
    const closed = waiting.size;
    for (const res of waiting) {
      this.counters.dropped();
      res.destroy();
    }
    return { streams: count, closed };
  }

  /** Ends every stream (a reader sees the end, then reconnects elsewhere). */
  endAll(): void {
    this.stopHeartbeat();
    for (const res of this.streams.keys()) {
      this.catchUp(res);
      res.end();
    }
  }

  /** Writes what each stream lacks, BATCH streams per turn; events published meanwhile go out in the same pass or the next. */
  private flush(pending: ServerResponse[], from: number): void {
    for (const res of pending.slice(from, from + BATCH)) this.catchUp(res);
    if (from + BATCH < pending.length) {
      setImmediate(() => this.flush(pending, from + BATCH));
      return;
    }
    this.flushing = false;
    const newest = this.seq;
    const behind = [...this.streams].filter(([, at]) => at < newest).map(([res]) => res);
    if (behind.length > 0) {
      this.flushing = true;
      setImmediate(() => this.flush(behind, 0));
    }
  }

  private catchUp(res: ServerResponse): void {
    const at = this.streams.get(res);
    if (at === undefined || at >= this.seq) return;
    const oldest = this.events[0]!.seq;
    // Cannot happen while each pass reaches every stream within KEPT_EVENTS publishes; if it did, the stream would miss events: end it.
    if (at < oldest - 1) {
      this.counters.dropped();
      res.destroy();
      return;
    }
    this.streams.set(res, this.seq);
    for (const e of this.events) if (e.seq > at) this.write(res, e.chunk);
  }

  private write(res: ServerResponse, chunk: string): void {
    if (res.destroyed) return;
    if (res.writableLength + chunk.length > this.maxBufferedBytes) {
      this.counters.dropped();
      res.destroy();
      return;
    }
    res.write(chunk);
  }

  private startHeartbeat(): void {
    if (this.heartbeat) return;
    this.heartbeat = setInterval(() => {
      for (const res of this.streams.keys()) this.write(res, ': keepalive\n\n');
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  private stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }
}

/** `GET /leader?watch=1`: one `leader` event per change of the status files' state. */
export class LeaderStreams extends EventStreams<LeaderStatus> {
  constructor(counters: StreamCounters, limits: StreamLimits = {}) {
    super(counters, limits, { event: 'leader', path: '/leader', body: leaderBody });
  }
}

/** A stream refused at a bound: 503, with a line saying which and when to come back. */
function refuse(res: ServerResponse, body: string): void {
  res.writeHead(503, { 'content-type': 'text/plain', 'cache-control': 'no-store', 'retry-after': '5', 'content-length': Buffer.byteLength(body) });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}
