/**
 * Loaded with `--import` into the chaos tool's sidecars (through NODE_OPTIONS) when
 * LEASEHOLD_TEST_HISTORY_DIR is set: records every call the built CLI makes to its store, on a
 * lease record and on a shard group's records, as a compare-and-swap register's operations
 * (docs/testing.md "Recorded histories"), in `store-PID.jsonl` of that folder. It wraps the
 * store class's own methods, the same module instance the CLI loads, so the production code
 * carries no recording switch; the times are taken around the store call itself, below the
 * elector's timeouts (a call it abandons is one whose outcome is unknown).
 *
 * A ConflictError is a definite "no"; any other failure leaves the outcome unknown (no return).
 * The value recorded is the record's fields in a fixed order, dates to the millisecond, without
 * the successor claim (a hint a store may drop: LeaseRecord's docs).
 *   LEASEHOLD_TEST_HISTORY_BACKEND: sqlite | postgres | kubernetes
 */
import process from 'node:process';
import { URL } from 'node:url';
import { openHistory } from './history-recorder.mjs';

const STORES = {
  sqlite: ['sqlite/store.js', 'SqliteLeaseStore'],
  postgres: ['postgres/store.js', 'PostgresLeaseStore'],
  kubernetes: ['kubernetes/store.js', 'KubernetesLeaseStore'],
};

const dir = process.env.LEASEHOLD_TEST_HISTORY_DIR;
if (dir) {
  const backend = process.env.LEASEHOLD_TEST_HISTORY_BACKEND ?? '';
  const store = STORES[backend];
  if (!store) throw new Error(`LEASEHOLD_TEST_HISTORY_BACKEND=${backend}: expected sqlite, postgres or kubernetes`);
  const mod = await import(new URL(`../../dist/src/backends/${store[0]}`, import.meta.url).href);
  recordCalls(mod[store[1]].prototype, openHistory(dir, 'store'), backend === 'kubernetes');
}

/** The record as the register's value: fields sorted, dates as ms, no successor claim. */
function value(record) {
  const { successor: _, ...rest } = record;
  return stable(rest);
}

function stable(v) {
  if (v instanceof Date) return String(v.getTime());
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(stable).join(',')}]`;
  const keys = Object.keys(v)
    .filter((k) => v[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${stable(v[k])}`).join(',')}}`;
}

const groupKey = (group, record) => `group/${group}/${record.kind}/${record.index}`;

/** Wraps one method: `call` records the call and returns a function recording the outcome. */
function wrap(proto, name, begin) {
  const inner = proto[name];
  proto[name] = async function (...args) {
    const end = begin(...args);
    let result;
    try {
      result = await inner.apply(this, args);
    } catch (err) {
      end.failed(err);
      throw err;
    }
    end.ok(result);
    return result;
  };
}

function recordCalls(proto, h, leaseNoopKeepsVersion) {
  const conflict = (err) => err?.code === 'LEASEHOLD_ERR_CONFLICT';
  const write = (key, op, input) => {
    const id = h.call('register', key, op, input);
    return {
      ok: (version) => h.done(id, { ok: true, version }),
      failed: (err) => conflict(err) && h.done(id, { ok: false }),
    };
  };
  wrap(proto, 'get', (name) => {
    const id = h.call('register', `lease/${name}`, 'get');
    return {
      ok: (got) => h.done(id, got ? { found: true, value: value(got.record), version: got.version } : { found: false }),
      failed: () => {},
    };
  });
  // The Kubernetes API server persists no no-op update, so the Lease's resourceVersion stays
  // (API concepts, "Resource versions"); the register is told so. The other stores follow the
  // LeaseStore contract: any write changes the version.
  const leaseOpts = leaseNoopKeepsVersion ? { noopKeepsVersion: true } : {};
  wrap(proto, 'create', (name, record) => write(`lease/${name}`, 'create', { value: value(record), ...leaseOpts }));
  wrap(proto, 'update', (name, record, expected) => write(`lease/${name}`, 'update', { value: value(record), expected, ...leaseOpts }));
  if (typeof proto.listGroup !== 'function') return;
  // A list is a read of each record it returns, all within the list's interval. A record it
  // does not return says nothing here: this process does not know every key of the group.
  wrap(proto, 'listGroup', (group) => {
    const called = h.stamp();
    return {
      ok: (records) => {
        for (const r of records) h.whole('register', groupKey(group, r.record), 'get', {}, called, { found: true, value: value(r.record), version: r.version });
      },
      failed: () => {},
    };
  });
  const opts = { noopKeepsVersion: true };
  wrap(proto, 'createGroupRecord', (group, record) => write(groupKey(group, record), 'create', { value: value(record), ...opts }));
  wrap(proto, 'updateGroupRecord', (group, record, expected) => write(groupKey(group, record), 'update', { value: value(record), expected, ...opts }));
}
