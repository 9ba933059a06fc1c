import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { scratchDir } from '../support/scratch.js';
import { waitFor } from '../support/cli.js';
import { startSidecar, validLeaders, type Candidate } from '../support/sidecars.js';
import { backendArgs, env, freshNamespace, rawLease } from '../support/kube.js';
import { leaseMetadataChurn } from '../support/lease-churn.js';
const timing = { leaseDuration: '3s', renewDeadline: '2s', retryPeriod: '500ms' };
const LEASE_MS = 3_000;
const RETRY_MS = 500;
/** As the failover test: process start-up, watch latency, status-file polling, a loaded 2-core machine. */
const MARGIN_MS = 1_500;

/**
 * Another controller (a labeller, a policy engine, an inventory tool) rewrites the Lease's
 * metadata more often than its duration. Each write is a new resourceVersion with the same
 * leader-election record: failover must not wait for the churn to stop.
 */
describe("a neighbour churning the Lease's metadata on a real API server", () => {
  const cands: Candidate[] = [];
  const dir = scratchDir(() => cands);

  for (const kind of ['annotate', 'label'] as const) {
    it(`SIGKILL of the leader while another writer ${kind}s the Lease every 400 ms: a standby takes over at the expiry`, { timeout: 90_000 }, async () => {
      const ns = await freshNamespace(`churn-${kind}`);
      const lease = 'churned';
      const mine = ['a', 'b'].map((id) => startSidecar(dir.path, `${kind}-${id}`, backendArgs(ns, lease), timing, ['--log-format', 'text']));
      cands.push(...mine);
      const first = await waitFor('one leader', () => (validLeaders(mine).length === 1 ? validLeaders(mine)[0] : undefined), 30_000);

      const churn = leaseMetadataChurn({ binDir: env().binDir, kubeconfig: env().admin, namespace: ns, lease, kind });
      churn.start();
      try {
        // The leader keeps leading through the churn: its compare-and-swap conflicts, it re-reads, it renews.
        await new Promise((r) => setTimeout(r, 2 * LEASE_MS)); // a few renewals under the churn
        assert.deepEqual(
          validLeaders(mine).map((l) => l.c.id),
          [first.c.id],
          'the leader held the lease while its metadata churned',
        );

        const killedAt = Date.now();
        first.c.proc.kill('SIGKILL');
        const bound = LEASE_MS + 2.2 * RETRY_MS + MARGIN_MS;
        const second = await waitFor('a new leader after SIGKILL', () => validLeaders(mine).find((l) => l.c !== first.c), bound + 20_000);
        const tookMs = Date.now() - killedAt;
        assert.ok(tookMs <= bound, `takeover took ${tookMs} ms under metadata churn (bound ${bound} ms)`);
        assert.ok(second.token > first.token);
        const writes = await churn.stop();
        assert.ok(writes >= 5, `the neighbour wrote ${writes} times`);
        console.log(`kubernetes: SIGKILL failover under ${kind} churn every 400 ms: ${tookMs} ms (${writes} neighbour writes)`);
      } finally {
        await churn.stop();
      }
      const meta = rawLease(ns, lease).metadata as { annotations?: Record<string, string>; labels?: Record<string, string> };
      const touched = (kind === 'annotate' ? meta.annotations : meta.labels) ?? {};
      assert.ok('neighbour.example/touch' in touched, "the neighbour's writes landed on the Lease, and leasehold kept them");
      for (const c of mine) c.proc.kill('SIGTERM');
      await Promise.all(mine.map((c) => c.proc.exited));
    });
  }
});
