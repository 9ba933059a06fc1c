/**
 * The drain of a shard group's member, one per shard (`--drain-timeout`, docs/shards.md): once
 * shards.json no longer lists a shard, its release waits until the app says that shard's work
 * under its token has stopped (`POST /shards/stopped?shard=S&token=T`, with the drain key), at
 * most the drain timeout. The record and its rules are KeyedDrain's, keyed by shard (AppDrain's
 * with one key); this reads the request, refuses a shard the group does not have, and words the
 * answers.
 */
import type { Clock } from '../clock.js';
import type { DrainKey } from './drain-key.js';
import { DIGITS, KeyedDrain, type DrainWording, type StoppedAnswer, type StoppedReport } from './keyed-drain.js';

/** One answer to `POST /shards/stopped`: an HTTP status, a one-line body, and for 401 the scheme to use. */
export type ShardStoppedAnswer = StoppedAnswer;

const USAGE = 'as in POST /shards/stopped?shard=3&token=7';

const WORDING: DrainWording<number> = {
  stillHeld: (shard, token) => `shard ${shard} with token ${token} is still owned here: stop its work once shards.json no longer lists it, then post\n`,
  notEndedLast: (shard, token, ended) =>
    `token ${token} is not the ownership of shard ${shard} that ended last here (${ended ?? 'none yet'}): nothing of it to drain\n`,
  stopped: (shard, token) => `ok: the work of shard ${shard} under token ${token} stopped\n`,
};

export class ShardDrains {
  private readonly record: KeyedDrain<number>;

  /**
   * @param shards the group's shard count: a shard past it is refused.
   * @param key the credential a report must carry (`leasehold sidecar`: always); none: any report is taken.
   */
  constructor(
    clock: Clock,
    private readonly shards: number,
    key?: DrainKey,
  ) {
    this.record = new KeyedDrain(clock, WORDING, key);
  }

  gained(shard: number, token: number): void {
    this.record.began(shard, token);
  }

  lost(shard: number, token: number): void {
    this.record.end(shard, token);
  }

  /** Whether the app has said the work of `shard` under `token` stopped (its report came, perhaps before anyone waited). */
  reportedStopped(shard: number, token: number): boolean {
    return this.record.reportedStopped(shard, token);
  }

  /** Whether the app still owes a report for `shard` under `token`. */
  pending(shard: number, token: number): boolean {
    return this.record.pending(shard, token);
  }

  /**
   * `POST /shards/stopped?shard=S&token=T` (every `shard` and `token` of the query), with the
   * request's Authorization header. The key first, so a caller without it learns nothing of the
   * shards.
   */
  report(shards: readonly string[], tokens: readonly string[], authorization?: string): ShardStoppedAnswer {
    return this.record.report(authorization, () => this.read(shards, tokens));
  }

  /** True once the app said the work of `shard` under `token` stopped; false when the bound passed first (KeyedDrain.wait). */
  wait(shard: number, token: number, bound: number | AbortSignal): Promise<boolean> {
    return this.record.wait(shard, token, bound);
  }

  private read(shards: readonly string[], tokens: readonly string[]): StoppedReport<number> | StoppedAnswer {
    for (const [name, given] of [
      ['shard', shards],
      ['token', tokens],
    ] as const) {
      if (given.length > 1) return { code: 400, body: `${name} is given ${given.length} times: give it once\n` };
      if (given.length === 0 || !DIGITS.test(given[0]!)) {
        return {
          code: 400,
          body: `shard=S and token=T are required: the shard whose work stopped and the fencing token it had, ${USAGE}\n`,
        };
      }
    }
    const shard = Number(shards[0]);
    if (shard >= this.shards) return { code: 400, body: `shard ${shard} is not one of this group's: the shards are 0 to ${this.shards - 1}\n` };
    return { key: shard, token: Number(tokens[0]) };
  }
}
