import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * What every sidecar reports, a lease's candidate or a shard group's member: the store's
 * requests, the HTTP streams, the app's eligibility, and the process (prefixed `leasehold_`).
 */
export class SidecarMetrics {
  readonly registry = new Registry();
  readonly backendRequests: Histogram<'backend' | 'op' | 'result'>;
  readonly streamsOpen: Gauge;
  readonly streamsEnded: Counter<'reason'>;
  readonly appEligible: Gauge<'name'>;
  readonly statusWriteFailures: Counter<'name'>;
  readonly statusWritable: Gauge<'name'>;

  constructor() {
    const registers = [this.registry];
    this.backendRequests = new Histogram({
      name: 'leasehold_backend_request_duration_seconds',
      help: 'Latency of lease store requests by operation and result (ok, conflict, not_found, error).',
      labelNames: ['backend', 'op', 'result'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    this.streamsOpen = new Gauge({
      name: 'leasehold_http_streams',
      help: 'Server-sent-events streams of /leader (or /shards) open now.',
      registers,
    });
    this.streamsEnded = new Counter({
      name: 'leasehold_http_streams_rejected_total',
      help: 'Streams of /leader (or /shards) refused (reason="limit": too many open; reason="client_limit": too many from one address) or closed for not reading (reason="slow").',
      labelNames: ['reason'],
      registers,
    });
    this.appEligible = new Gauge({
      name: 'leasehold_app_eligible',
      help: "1 while the app's health lets this candidate campaign (or this member take shards), else 0; present only with a health source.",
      labelNames: ['name'],
      registers,
    });
    this.statusWriteFailures = new Counter({
      name: 'leasehold_status_write_failures_total',
      help: 'Writes of the status files (status.json and friends, or shards.json) that failed; present only with a status directory.',
      labelNames: ['name'],
      registers,
    });
    this.statusWritable = new Gauge({
      name: 'leasehold_status_writable',
      help: '1 while the last write of the status files succeeded, else 0 (this candidate stands aside: it neither takes nor keeps a lease or shards); present only with a status directory.',
      labelNames: ['name'],
      registers,
    });
    // The event-loop lag monitor samples every 100 ms instead of prom-client's 10 ms: a
    // sidecar that is idle most of the time should not wake 100 times a second to measure it.
    collectDefaultMetrics({ register: this.registry, prefix: 'leasehold_', eventLoopMonitoringPrecision: 100 });
    for (const reason of ['limit', 'client_limit', 'slow']) this.streamsEnded.inc({ reason }, 0);
  }
}

/**
 * A lease's candidate. client-go's two leader-election series keep their names, so dashboards
 * built for Go controllers work unchanged; everything else is `leasehold_*`.
 */
export class ElectionMetrics extends SidecarMetrics {
  /** client-go: 1 while this candidate leads, else 0. */
  readonly masterStatus: Gauge<'name'>;
  /** client-go: times the leader's optimistic renewal fell back to a read. */
  readonly slowpath: Counter<'name'>;
  readonly leadershipChanges: Counter<'lease' | 'event'>;
  readonly fencingToken: Gauge<'lease'>;
  readonly observedLeaderChanges: Counter<'lease'>;
  readonly renewFailures: Counter<'lease'>;
  readonly validUntil: Gauge<'lease'>;
  readonly takeover: Histogram<'lease'>;
  readonly healthStepDowns: Counter<'name'>;

  constructor() {
    super();
    const registers = [this.registry];
    this.masterStatus = new Gauge({
      name: 'leader_election_master_status',
      help: 'Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master.',
      labelNames: ['name'],
      registers,
    });
    this.slowpath = new Counter({
      name: 'leader_election_slowpath_total',
      help: 'Total number of slow path exercised in renewing leader leases.',
      labelNames: ['name'],
      registers,
    });
    this.leadershipChanges = new Counter({
      name: 'leasehold_leadership_transitions_total',
      help: 'Times this candidate became leader (event="acquired") or stopped leading (event="lost").',
      labelNames: ['lease', 'event'],
      registers,
    });
    this.fencingToken = new Gauge({
      name: 'leasehold_fencing_token',
      help: "The fencing token (leaseTransitions) of this candidate's current term, or of the last record seen.",
      labelNames: ['lease'],
      registers,
    });
    this.observedLeaderChanges = new Counter({
      name: 'leasehold_observed_leader_changes_total',
      help: 'Times this candidate saw the holder of the lease change (including releases).',
      labelNames: ['lease'],
      registers,
    });
    this.renewFailures = new Counter({
      name: 'leasehold_renew_failures_total',
      help: 'Renewal attempts by the leader that failed (it steps down when they fail for renewDeadline).',
      labelNames: ['lease'],
      registers,
    });
    this.validUntil = new Gauge({
      name: 'leasehold_leader_valid_until_seconds',
      help: 'Unix time until which the current leadership is valid without another renewal; 0 when not leading.',
      labelNames: ['lease'],
      registers,
    });
    this.takeover = new Histogram({
      name: 'leasehold_takeover_seconds',
      help: 'Time from the moment this candidate saw the lease free (released or expired) to its takeover.',
      labelNames: ['lease'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.healthStepDowns = new Counter({
      name: 'leasehold_health_step_downs_total',
      help: "Times this candidate stepped down as leader because its app's health failed.",
      labelNames: ['name'],
      registers,
    });
  }
}

/**
 * A shard group's member (docs/shards.md, "Metrics"): every series exists from the start, at 0,
 * so dashboards and alerts see zeros, not gaps.
 */
export class ShardMetrics extends SidecarMetrics {
  readonly shardsOwned: Gauge<'group'>;
  readonly shardChanges: Counter<'group' | 'event'>;
  readonly shardsOrphaned: Gauge<'group'>;
  readonly groupMembers: Gauge<'group'>;
  /** The member's reads of the group (InstrumentedGroupStore): whole-group ones apart from reads of changes, and the records each brought. */
  readonly groupReads: Counter<'group' | 'read'>;
  readonly shardTurns: Counter<'group' | 'turn'>;
  readonly groupRecordsRead: Counter<'group' | 'read'>;

  constructor(group: string, shards: number) {
    super();
    const registers = [this.registry];
    this.shardsOwned = new Gauge({
      name: 'leasehold_shards_owned',
      help: 'Shards this member owns now.',
      labelNames: ['group'],
      registers,
    });
    this.shardChanges = new Counter({
      name: 'leasehold_shard_changes_total',
      help: 'Shards this member took (event="gained") or gave up or lost (event="lost").',
      labelNames: ['group', 'event'],
      registers,
    });
    this.shardsOrphaned = new Gauge({
      name: 'leasehold_shards_orphaned',
      help: 'Shards this member sees with no live owner (free, never taken, or named by a session that is over).',
      labelNames: ['group'],
      registers,
    });
    this.groupMembers = new Gauge({
      name: 'leasehold_shard_group_members',
      help: 'Live members of the group taking shards (state active), as this member sees it.',
      labelNames: ['group'],
      registers,
    });
    this.groupReads = new Counter({
      name: 'leasehold_shard_group_reads_total',
      help: 'Reads of the group that answered: read="full" the whole group (a list, or a read by change answered in full), read="changes" what changed since the last read.',
      labelNames: ['group', 'read'],
      registers,
    });
    this.shardTurns = new Counter({
      name: 'leasehold_shard_turns_total',
      help: 'Turns of this member with a session: turn="planned" planned its shards, turn="quiet" did not, nothing but heartbeats having changed since a plan that found nothing to do.',
      labelNames: ['group', 'turn'],
      registers,
    });
    this.groupRecordsRead = new Counter({
      name: 'leasehold_shard_group_records_read_total',
      help: 'Records of the group those reads brought, by read="full" or "changes".',
      labelNames: ['group', 'read'],
      registers,
    });
    for (const read of ['full', 'changes']) {
      this.groupReads.inc({ group, read }, 0);
      this.groupRecordsRead.inc({ group, read }, 0);
    }
    for (const turn of ['planned', 'quiet']) this.shardTurns.inc({ group, turn }, 0);
    this.shardsOwned.set({ group }, 0);
    this.shardChanges.inc({ group, event: 'gained' }, 0);
    this.shardChanges.inc({ group, event: 'lost' }, 0);
    // Until the first list says otherwise, no shard is known to have an owner.
    this.shardsOrphaned.set({ group }, shards);
    this.groupMembers.set({ group }, 0);
  }
}
