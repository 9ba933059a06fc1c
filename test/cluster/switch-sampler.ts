/**
 * What a user sees of an operator install while its injection mode is switched
 * (mode-switch-checks.ts): a labelled pod's creation tried over and over (a server-side dry run,
 * so admission runs whole and nothing is stored), each answer kept with the injector that wrote
 * it, and one workload's Lease read alongside, so a refusal, a pod admitted without the sidecar
 * or a new term during the switch is seen however short it was.
 */
import { connect } from '../../src/kube/connect.js';
import { httpStatus } from '../../src/kube/api-errors.js';
import type { Admission } from '../support/switch-judge.js';

/** Only the webhook signs its injection (docs/operator.md): a sidecar without it is the policy's. */
const MARK = 'leasehold.io/injected-mark';

export interface LeaseSample {
  at: number;
  holder: string;
  transitions: number;
  renewTime: string;
}

interface PodJson {
  metadata: { annotations?: Record<string, string> };
  spec: { containers: { name: string }[]; initContainers?: { name: string }[] };
}

interface LeaseJson {
  spec: { holderIdentity?: string; leaseTransitions?: number; renewTime?: string };
}

export class SwitchSampler {
  readonly admissions: Admission[] = [];
  readonly leases: LeaseSample[] = [];
  private stopped = false;
  private readonly loops: Promise<void>[] = [];
  private readonly client;

  /** `labels` make the pod one this install injects; `lease` is the workload's Lease, read every `leaseEveryMs`. */
  constructor(
    kubeconfig: string,
    private readonly namespace: string,
    private readonly labels: Record<string, string>,
    private readonly lease: string,
  ) {
    this.client = connect({ kubeconfig, requestTimeoutMs: 20_000 }).client;
  }

  start(admitEveryMs = 50, leaseEveryMs = 250): void {
    this.loops.push(
      this.loop(admitEveryMs, () => this.admitOnce()),
      this.loop(leaseEveryMs, () => this.readLease()),
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops);
  }

  private async loop(everyMs: number, once: () => Promise<void>): Promise<void> {
    while (!this.stopped) {
      await once();
      await new Promise((r) => setTimeout(r, everyMs));
    }
  }

  private async admitOnce(): Promise<void> {
    const at = Date.now();
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { generateName: 'switch-probe-', labels: this.labels, annotations: { 'leasehold.io/lease': 'switch-probe' } },
      spec: {
        terminationGracePeriodSeconds: 1,
        containers: [{ name: 'app', image: 'localhost/busybox:local', imagePullPolicy: 'Never', command: ['sleep', '3600'] }],
      },
    };
    try {
      const admitted = await this.client.request<PodJson>('POST', `/api/v1/namespaces/${this.namespace}/pods?dryRun=All`, { body: pod });
      const sidecars = [...admitted.spec.containers, ...(admitted.spec.initContainers ?? [])].filter((c) => c.name === 'leasehold').length;
      const by = sidecars === 0 ? 'none' : sidecars > 1 ? 'twice' : admitted.metadata.annotations?.[MARK] ? 'webhook' : 'policy';
      this.admissions.push({ at, by });
    } catch (err) {
      const status = httpStatus(err);
      this.admissions.push({ at, by: 'refused', error: `${status ?? 'no answer'}: ${(err as Error).message}` });
    }
  }

  private async readLease(): Promise<void> {
    try {
      const l = await this.client.request<LeaseJson>('GET', `/apis/coordination.k8s.io/v1/namespaces/${this.namespace}/leases/${this.lease}`);
      this.leases.push({
        at: Date.now(),
        holder: l.spec.holderIdentity ?? '',
        transitions: l.spec.leaseTransitions ?? 0,
        renewTime: l.spec.renewTime ?? '',
      });
    } catch {
      // a slow answer under load: the next read counts
    }
  }

  /** Admissions by injector, e.g. `webhook 41, policy 63`, for the log. */
  tally(): string {
    const n = new Map<string, number>();
    for (const a of this.admissions) n.set(a.by, (n.get(a.by) ?? 0) + 1);
    return [...n].map(([k, v]) => `${k} ${v}`).join(', ');
  }
}
