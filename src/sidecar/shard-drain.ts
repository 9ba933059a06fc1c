/**
 * The drain of a shard group's member, one per shard (`--drain-timeout`, docs/shards.md): once
 * shards.json no longer lists a shard, its release waits until the app says that shard's work
 * under its token has stopped (`POST /shards/stopped?shard=S&token=T`, with the drain key), at
 * most the drain timeout. AppDrain's rules, per shard: only the ownership that ended last for a
 * shard can be reported, never one still held, and only by whoever has the key.
 */
import type { Clock, Timer } from '../clock.js';
import type { DrainKey } from './drain-key.js';

/** One answer to `POST /shards/stopped`: an HTTP status, a one-line body, and for 401 the scheme to use. */
export interface ShardStoppedAnswer {
  code: 200 | 400 | 401 | 403 | 409;
  body: string;
  challenge?: string;
}

/** A number as the app sends it: digits only, so `7 ` or `0x7` is refused rather than guessed. */
const NUMBER = /^\d{1,16}$/;

const USAGE = 'as in POST /shards/stopped?shard=3&token=7';

export class ShardDrains {
  /** The token of each shard this member owns now. */
  private readonly owned = new Map<number, number>();
  /** The token of the ownership that ended last, per shard: the only one a report can end the drain of. */
  private readonly ended = new Map<number, number>();
  /** The ended ownerships the app said stopped, per shard (their token). */
  private readonly reported = new Map<number, number>();
  private readonly waiters = new Map<number, () => void>();

  /**
   * @param shards the group's shard count: a shard past it is refused.
   * @param key the credential a report must carry (`leasehold sidecar`: always); none: any report is taken.
   */
  constructor(
    private readonly clock: Clock,
    private readonly shards: number,
    private readonly key?: DrainKey,
  ) {}

  gained(shard: number, token: number): void {
    this.owned.set(shard, token);
  }

  lost(shard: number, token: number): void {
    this.owned.delete(shard);
    this.ended.set(shard, token);
    this.reported.delete(shard);
  }

  /** Whether the app has said the work of `shard` under `token` stopped (its report came, perhaps before anyone waited). */
  reportedStopped(shard: number, token: number): boolean {
    return this.reported.get(shard) === token;
  }

  /** Whether the app still owes a report for `shard` under `token`. */
  pending(shard: number, token: number): boolean {
    return this.ended.get(shard) === token && this.reported.get(shard) !== token;
  }

  /**
   * `POST /shards/stopped?shard=S&token=T` (every `shard` and `token` of the query), with the
   * request's Authorization header. The key first, so a caller without it learns nothing of the
   * shards.
   */
  report(shards: readonly string[], tokens: readonly string[], authorization?: string): ShardStoppedAnswer {
    const refused = this.key?.refuse(authorization);
    if (refused) return refused;
    for (const [name, given] of [
      ['shard', shards],
      ['token', tokens],
    ] as const) {
      if (given.length > 1) return { code: 400, body: `${name} is given ${given.length} times: give it once\n` };
      if (given.length === 0 || !NUMBER.test(given[0]!)) {
        return {
          code: 400,
          body: `shard=S and token=T are required: the shard whose work stopped and the fencing token it had, ${USAGE}\n`,
        };
      }
    }
    const shard = Number(shards[0]);
    const token = Number(tokens[0]);
    if (shard >= this.shards) return { code: 400, body: `shard ${shard} is not one of this group's: the shards are 0 to ${this.shards - 1}\n` };
    if (this.owned.get(shard) === token) {
      return {
        code: 409,
        body: `shard ${shard} with token ${token} is still owned here: stop its work once shards.json no longer lists it, then post\n`,
      };
    }
    const ended = this.ended.get(shard);
    if (ended !== token) {
      return {
        code: 409,
        body: `token ${token} is not the ownership of shard ${shard} that ended last here (${ended ?? 'none yet'}): nothing of it to drain\n`,
      };
    }
    this.reported.set(shard, token);
    this.waiters.get(shard)?.();
    return { code: 200, body: `ok: the work of shard ${shard} under token ${token} stopped\n` };
  }

  /** True once the app said the work of `shard` under `token` stopped; false when `boundMs` passed first. */
  wait(shard: number, token: number, boundMs: number): Promise<boolean> {
    if (!this.pending(shard, token)) return Promise.resolve(true);
    if (boundMs <= 0) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      let timer: Timer | null = null;
      const done = (stopped: boolean) => {
        timer?.cancel();
        if (this.waiters.get(shard) === wake) this.waiters.delete(shard);
        resolve(stopped);
      };
      const wake = () => {
        if (!this.pending(shard, token)) done(true);
      };
      this.waiters.set(shard, wake);
      timer = this.clock.setTimer(() => done(false), boundMs);
    });
  }
}
