import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { tempDir } from '../support/cli.js';
import { startControlPlane } from '../support/control-plane.js';
import { formatReport, runChaos } from '../chaos/run-chaos.js';
import { leaseMetadataChurn } from '../support/lease-churn.js';

// The short version of `npm run chaos` on Kubernetes. It starts its own control plane, so
// it can stop and start the API server and etcd under the candidates. The second run records
// every Lease call and fenced write and has the independent checker judge them (docs/testing.md
// "Recorded histories"); the metadata churn writes the Lease unrecorded, so it is left out there.
const SEED = Number(process.env.LEASEHOLD_CHAOS_SEED ?? Date.now() % 1_000_000);

describe('chaos on Kubernetes (short)', () => {
  const dir = tempDir('leasehold-chaos-');
  after(dir.cleanup);

  it(
    `5 candidates under kills, freezes, restarts, API server and etcd outages, metadata churn: no stale write, no overlapping terms, a leader again after every fault (seed ${SEED})`,
    { timeout: 180_000 },
    async () => {
      const cp = await startControlPlane();
      try {
        const backendArgs = ['--backend', 'kubernetes', '--kubeconfig', cp.adminKubeconfig, '--namespace', 'default', '--lease', 'chaos'];
        const r = await runChaos({
          backend: 'kubernetes',
          backendArgs,
          dir: dir.path,
          seed: SEED,
          seconds: 35, // six fault kinds: long enough for each to come once
          apiServer: { stop: cp.stopApiServer, start: cp.startApiServer },
          etcd: { stop: cp.stopEtcd, start: cp.startEtcd },
          neighbour: leaseMetadataChurn({ binDir: cp.binDir, kubeconfig: cp.adminKubeconfig, namespace: 'default', lease: 'chaos' }),
        });
        console.log(formatReport(r));
        assert.deepEqual(r.violations, [], `replay with LEASEHOLD_CHAOS_SEED=${SEED}`);
        assert.ok(r.accepted > 0, 'the apps did write');
        assert.ok(r.terms >= 2, 'leadership changed hands');
      } finally {
        await cp.stop();
      }
    },
  );

  it(
    `the same faults, every Lease call recorded: a linearizable compare-and-swap register and fenced resource (seed ${SEED})`,
    { timeout: 180_000 },
    async () => {
      const cp = await startControlPlane();
      const run = tempDir('leasehold-chaos-history-');
      try {
        const backendArgs = ['--backend', 'kubernetes', '--kubeconfig', cp.adminKubeconfig, '--namespace', 'default', '--lease', 'chaos'];
        const r = await runChaos({
          backend: 'kubernetes',
          backendArgs,
          dir: run.path,
          seed: SEED,
          seconds: 25,
          apiServer: { stop: cp.stopApiServer, start: cp.startApiServer },
          etcd: { stop: cp.stopEtcd, start: cp.startEtcd },
          history: true,
        });
        console.log(formatReport(r));
        assert.deepEqual(r.violations, [], `replay with LEASEHOLD_CHAOS_SEED=${SEED}`);
        assert.ok(r.terms >= 2, 'leadership changed hands');
        assert.match(r.history?.verdict ?? '', /register: [1-9]\d* operations on 1 keys: linearizable/);
        assert.match(r.history?.verdict ?? '', /fenced: [1-9]\d* operations on 1 keys: linearizable/);
      } finally {
        await cp.stop();
        run.cleanup();
      }
    },
  );
});
