/**
 * A real single-node Kubernetes for one test run or benchmark (test/cluster/cluster.sh): brought
 * up with the image and the node images, torn down by `down()` whatever happened, with kubectl
 * and helm pointed at it. Shared by the cluster tier (cluster.test.ts) and `npm run bench`
 * (bench/scenarios/pod-memory.ts).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from './cli.js';
import { buildTool } from './build-tool.js';

export const CHART = join(REPO, 'deploy/helm/leasehold');

/** The `--set` flags that point the chart at the locally built images (no registry here). */
export const LOCAL_IMAGES = [
  'leasehold.image.repository=leasehold',
  'leasehold.image.tag=dev',
  'leasehold.image.pullPolicy=Never',
  'app.image.repository=localhost/busybox',
  'app.image.tag=local',
  'app.image.pullPolicy=Never',
].flatMap((s) => ['--set', s]);

/** The chart's sidecar memory request and limit, MiB (values.yaml), so the table shows what users get. */
export function chartMemory(): { requestMB: number; limitMB: number } {
  const values = readFileSync(join(CHART, 'values.yaml'), 'utf8');
  const block = values.slice(values.indexOf('\nleasehold:'));
  const mi = (re: RegExp) => Number(re.exec(block)?.[1] ?? NaN);
  return { requestMB: mi(/requests:\s*\n(?:\s+cpu: \S+\n)?\s+memory: (\d+)Mi/), limitMB: mi(/limits:\s*\n\s+memory: (\d+)Mi/) };
}

/**
 * iptables matches for a pod's traffic to the API server (cluster.sh): the in-cluster address
 * of kubernetes.default, and the API server's own address and port. Probes from the node to the
 * pod and their answers are not matched.
 */
export const API_SERVER_ADDRESSES = [
  ['-d', '10.96.0.1', '-p', 'tcp', '--dport', '443'],
  ['-d', '10.244.77.1', '-p', 'tcp', '--dport', '16443'],
];

export class ClusterSession {
  readonly dir: string;
  private readonly parent: string;
  kubeconfig = '';
  private helmBin = '';

  constructor(readonly namespace = 'default') {
    this.parent = mkdtempSync('/tmp/leasehold-cluster-');
    this.dir = join(this.parent, 'cluster');
  }

  /** Brings the cluster up (cached binaries and images are reused) and finds helm. */
  up(): void {
    this.kubeconfig = lastLine(
      execFileSync('bash', [join(REPO, 'test/cluster/cluster.sh'), 'up', this.dir], { stdio: ['ignore', 'pipe', 'inherit'], timeout: 1_800_000 }),
    );
    this.helmBin = buildTool('build-helm.sh');
  }

  /** Tears everything down (pods, daemons, mounts, network, sysctls) and removes the folder. */
  down(): void {
    try {
      execFileSync('bash', [join(REPO, 'test/cluster/cluster.sh'), 'down', this.dir], { stdio: 'inherit', timeout: 300_000 });
    } finally {
      rmSync(this.parent, { recursive: true, force: true });
    }
  }

  get kubectlPath(): string {
    return join(this.dir, 'bin', 'kubectl');
  }

  /** helm's binary, for a check that must keep working while helm runs (`helm` blocks). */
  get helmPath(): string {
    return this.helmBin;
  }

  /** kubectl in the session's namespace; throws with its stderr when it fails. */
  kubectl = (...args: string[]): string => {
    const r = spawnSync(this.kubectlPath, ['--kubeconfig', this.kubeconfig, '-n', this.namespace, ...args], { encoding: 'utf8', timeout: 120_000 });
    if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };

  helm = (...args: string[]): string =>
    execFileSync(this.helmBin, ['--kubeconfig', this.kubeconfig, '-n', this.namespace, ...args], { encoding: 'utf8', timeout: 300_000 });

