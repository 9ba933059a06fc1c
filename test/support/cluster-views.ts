/**
 * What a cluster says about leadership, read the way users would see it, and the judgements
 * both real-cluster tiers make on it: the single-node tier (test/cluster) and kind
 * (test/kind). The judgements are pure and unit-tested in cluster-views.test.ts, so a check
 * that could never fail shows up there.
 */

export interface PodView {
  name: string;
  ready: boolean;
  deleting: boolean;
  /** The pod's `leasehold.io/role` label (podLabel mode), if any. */
  role?: string;
  /** /leader/status.json of the pod's sidecar, or null when it could not be read. */
  status: { isLeader: boolean; fencingToken: number | null; validUntil: string | null; holder?: string | null } | null;
  /** The leader's name as the pod's sidecar serves it on GET /leader, or null when unread. */
  httpLeader?: string | null;
}

export interface LeaseView {
  holderIdentity?: string;
  leaseTransitions?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseDurationSeconds?: number;
}

/**
 * Whether a handover was a release, not an expiry: the new term (`after`) began before the old
 * one, as read before the leader was deleted (`before`), could expire. The old holder renews
 * until it stops, so its real expiry is no earlier than that read's. Both times come from the
 * sidecars' clocks on one node. A problem in words, or null. This, not a figure in ms (which
 * counts kubectl's polling and the kubelet's pace), is what a test asserts about a handover.
 */
export function releasedBeforeExpiry(before: LeaseView, after: LeaseView): string | null {
  const renewed = Date.parse(before.renewTime ?? '');
  const acquired = Date.parse(after.acquireTime ?? '');
  if (!Number.isFinite(renewed) || !Number.isFinite(acquired) || before.leaseDurationSeconds === undefined) {
    return `cannot judge: renewTime ${before.renewTime}, leaseDurationSeconds ${before.leaseDurationSeconds}, new acquireTime ${after.acquireTime}`;
  }
  const expiry = renewed + before.leaseDurationSeconds * 1000;
  return acquired < expiry
    ? null
    : `the new term began at ${after.acquireTime}, not before the old one could expire (${new Date(expiry).toISOString()}): a takeover by expiry, not a release`;
}

/** One endpoint of an EndpointSlice, as `kubectl get endpointslices -o json` gives it. */
export interface EndpointView {
  targetRef?: { name?: string };
  conditions?: { ready?: boolean; terminating?: boolean };
}

export type Kubectl = (...args: string[]) => string;

/** Reads every pod of a Helm release: readiness, role label, status file and /leader over HTTP. */
export function readPods(kubectl: Kubectl, release: string, opts: { port?: number; http?: boolean } = {}): PodView[] {
  const list = JSON.parse(kubectl('get', 'pods', '-l', `app.kubernetes.io/instance=${release}`, '-o', 'json')) as {
    items: {
      metadata: { name: string; deletionTimestamp?: string; labels?: Record<string, string> };
      status: { conditions?: { type: string; status: string }[] };
    }[];
  };
  return list.items.map((p) => {
    const view: PodView = {
      name: p.metadata.name,
      deleting: Boolean(p.metadata.deletionTimestamp),
      ready: p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
      status: null,
      httpLeader: null,
    };
    const role = p.metadata.labels?.['leasehold.io/role'];
    if (role !== undefined) view.role = role;
    try {
      view.status = JSON.parse(kubectl('exec', p.metadata.name, '-c', 'app', '--', 'cat', '/leader/status.json')) as PodView['status'];
    } catch {
      // not running yet, or the file is between writes
    }
    if (opts.http) {
      try {
        const url = `http://127.0.0.1:${opts.port ?? 4040}/leader`;
        view.httpLeader = (JSON.parse(kubectl('exec', p.metadata.name, '-c', 'app', '--', 'wget', '-qO-', url)) as { name: string | null }).name;
      } catch {
        // not serving yet
      }
    }
    return view;
  });
}

/** The endpoints of a Service (by its EndpointSlices), without those of terminating pods. */
export function readServiceEndpoints(kubectl: Kubectl, service: string): EndpointView[] {
  const slices = JSON.parse(kubectl('get', 'endpointslices', '-l', `kubernetes.io/service-name=${service}`, '-o', 'json')) as {
    items: { endpoints?: EndpointView[] | null }[];
  };
  return slices.items.flatMap((s) => s.endpoints ?? []);
}

/**
 * The single leader, judged every way that must agree: the Lease's holder is a live pod of
 * the release; that pod's status file says leader with a validUntil still ahead and the
 * Lease's token; no other pod's status says leader; and, when asked, every pod's status file
 * and /leader name the holder, and exactly the holder is labelled `leader` (podLabel mode).
 * Returns the leader's name and token, or what disagrees.
 */
