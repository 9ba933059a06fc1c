/**
 * KEP-5866 on a real API server: a shard group's member lists ConfigMaps with the selectors it is
 * given (shards.json's, written by a sidecar in shard mode; ShardGroup's, in process) and gets
 * exactly the objects whose metadata.uid shardOf puts in its shards. The test starts its own
 * control planes (about 6 s each): one with `--feature-gates=ShardedListAndWatch=true`, and one
 * without, to pin what docs/shards.md says an API server with the gate off answers (the
 * parameter ignored: every object, no metadata.shardInfo).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { startControlPlane, type ControlPlane } from '../support/control-plane.js';
import { tempDir } from '../support/cli.js';
import { openStore } from '../../src/backends/open-store.js';
import { ShardSidecar } from '../../src/sidecar/shard-sidecar.js';
import { ShardGroup } from '../../src/shards/shard-group.js';
import { readOwnedShards } from '../../src/status/shards-status.js';
import { shardOf, shardSelector } from '../../src/shards/key-to-shard.js';

const N = 8;
const OBJECTS = 200;
const LABEL = 'leasehold.io/test=shard-selector';
const T = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 500 };
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

interface ConfigMapList {
  metadata: { shardInfo?: { selector: string } };
  items: { metadata: { name: string; uid: string } }[];
}

/** One request to the API server as the admin, outside the code under test; the status and the body. */
function call(cp: ControlPlane, method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  const token = /token: (\S+)/.exec(readFileSync(cp.adminKubeconfig, 'utf8'))![1]!;
  const ca = readFileSync(cp.caFile);
  return new Promise((resolve, reject) => {
    const req = request(
      `${cp.server}${path}`,
      { method, ca, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, timeout: 30_000 },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer in 30 s`)));
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

async function createConfigMaps(cp: ControlPlane, count: number, from = 0): Promise<Map<string, string>> {
  const uids = new Map<string, string>();
  const one = async (i: number) => {
    const name = `cm-${i}`;
    const r = await call(cp, 'POST', '/api/v1/namespaces/default/configmaps', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, labels: { 'leasehold.io/test': 'shard-selector' } },
      data: { i: String(i) },
    });
    assert.equal(r.status, 201, r.text);
    uids.set(name, (JSON.parse(r.text) as { metadata: { uid: string } }).metadata.uid);
  };
  // Twenty at a time: quick, and well inside the API server's fairness limits.
  for (let i = 0; i < count; i += 20) await Promise.all(Array.from({ length: Math.min(20, count - i) }, (_, k) => one(from + i + k)));
  return uids;
}

async function listWith(cp: ControlPlane, shardSelectorParam: string): Promise<{ status: number; text: string; list: ConfigMapList | null }> {
  const q = new URLSearchParams({ labelSelector: LABEL, shardSelector: shardSelectorParam });
  const r = await call(cp, 'GET', `/api/v1/namespaces/default/configmaps?${q.toString()}`);
  return { ...r, list: r.status === 200 ? (JSON.parse(r.text) as ConfigMapList) : null };
}

/** A watch from `resourceVersion` with `selector`: the names of the objects it is told were added, as they come. */
function watchWith(cp: ControlPlane, selector: string, resourceVersion: string): { added: string[]; close: () => void } {
  const token = /token: (\S+)/.exec(readFileSync(cp.adminKubeconfig, 'utf8'))![1]!;
  const q = new URLSearchParams({ watch: '1', resourceVersion, labelSelector: LABEL, shardSelector: selector });
  const added: string[] = [];
  let rest = '';
  const req = request(
    `${cp.server}/api/v1/namespaces/default/configmaps?${q.toString()}`,
    { ca: readFileSync(cp.caFile), headers: { authorization: `Bearer ${token}` } },
    (res) => {
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        const lines = (rest + c).split('\n');
        rest = lines.pop()!;
        for (const l of lines.filter(Boolean)) {
          const e = JSON.parse(l) as { type: string; object: { metadata: { name: string } } };
          if (e.type === 'ADDED') added.push(e.object.metadata.name);
        }
      });
    },
  );
  req.on('error', () => {});
  req.end();
  return { added, close: () => req.destroy() };
}

async function until(what: string, ok: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const names = (l: ConfigMapList | null) => (l?.items ?? []).map((i) => i.metadata.name).sort();

describe("KEP-5866 on the API server: a member's selectors list exactly its shards' objects", () => {
  let on: ControlPlane | undefined;
  let off: ControlPlane | undefined;
  const dir = tempDir('leasehold-shard-selector-');
  after(async () => {
    await Promise.all([on?.stop(), off?.stop()]);
    dir.cleanup();
  });
  before(async () => {
    // Both at once; one that started is kept for after() even when the other failed.
    const [a, b] = await Promise.allSettled([startControlPlane({ featureGates: ['ShardedListAndWatch=true'] }), startControlPlane()]);
    if (a.status === 'fulfilled') on = a.value;
    if (b.status === 'fulfilled') off = b.value;
    for (const r of [a, b]) if (r.status === 'rejected') throw r.reason;
  });

  it(
    `with ShardedListAndWatch on: each of two members, over ${N} shards, lists exactly the ConfigMaps of its shards among ${OBJECTS}`,
    { timeout: 120_000 },
    async () => {
      const cp = on!;
      const uids = await createConfigMaps(cp, OBJECTS);
      const expected = (owned: number[]) =>
        [...uids]
          .filter(([, uid]) => owned.includes(shardOf(uid, N)))
          .map(([name]) => name)
          .sort();

      // Member a: a sidecar in shard mode, whose shards.json the app reads. Member b: ShardGroup in process.
      const statusDir = join(dir.path, 'a');
      const sidecar = new ShardSidecar({
        ...T,
        store: await openStore({ backend: 'kubernetes', db: '', kubeconfig: cp.adminKubeconfig, namespace: 'default', requestTimeoutMs: 1_000 }),
        group: 'selectors',
        shards: N,
        identity: 'a',
        statusDir,
        log: quiet,
      });
      let group: ShardGroup | undefined;
      try {
        await sidecar.start();
        group = await ShardGroup.start({
          ...T,
          store: { backend: 'kubernetes', kubeconfig: cp.adminKubeconfig, namespace: 'default' },
          group: 'selectors',
          shards: N,
          identity: 'b',
          log: quiet,
          callbacks: { onShardGained: () => {} },
        });
        const b = group;
        await until('each member owning half the shards', () => readOwnedShards(statusDir).owned.length === N / 2 && b.owned.length === N / 2, 60_000);

        const fromFile = readOwnedShards(statusDir);
        const aShards = fromFile.owned.map((o) => o.shard);
        const bShards = b.owned.map((o) => o.shard);
        assert.deepEqual(
          [...aShards, ...bShards].sort((x, y) => x - y),
          [...Array(N).keys()],
          'the two members own every shard once',
        );

        let seen = 0;
        for (const [who, selector, owned] of [
          ['a (shards.json)', fromFile.selector!, aShards],
          ['b (ShardGroup)', b.ownedSelector()!, bShards],
        ] as const) {
          const r = await listWith(cp, selector);
          assert.equal(r.status, 200, r.text);
          assert.equal(r.list!.metadata.shardInfo?.selector, selector, `${who}: the API server says it filtered with the selector sent`);
          assert.deepEqual(names(r.list), expected([...owned]), `${who}: exactly the objects of its shards ${owned.join(',')}`);
          assert.ok(names(r.list).length > 0 && names(r.list).length < OBJECTS, `${who}: a part, not all or none (${names(r.list).length})`);
          seen += names(r.list).length;
        }
        assert.equal(seen, OBJECTS, 'the two members together see every object once');

        // Each owned shard's own selector, as shards.json lists it: exactly that shard's objects.
        for (const o of fromFile.owned) {
          assert.equal(o.selector, shardSelector(o.shard, N));
          const r = await listWith(cp, o.selector);
          assert.deepEqual(names(r.list), expected([o.shard]), `shard ${o.shard} [${o.start}, ${o.end})`);
        }

        // A watch with a's selector, from the list's version: told of exactly the new objects of a's shards.
        const listed = await listWith(cp, fromFile.selector!);
        const rv = (JSON.parse(listed.text) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
        const watch = watchWith(cp, fromFile.selector!, rv);
        try {
          const before = new Set(uids.keys());
          const more = await createConfigMaps(cp, 40, OBJECTS);
          // The watch is in the objects' order: once it has an object created last, it was told of every earlier one.
          let last = '';
          for (let i = OBJECTS + 40; i < OBJECTS + 140; i++) {
            const one = await createConfigMaps(cp, 1, i);
            for (const [k, v] of one) more.set(k, v);
            last = [...one.keys()][0]!;
            if (aShards.includes(shardOf(one.get(last)!, N))) break;
          }
          assert.ok(aShards.includes(shardOf(more.get(last)!, N)), "an object of a's shards came within 100 tries");
          await until(`the watch telling of ${last}`, () => watch.added.includes(last), 30_000);
          const want = [...more].filter(([name, uid]) => !before.has(name) && aShards.includes(shardOf(uid, N))).map(([name]) => name);
          assert.deepEqual([...watch.added].sort(), want.sort(), "the watch tells of exactly the new objects in a's shards");
          assert.ok(want.length > 0 && want.length < more.size, `${want.length} of ${more.size}`);
        } finally {
          watch.close();
        }

        // A selector the parser refuses is an error with the gate on (not a silent "everything").
        const bad = await listWith(cp, "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')");
        assert.equal(bad.status, 500, bad.text);
        assert.match(bad.text, /invalid shard selector: hexStart must be a 0x-prefixed 16-digit hex value/);
        const none = await listWith(cp, 'not a selector at all');
        assert.equal(none.status, 500, none.text);
        assert.match(none.text, /invalid shard selector: /);
      } finally {
        await group?.stop();
        await sidecar.stop();
      }
    },
  );

  it('with the gate off: the parameter is ignored, every object comes back and the list does not say it was filtered', { timeout: 60_000 }, async () => {
    const cp = off!;
    await createConfigMaps(cp, 20);
    for (const selector of [shardSelector(0, N), 'not a selector at all']) {
      const r = await listWith(cp, selector);
      assert.equal(r.status, 200, r.text);
      assert.equal(names(r.list).length, 20, `${selector}: all 20 ConfigMaps`);
      assert.equal(r.list!.metadata.shardInfo, undefined);
    }
  });
});
