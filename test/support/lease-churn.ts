import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';

const run = promisify(execFile);

export interface LeaseChurn {
  name: string;
  start(): void;
  /** Stops the loop and waits for its last write; returns how many writes landed. */
  stop(): Promise<number>;
}

/**
 * A neighbour on a Lease: another controller (a labeller, a policy engine, an inventory tool)
 * that annotates or labels it every `everyMs`, through kubectl as such tools do. Each write is
 * a new resourceVersion and leaves the leader-election record as it was. A Lease not there yet
 * is skipped, not an error: the neighbour only touches what exists.
 */
export function leaseMetadataChurn(o: {
  binDir: string;
  kubeconfig: string;
  namespace: string;
  lease: string;
  kind?: 'annotate' | 'label';
  everyMs?: number;
}): LeaseChurn {
  const kind = o.kind ?? 'annotate';
  let loop: Promise<void> | null = null;
  let running = false;
  let writes = 0;
  const once = async (i: number) => {
    const args = ['--kubeconfig', o.kubeconfig, '-n', o.namespace, kind, 'lease', o.lease, `neighbour.example/touch=n${i}`, '--overwrite'];
    try {
      await run(join(o.binDir, 'kubectl'), args);
      writes++;
    } catch {
      // absent for now, or the API server is down (another fault): try again next time
    }
  };
  return {
    name: `lease-${kind}-churn`,
    start() {
      if (loop) return;
      running = true;
      loop = (async () => {
        for (let i = 0; running; i++) {
          await once(i);
          await new Promise((r) => setTimeout(r, o.everyMs ?? 400));
        }
      })();
    },
    async stop() {
      running = false;
      await loop;
      loop = null;
      return writes;
    },
  };
}
