/**
 * A client of the sidecar's `GET /leader?watch=1` stream over a raw socket (no fetch: 1,000
 * of them must stay cheap in the reading process), collecting each `leader` event's data.
 * `stuck: true` sends the request and never reads a byte of the answer.
 */
import { connect, type Socket } from 'node:net';

/** Events read by every client of this process, in the order they were read. */
let arrived = 0;

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
  close: () => void;
}

export function openStream(host: string, port: number, opts: { stuck?: boolean } = {}): Promise<SseClient> {
  return new Promise((resolve, reject) => {
    const events: string[] = [];
    const arrivals: number[] = [];
    let ended = false;
    let buf = '';
    const socket = connect(port, host, () => {
      socket.write(`GET /leader?watch=1 HTTP/1.1\r\nhost: ${host}\r\naccept: text/event-stream\r\n\r\n`);
      if (opts.stuck) socket.pause();
      resolve({ socket, events, arrivals, ended: () => ended, close: () => socket.destroy() });
    });
    socket.once('error', (err) => (ended ? undefined : reject(err)));
    socket.on('close', () => (ended = true));
    if (opts.stuck) return;
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
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
