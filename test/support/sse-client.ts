/**
 * A client of the sidecar's `GET /leader?watch=1` stream over a raw socket (no fetch: 1,000
 * of them must stay cheap in the reading process), collecting each `leader` event's data.
 * `stuck: true` sends the request and never reads a byte of the answer; `localAddress` connects
 * from that address (any of 127.0.0.0/8 on Linux: another client, as the sidecar counts them).
 */
import { connect, type Socket } from 'node:net';

/** Events read by every client of this process, in the order they were read. */
let arrived = 0;

/** Streams per loopback address in spreadAddress: below the sidecar's per-client bound (64, or half its stream bound). */
const PER_ADDRESS = 32;

/**
 * The loopback address (127.0.0.2 and up) the `i`th of many readers connects from, PER_ADDRESS
 * per address: a test's thousand readers stand for many clients, as the sidecar counts them by
 * address, and none reaches the per-client bound.
 */
export function spreadAddress(i: number): string {
  return `127.0.0.${2 + Math.floor(i / PER_ADDRESS)}`;
}

export interface SseClient {
  socket: Socket;
  /** The raw JSON of each event, in order. */
  events: string[];
  /**
   * For each event, its place among the events every client of this process has read so far:
   * compares arrival across streams (which sidecar's stream said what first).
   */
  arrivals: number[];
  /** True once the server ended or closed the stream. */
  ended: () => boolean;
  /** Everything read so far, the status line and headers included. */
  raw: () => string;
  close: () => void;
}

export function openStream(host: string, port: number, opts: { stuck?: boolean; localAddress?: string } = {}): Promise<SseClient> {
  return new Promise((resolve, reject) => {
    const events: string[] = [];
    const arrivals: number[] = [];
    let ended = false;
    let buf = '';
    let raw = '';
    const socket = connect({ port, host, ...(opts.localAddress ? { localAddress: opts.localAddress } : {}) }, () => {
      socket.write(`GET /leader?watch=1 HTTP/1.1\r\nhost: ${host}\r\naccept: text/event-stream\r\n\r\n`);
      if (opts.stuck) socket.pause();
      resolve({ socket, events, arrivals, ended: () => ended, raw: () => raw, close: () => socket.destroy() });
    });
    socket.once('error', (err) => (ended ? undefined : reject(err)));
    socket.on('close', () => (ended = true));
    if (opts.stuck) return;
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      if (raw.length < 4096) raw += chunk;
      buf += chunk;
      // Chunked transfer encoding interleaves size lines; the events' own lines are all we read.
      for (let m = /^data: (.*)\n/m.exec(buf); m; m = /^data: (.*)\n/m.exec(buf)) {
        events.push(m[1]!);
        arrivals.push(arrived++);
        buf = buf.slice(m.index + m[0].length);
      }
    });
  });
}
