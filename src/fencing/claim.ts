/**
 * What a fenced writer presents, and the rules it is checked against before anything reaches a
 * database: the key names the resource (or a shard of it), the token is the writer's term.
 */
import { InvalidConfigError } from '../errors.js';
import { escapeControl, hasControl } from '../util/escape-control.js';

/** What a writer presents: the resource key it writes and the token of its term. */
export interface FenceClaim {
  key: string;
  token: number;
}

/** Long enough for `resource/shard/N` names, short enough to stay one line in every message. */
export const MAX_FENCE_KEY_BYTES = 200;

const KEY_RULE = `must be a string of 1 to ${MAX_FENCE_KEY_BYTES} UTF-8 bytes without control characters`;
// Tokens start at 1 (a lease's first term); past 2^53 − 1 two tokens can no longer be told apart.
const TOKEN_RULE = 'must be a positive safe integer (1 to 2^53 − 1)';

/** The claim, checked: InvalidConfigError (LEASEHOLD_ERR_INVALID_CONFIG) naming the value and the rule. */
export function checkClaim(claim: FenceClaim): FenceClaim {
  if (typeof claim !== 'object' || claim === null) {
    throw new InvalidConfigError(`invalid fence claim ${describe(claim)}: must be an object { key, token }`, {
      field: 'claim',
      rule: 'must be an object { key, token }',
    });
  }
  checkFenceKey(claim.key);
  checkFenceToken(claim.token);
  return { key: claim.key, token: claim.token };
}

export function checkFenceKey(key: unknown): asserts key is string {
  if (typeof key !== 'string' || key.length === 0 || Buffer.byteLength(key, 'utf8') > MAX_FENCE_KEY_BYTES || hasControl(key)) {
    throw new InvalidConfigError(`invalid fence key ${describe(key)}: ${KEY_RULE}`, { field: 'key', rule: KEY_RULE });
  }
}

export function checkFenceToken(token: unknown): asserts token is number {
  if (typeof token !== 'number' || !Number.isSafeInteger(token) || token < 1) {
    throw new InvalidConfigError(`invalid fencing token ${describe(token)}: ${TOKEN_RULE}`, { field: 'token', rule: TOKEN_RULE });
  }
}

/**
 * The fence key of one shard of a resource, the same on every member: `orders/shard/7`. Each
 * shard has its own token (its own terms), so each needs its own fence row.
 */
export function shardFenceKey(resource: string, shard: number): string {
  checkFenceKey(resource);
  if (typeof shard !== 'number' || !Number.isSafeInteger(shard) || shard < 0) {
    const rule = 'must be a whole number from 0';
    throw new InvalidConfigError(`invalid shard ${describe(shard)}: ${rule}`, { field: 'shard', rule });
  }
  const key = `${resource}/shard/${shard}`;
  checkFenceKey(key);
  return key;
}

/** A value as it should appear in a one-line message: strings quoted, control characters escaped, long ones cut. */
function describe(value: unknown): string {
  if (typeof value === 'string') {
    const shown = value.length > 60 ? `${value.slice(0, 60)}…` : value;
    return escapeControl(JSON.stringify(shown)) + (value.length > 60 ? ` (${Buffer.byteLength(value, 'utf8')} bytes)` : '');
  }
  if (typeof value === 'number') return Number.isSafeInteger(value) || !Number.isInteger(value) ? String(value) : `${value} (past 2^53 − 1)`;
  if (typeof value === 'bigint') return `${value}n (a bigint, not a number)`;
  return value === null ? 'null' : typeof value;
}