  /**
   * The working set of one container, from its memory cgroup as the kubelet computes it:
   * usage minus inactive file pages (cgroup v1 or v2).
   */
  workingSetBytes(pod: string, container: string): number {
    const read = (f: string) => this.kubectl('exec', pod, '-c', container, '--', 'cat', f).trim();
    try {
      const usage = Number(read('/sys/fs/cgroup/memory/memory.usage_in_bytes'));
      return usage - Number(/^total_inactive_file (\d+)$/m.exec(read('/sys/fs/cgroup/memory/memory.stat'))![1]);
    } catch {
      const usage = Number(read('/sys/fs/cgroup/memory.current'));
      return usage - Number(/^inactive_file (\d+)$/m.exec(read('/sys/fs/cgroup/memory.stat'))![1]);
    }
  }

  /** Loads an image tar (docker-archive) into the node's containerd, for pods with pullPolicy Never. */
  importImage(tar: string): void {
    execFileSync('ctr', ['-a', join(this.dir, 'containerd', 'containerd.sock'), '-n', 'k8s.io', 'images', 'import', '--no-unpack', tar], { stdio: 'ignore' });
  }

  /** `kubectl apply -f -` of a manifest, in the session's namespace unless named. */
  apply(manifest: string, namespace = this.namespace): void {
    const r = spawnSync(this.kubectlPath, ['--kubeconfig', this.kubeconfig, '-n', namespace, 'apply', '-f', '-'], {
      input: manifest,
      encoding: 'utf8',
      timeout: 120_000,
    });
    if (r.status !== 0) throw new Error(`kubectl apply: ${r.stderr}`);
  }

  /** A container's id in containerd (for ctr), the pod in the session's namespace unless named. */
  containerId(pod: string, container: string, namespace = this.namespace): string {
    const status = JSON.parse(this.kubectl('get', 'pod', pod, '-n', namespace, '-o', 'json')) as {
      status: { containerStatuses?: { name: string; containerID: string }[]; initContainerStatuses?: { name: string; containerID: string }[] };
    };
    const all = [...(status.status.containerStatuses ?? []), ...(status.status.initContainerStatuses ?? [])];
    return all.find((c) => c.name === container)!.containerID.replace(/^containerd:\/\//, '');
  }

  /** The host PID of a container's process (its task in containerd), e.g. for nsenter; the pod in the session's namespace unless named. */
  containerPid(pod: string, container: string, namespace = this.namespace): number {
    const status = JSON.parse(this.kubectl('get', 'pod', pod, '-n', namespace, '-o', 'json')) as {
      status: { containerStatuses?: { name: string; containerID: string }[]; initContainerStatuses?: { name: string; containerID: string }[] };
    };
    const all = [...(status.status.containerStatuses ?? []), ...(status.status.initContainerStatuses ?? [])];
    const id = all.find((c) => c.name === container)!.containerID.replace(/^containerd:\/\//, '');
    const tasks = execFileSync('ctr', ['-a', join(this.dir, 'containerd', 'containerd.sock'), '-n', 'k8s.io', 'tasks', 'ls'], { encoding: 'utf8' });
    const line = tasks.split('\n').find((l) => l.startsWith(`${id} `));
    if (!line) throw new Error(`no containerd task for ${pod}/${container} (${id})`);
    return Number(line.trim().split(/\s+/)[1]);
  }

  /** When a container of a pod last started (its running state), as epoch ms. */
  containerStartedAt(pod: string, container: string, namespace = this.namespace): number {
    const status = JSON.parse(this.kubectl('get', 'pod', pod, '-n', namespace, '-o', 'json')) as {
      status: { containerStatuses: { name: string; state: { running?: { startedAt: string } } }[] };
    };
    return Date.parse(status.status.containerStatuses.find((c) => c.name === container)!.state.running!.startedAt);
  }
}

function lastLine(out: Buffer): string {
  return out.toString().trim().split('\n').at(-1)!;
}
