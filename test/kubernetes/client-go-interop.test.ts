import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO, start, startCli, waitFor, type Proc } from '../support/cli.js';
import { scratchDir } from '../support/scratch.js';
import { admin, backendArgs, env, freshNamespace } from '../support/kube.js';

const HANDOFFS = 20;
const T = { leaseDuration: '4s', renewDeadline: '3s', retryPeriod: '1s' };
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

  it(`never two leaders over ${HANDOFFS} handoffs in both directions; the token grows on each`, { timeout: 300_000 }, async () => {
    const goBin = execFileSync('bash', [join(REPO, 'test/support/build-go-candidate.sh')], { stdio: ['ignore', 'pipe', 'inherit'] })
      .toString()
      .trim();
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
          : start(goBin, [
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
            ]);
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