export function singleLeader(
  pods: PodView[],
  lease: LeaseView,
  now: Date,
  want: { podLabel?: boolean; everyViewNamesHolder?: boolean } = {},
): { leader?: string; token?: number; problem?: string } {
  const live = pods.filter((p) => !p.deleting);
  const holder = live.find((p) => p.name === lease.holderIdentity);
  if (!holder) return { problem: `the Lease holder ${lease.holderIdentity ?? '(none)'} is not a live pod of the release` };
  const claiming = live.filter((p) => p.status?.isLeader && p.status.validUntil !== null && Date.parse(p.status.validUntil) > now.getTime());
  if (claiming.length !== 1) return { problem: `${claiming.length} pods claim leadership: ${claiming.map((p) => p.name).join(', ') || 'none'}` };
  if (claiming[0]!.name !== holder.name) return { problem: `${claiming[0]!.name} claims leadership but the Lease names ${holder.name}` };
  if (claiming[0]!.status!.fencingToken !== lease.leaseTransitions) {
    return { problem: `token mismatch: status ${claiming[0]!.status!.fencingToken}, Lease ${lease.leaseTransitions}` };
  }
  if (want.everyViewNamesHolder) {
    for (const p of live) {
      if (p.status?.holder !== holder.name) return { problem: `${p.name}'s status file names ${p.status?.holder ?? '(unread)'} as holder` };
      if (p.httpLeader !== holder.name) return { problem: `${p.name}'s /leader names ${p.httpLeader ?? '(unread)'}` };
    }
  }
  if (want.podLabel) {
    const labelled = live.filter((p) => p.role === 'leader');
    if (labelled.length !== 1 || labelled[0]!.name !== holder.name) {
      return { problem: `pods labelled leader: ${labelled.map((p) => p.name).join(', ') || 'none'}; the Lease names ${holder.name}` };
    }
    const unlabelled = live.filter((p) => p.name !== holder.name && p.role !== 'follower');
    if (unlabelled.length > 0) return { problem: `not labelled follower: ${unlabelled.map((p) => p.name).join(', ')}` };
  }
  return { leader: holder.name, token: lease.leaseTransitions };
}

/**
 * Whether a Service routes to exactly one pod, the leader: among the endpoints of pods that
 * are not terminating, exactly one, naming the leader, and it is ready.
 */
export function onlyEndpointIs(endpoints: EndpointView[], leader: string): { ok: boolean; problem?: string } {
  const live = endpoints.filter((e) => !e.conditions?.terminating);
  const names = live.map((e) => e.targetRef?.name ?? '(no target)');
  if (live.length !== 1 || names[0] !== leader) return { ok: false, problem: `endpoints ${names.join(', ') || 'none'}; the leader is ${leader}` };
  if (live[0]!.conditions?.ready !== true) return { ok: false, problem: `the endpoint of ${leader} is not ready` };
  return { ok: true };
}

/** Every live pod Ready: with the chart's default readiness (elected-any) all pods are. */
export function allReady(pods: PodView[], want: number): boolean {
  const live = pods.filter((p) => !p.deleting);
  return live.length === want && live.every((p) => p.ready);
}

/** With readyWhen=leader: the live pods that are Ready are exactly the leader. */
export function onlyLeaderReady(pods: PodView[], leader: string): boolean {
  const ready = pods.filter((p) => !p.deleting && p.ready).map((p) => p.name);
  return ready.length === 1 && ready[0] === leader;
}

/**
 * How long a deleted leader pod may take to be replaced as leader. Deletion sends SIGTERM, so
 * the sidecar releases and a standby takes over at once through its watch; if the release were
 * lost, the lease would expire: leaseDuration + 2.2 × retryPeriod, plus scheduling slack.
 */
export function failoverBoundMs(leaseDurationMs: number, retryPeriodMs: number, slackMs = 10_000): number {
  return leaseDurationMs + 2.2 * retryPeriodMs + slackMs;
}

/** One pod of a release in shard mode: its readiness and its sidecar's shards.json (null when unread). */
export interface MemberView {
  name: string;
  ready: boolean;
  deleting: boolean;
  shards: { members: number; owned: number[]; validUntil: string | null } | null;
}

/**
 * Whether a shard group has settled on `members` live pods: each Ready, each shards.json seeing
 * that many members, within its validUntil, owning floor(N/M) or ceil(N/M) shards, and the shards
 * they own together are 0..N-1, each once. Null when settled, else what is not yet so.
 */
export function shardsSettled(pods: MemberView[], shards: number, members: number, now: Date): string | null {
  const live = pods.filter((p) => !p.deleting);
  if (live.length !== members) return `${live.length} live pods, not ${members}`;
  const low = Math.floor(shards / members);
  const high = Math.ceil(shards / members);
  const owners = new Map<number, string>();
  for (const p of live) {
    if (!p.ready) return `${p.name} is not Ready`;
    const s = p.shards;
    if (!s) return `${p.name}'s shards.json is unread`;
    if (s.validUntil === null || Date.parse(s.validUntil) <= now.getTime()) return `${p.name}'s shards.json is past its validUntil (${s.validUntil})`;
    if (s.members !== members) return `${p.name} sees ${s.members} members`;
    if (s.owned.length < low || s.owned.length > high) return `${p.name} owns ${s.owned.length} shards, not ${low === high ? low : `${low} or ${high}`}`;
    for (const shard of s.owned) {
      const other = owners.get(shard);
      if (other !== undefined) return `shard ${shard} is owned by ${other} and ${p.name}`;
      owners.set(shard, p.name);
    }
  }
  const missing = Array.from({ length: shards }, (_, i) => i).filter((i) => !owners.has(i));
  return missing.length > 0 ? `shards without an owner: ${missing.join(' ')}` : null;
}
