/**
 * Starting the candidates the Kubernetes benches compare (bench/scenarios/kubernetes.ts, bench/scenarios/scale.ts):
 * a leasehold sidecar on the image's Node (with its flags, `--jitless` alone, or none) or the
 * client-go peer, on one lease with the same timings.
 */
import type { ImageNode } from './image-node.js';
import { buildTool } from '../../test/support/build-tool.js';
import type { KubeClient } from '../../src/kube/api-client.js';
import { CLI, start, type Proc } from '../../test/support/cli.js';

export type Impl = 'leasehold' | 'leasehold-jitless' | 'leasehold-jit' | 'client-go';

export interface Timings {
  lease: string;
  deadline: string;
  retry: string;
}

export const timingArgs = (t: Timings): string[] => ['--lease-duration', t.lease, '--renew-deadline', t.deadline, '--retry-period', t.retry];

/** Builds (or reuses from the cache) the client-go peer; returns its binary. */
export function buildGoCandidate(): string {
  return buildTool('build-go-candidate.sh');
}

export const createNamespace = (admin: KubeClient, name: string) =>
  admin.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } } });

export interface KubeCandidate {
  kubeconfig: string;
  namespace: string;
  lease: string;
  identity: string;
  timings: Timings;
}

/** One candidate on the Kubernetes backend; leasehold listens on a free port (probes and metrics on, as deployed). */
export function startKubeCandidate(impl: Impl, node: ImageNode, goBin: string, c: KubeCandidate): Proc {
  const common = ['--kubeconfig', c.kubeconfig, '--namespace', c.namespace, '--lease', c.lease, '--identity', c.identity, ...timingArgs(c.timings)];
  if (impl === 'client-go') return start(goBin, common);
  const sidecar = [CLI, 'sidecar', '--backend', 'kubernetes', ...common, '--listen', '127.0.0.1:0', '--log-level', process.env.BENCH_DEBUG ? 'debug' : 'info'];
  const flags = impl === 'leasehold' ? node.flags : impl === 'leasehold-jitless' ? ['--jitless'] : [];
  return start(node.bin, [...flags, ...sidecar]);
}
