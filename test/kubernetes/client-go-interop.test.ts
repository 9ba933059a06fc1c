import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { start, startCli, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { buildTool } from '../support/build-tool.js';
import { admin, backendArgs, env, freshNamespace, rawLease, storeFor } from '../support/kube.js';

const HANDOFFS = 20;
const T = { leaseDuration: '4s', renewDeadline: '3s', retryPeriod: '1s' };

/** The Go peer's flags: client-go's LeaseLock on this Lease, with the same timings as leasehold's. */
const goArgs = (ns: string, lease: string, id: string) => [
  '--kubeconfig',
  env().admin,
  '--namespace',
  ns,
  '--lease',
  lease,
  '--identity',
  id,
  '--lease-duration',
  T.leaseDuration,
  '--renew-deadline',
  T.renewDeadline,
  '--retry-period',
  T.retryPeriod,
];
const RETRY_MS = 1_000;
const MARGIN_MS = 1_500;

interface Instance {
  kind: 'leasehold' | 'client-go';
  id: string;
  proc: Proc;
}

interface Interval {
  id: string;
  start: number;
  end: number;
}

/** Leadership intervals as the instance itself reports them, in ms since the epoch. */
function intervals(inst: Instance, endOfTest: number): Interval[] {
  const out: Interval[] = [];
  let open: number | null = null;
  if (inst.kind === 'leasehold') {
    for (const line of inst.proc.stderr().split('\n')) {
      if (!line.startsWith('{')) continue;
      const e = JSON.parse(line) as { time: string; msg: string };
      if (e.msg === 'became leader') open = Date.parse(e.time);
      if (e.msg === 'stopped leading' && open !== null) {
        out.push({ id: inst.id, start: open, end: Date.parse(e.time) });
        open = null;
      }
    }
  } else {
    for (const line of inst.proc.stdout().split('\n')) {
      if (!line.startsWith('{')) continue;
      const e = JSON.parse(line) as { event: string; t: number };
      const t = e.t / 1e6;
      if (e.event === 'started') open = t;
      // Leadership ends when its context is cancelled (before client-go's release).
      if ((e.event === 'cancelling' || e.event === 'ctx_done' || e.event === 'stopped') && open !== null) {
        out.push({ id: inst.id, start: open, end: t });
        open = null;
      }
    }
  }
  if (open !== null) out.push({ id: inst.id, start: open, end: endOfTest });
  return out;
}

describe("client-go's leader election and leasehold share one Lease", () => {
  scratchDir(() => all);
  const all: Instance[] = [];
  let goBin: string;
  before(() => {
    goBin = buildTool('build-go-candidate.sh');
  });

  it("a successor claim survives a client-go leader's renewals and its release", { timeout: 60_000 }, async () => {
    const ns = await freshNamespace('interop-claim');
    const lease = 'claim';
    const id = 'client-go-claim';
    const proc = start(goBin, goArgs(ns, lease, id));
    all.push({ kind: 'client-go', id, proc });
    const store = storeFor(ns);
    try {
      const claim = { identity: 'leasehold-standby', claimedAt: new Date('2026-12-02T09:15:26.456Z') };
      await waitFor('client-go to lead', async () => (await store.get(lease))?.record.holderIdentity === id, 20_000);
      // Written as a standby writes it: read, then compare-and-swap. A renewal in between is a
      // conflict; read again.
      await waitFor(
        'the claim to be written',
        async () => {
          const current = (await store.get(lease))!;
          try {
            await store.update(lease, { ...current.record, successor: claim }, current.version);
            return true;
          } catch (err) {
            if ((err as { code?: string }).code === 'LEASEHOLD_ERR_CONFLICT') return false;
            throw err;
          }
        },
        10_000,
      );
      const renewals = new Set<number>();
      const claimed = await waitFor(
        'client-go to renew twice after the claim',
        async () => {
          const got = (await store.get(lease))!;
          assert.equal(got.record.holderIdentity, id, 'client-go keeps leading');
          renewals.add(got.record.renewTime!.getTime());
          return renewals.size >= 3 && got;
        },
        15_000,
      );
      assert.deepEqual(claimed.record.successor, claim, "client-go's renewals keep the claim");

      proc.kill('SIGTERM');
      const released = await waitFor(
        'client-go to release',
        async () => {
          const got = await store.get(lease);
          return got?.record.holderIdentity === '' && got;
        },
        10_000,
      );
      assert.deepEqual(released.record.successor, claim, "client-go's release keeps the claim");
      const annotations = rawLease(ns, lease).metadata.annotations as Record<string, string>;
      assert.equal(annotations['leasehold.io/successor'], '{"identity":"leasehold-standby","claimedAt":"2026-12-02T09:15:26.456Z"}');
      assert.equal((await proc.exited).code, 0, `client-go exits cleanly: ${proc.stderr().slice(-500)}`);
    } finally {
      proc.kill('SIGTERM');
      await store.close();
    }
  });

  it(`never two leaders over ${HANDOFFS} handoffs in both directions; the token grows on each`, { timeout: 300_000 }, async () => {
    const ns = await freshNamespace('interop');
    const lease = 'interop';
    let generation = 0;
    const launch = (kind: Instance['kind']): Instance => {
      const id = `${kind}-${generation++}`;
      const proc =
        kind === 'leasehold'
          ? startCli([
              'sidecar',
              ...backendArgs(ns, lease),
              '--identity',
              id,
              '--listen',
              'off',
              '--lease-duration',
              T.leaseDuration,
              '--renew-deadline',
              T.renewDeadline,
              '--retry-period',
              T.retryPeriod,
            ])
          : start(goBin, goArgs(ns, lease, id));
      const inst = { kind, id, proc };
      all.push(inst);
      return inst;
    };
    // Read through client-node directly (not leasehold's store), cheaply enough to poll.
    const api = admin.coordination();
    let last: { holderIdentity?: string; leaseTransitions?: number } | undefined;
    const poll = async () => {
      try {
        last = (await api.readNamespacedLease({ name: lease, namespace: ns })).spec;
      } catch {
        last = undefined;
      }
      return last;
    };
    const holder = () => last;

    let running = [launch('leasehold')];
    await waitFor('leasehold to lead first', async () => (await poll())?.holderIdentity === running[0]!.id, 20_000);
    running.push(launch('client-go'));
    await new Promise((r) => setTimeout(r, 1_000));

    const handoffs: { from: string; to: string; ms: number; token: number }[] = [];
    let token = holder()!.leaseTransitions!;
    for (let i = 0; i < HANDOFFS; i++) {
      await poll();
      const leader = running.find((r) => r.id === holder()?.holderIdentity);
      assert.ok(leader, `handoff ${i}: the Lease holder ${holder()?.holderIdentity} is not one of ours`);
      const other = running.find((r) => r !== leader)!;
      const t0 = Date.now();
      leader.proc.kill('SIGTERM');
      await waitFor(`handoff ${i} ${leader.id} → ${other.id}`, async () => (await poll())?.holderIdentity === other.id, 15_000, 10);
      const ms = Date.now() - t0;
      const next = holder()!.leaseTransitions!;
      assert.ok(next > token, `handoff ${i}: token ${next} must exceed ${token}`);
      token = next;
      const exit = await leader.proc.exited;
      assert.equal(exit.code, 0, `${leader.id} exits cleanly: ${leader.proc.stderr().slice(-500)}`);
      handoffs.push({ from: leader.kind, to: other.kind, ms, token: next });
      // A released Lease is taken at the taker's next retry: client-go polls with up to
      // 2.2 × retryPeriod of jitter; leasehold watches and acts at once. client-go itself
      // releases only when its renew loop next wakes (up to one retryPeriod after SIGTERM).
      const bound = other.kind === 'client-go' ? 2.2 * RETRY_MS + MARGIN_MS : RETRY_MS + RETRY_MS + MARGIN_MS;
      assert.ok(ms <= bound, `handoff ${i} ${leader.kind} → ${other.kind} took ${ms} ms, bound ${bound} ms`);
      running = [other, launch(leader.kind)];
      // Let the new standby start and connect its watch before the next handoff.
      await new Promise((r) => setTimeout(r, 1_500));
    }

    const end = Date.now();
    for (const r of running) r.proc.kill('SIGTERM');
    await Promise.all(running.map((r) => r.proc.exited));
    const ivs = all.flatMap((i) => intervals(i, end)).sort((a, b) => a.start - b.start);
    assert.ok(ivs.length >= HANDOFFS + 1, `each side reported its terms (${ivs.length})`);
    for (let i = 1; i < ivs.length; i++) {
      const prev = ivs[i - 1]!;
      const cur = ivs[i]!;
      assert.ok(
        prev.end <= cur.start,
        `overlap: ${prev.id} led until ${new Date(prev.end).toISOString()}, ${cur.id} from ${new Date(cur.start).toISOString()}`,
      );
    }
    const dirs = (from: string, to: string) => handoffs.filter((h) => h.from === from && h.to === to);
    assert.ok(dirs('leasehold', 'client-go').length >= 5 && dirs('client-go', 'leasehold').length >= 5, 'handoffs went both ways');
    const stats = (xs: number[]) => {
      const s = [...xs].sort((a, b) => a - b);
      return `min ${s[0]} / median ${s[Math.floor(s.length / 2)]} / max ${s.at(-1)} ms`;
    };
    console.log(`leasehold → client-go: ${stats(dirs('leasehold', 'client-go').map((h) => h.ms))}`);
    console.log(`client-go → leasehold: ${stats(dirs('client-go', 'leasehold').map((h) => h.ms))}`);
    console.log(`tokens: ${handoffs.map((h) => h.token).join(' ')}`);
  });
});
