/**
 * A shard group member's HTTP routes, mounted on the sidecar's one server (http-server.ts):
 * `GET /shards` (shards.json's content), `GET /shards?watch=1` (a server-sent-events stream of
 * it, bounded as the /leader streams are: the same EventStreams), and `POST
 * /shards/stopped?shard=S&token=T` (the app's word that a shard's work stopped, ShardDrains).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ShardsStatus } from '../status/shards-status.js';
import { jsonForTerminal } from '../util/escape-control.js';
import { SHARDS_STOPPED_PATH, send, wantsStream, type MoreRoutes } from './http-server.js';
import { EventStreams, type StreamCounters, type StreamLimits } from './leader-stream.js';
import type { ShardStoppedAnswer } from './shard-drain.js';

export const SHARDS_PATH = '/shards';

export interface ShardHandlers {
  status(): ShardsStatus;
  /** `POST /shards/stopped`: every `shard` and `token` of the query, and the Authorization header. */
  stopped(shards: readonly string[], tokens: readonly string[], authorization: string | undefined): ShardStoppedAnswer;
}

/** The body of `GET /shards` and of each `shards` event: the status, escaped for a terminal (it still parses to the same value). */
export function shardsBody(s: ShardsStatus): string {
  return jsonForTerminal(s);
}

export class ShardEndpoints implements MoreRoutes {
  readonly paths = [SHARDS_PATH, SHARDS_STOPPED_PATH];
  readonly streams: EventStreams<ShardsStatus>;

  constructor(
    private readonly h: ShardHandlers,
    counters: StreamCounters,
    limits: StreamLimits,
  ) {
    this.streams = new EventStreams<ShardsStatus>(counters, limits, { event: 'shards', path: SHARDS_PATH, body: shardsBody });
  }

  /** Sends a change to every open stream (after shards.json was written: a stream never runs ahead of the file). */
  publish(status: ShardsStatus): void {
    this.streams.publish(status);
  }

  handle(req: IncomingMessage, res: ServerResponse, path: string, search: string): boolean {
    if (path === SHARDS_STOPPED_PATH) {
      this.stopped(req, res, search);
      return true;
    }
    if (path !== SHARDS_PATH) return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      send(res, 405, 'text/plain', `use GET ${SHARDS_PATH} (or ${SHARDS_PATH}?watch=1 for a stream)\n`);
      return true;
    }
    const s = this.h.status();
    // wantsStream throws BadRequest: the server answers it 400.
    if (wantsStream(req, new URLSearchParams(search))) this.streams.open(res, s);
    else send(res, 200, 'application/json', shardsBody(s) + '\n');
    return true;
  }

  /** The body, if any, is not read: the query and the header say it all. */
  private stopped(req: IncomingMessage, res: ServerResponse, search: string): void {
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      return send(res, 405, 'text/plain', `use POST ${SHARDS_STOPPED_PATH}?shard=S&token=T\n`);
    }
    const query = new URLSearchParams(search);
    const a = this.h.stopped(query.getAll('shard'), query.getAll('token'), req.headers.authorization);
    if (a.challenge !== undefined) res.setHeader('www-authenticate', a.challenge);
    send(res, a.code, 'text/plain', a.body);
  }
}
