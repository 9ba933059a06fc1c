import type { ServerResponse } from 'node:http';
import type { LeaderStatus } from '../status/leader-status.js';

/** Streams open at once by default: enough for every pod of a large app, small enough to bound memory. */
export const DEFAULT_MAX_STREAMS = 1024;
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
  maxBufferedBytes?: number;
}

export interface StreamCounters {
  opened(): void;
  closed(): void;
  refused(): void;
  dropped(): void;
}

/** `/leader`'s body, the shape of the old leader-elector sidecar: the status plus `name`. */
export function leaderBody(s: LeaderStatus): string {
  return JSON.stringify({ name: s.holder ?? '', ...s });
}

/**
 * The server-sent-events side of `GET /leader`: each open stream gets the current state first,
 * then one `leader` event per status change, in the order the status files were written. A
 * broadcast only hands bytes to each socket and never waits on one, so a reader that does not
 * read can never slow the election or the other readers; it is closed once its backlog passes
 * maxBufferedBytes.
 */
export class LeaderStreams {
  private readonly streams = new Set<ServerResponse>();
  private readonly maxStreams: number;
  private readonly maxBufferedBytes: number;
  private seq = 0;
  private lastKey = '';
  private last: string | null = null;
  private heartbeat: NodeJS.Timeout | null = null;

  constructor(
    private readonly counters: StreamCounters,
    limits: StreamLimits = {},
  ) {
    this.maxStreams = limits.maxStreams ?? DEFAULT_MAX_STREAMS;
    this.maxBufferedBytes = limits.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
  }

  get size(): number {
    return this.streams.size;
  }

  /** Opens a stream on `res`, or answers 503 when maxStreams are already open. */
  open(res: ServerResponse, current: LeaderStatus): void {
    if (this.streams.size >= this.maxStreams) {
      this.counters.refused();
      const body = `too many streams: ${this.maxStreams} are open, the most this sidecar serves; retry later or poll /leader\n`;
      res.writeHead(503, { 'content-type': 'text/plain', 'cache-control': 'no-store', 'retry-after': '5', 'content-length': Buffer.byteLength(body) });
      res.end(res.req.method === 'HEAD' ? undefined : body);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', 'x-accel-buffering': 'no' });
    if (res.req.method === 'HEAD') {
      res.end();
      return;
    }
    // A change not yet broadcast goes to every open stream first, so all see the same sequence.
    this.publish(current);
    this.streams.add(res);
    this.counters.opened();
    res.once('close', () => {
      if (this.streams.delete(res)) this.counters.closed();
      if (this.streams.size === 0) this.stopHeartbeat();
    });
    this.write(res, this.last!);
    this.startHeartbeat();
  }

  /** One event to every stream when anything but updatedAt changed. */
  publish(status: LeaderStatus): void {
    if (!this.remember(status)) return;
    for (const res of this.streams) this.write(res, this.last!);
  }

  /** Ends every stream (a reader sees the end, then reconnects elsewhere). */
  endAll(): void {
    this.stopHeartbeat();
    for (const res of this.streams) res.end();
  }

  /** Keeps the newest state as an event; false when only updatedAt changed. */
  private remember(status: LeaderStatus): boolean {
    const key = JSON.stringify({ ...status, updatedAt: '' });
    if (key === this.lastKey && this.last !== null) return false;
    this.lastKey = key;
    this.seq += 1;
    this.last = `id: ${this.seq}\nevent: leader\ndata: ${leaderBody(status)}\n\n`;
    return true;
  }

  private write(res: ServerResponse, chunk: string): void {
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
      for (const res of this.streams) this.write(res, ': keepalive\n\n');
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  private stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }
}
