/**
 * The library API: what a Node app may import from `leasehold` (package.json `exports`).
 * - Leader election in-process, without a sidecar: LeaderElection (docs/library.md), and the
 *   app's health it may follow: probe options or a ManualHealth signal (docs/health.md).
 * - Shard groups in-process: ShardGroup, and shardOf, the key-to-shard function (docs/shards.md).
 * - Reading the sidecar's status volume: readLeadership and the LeaderStatus contract.
 * - The stores and their contract, for apps that pass an open store.
 * - The CLI's logger, for the election's `log` option.
 * - The coded errors (docs/errors.md).
 * Fencing at the protected resource lives in `leasehold/fencing`, which loads SQLite.
 */
export { LeaderElection, type LeaderCallbacks, type LeaderElectionOptions, type Leadership } from './election/leader-election.js';
export { ShardGroup, type ShardCallbacks, type ShardGroupOptions, type ShardOwnership } from './shards/shard-group.js';
export { shardOf, shardRange, shardBounds, shardSelector, ownedShardsSelector, fnv1a64, type ShardBounds } from './shards/key-to-shard.js';
export type { GroupStore, GroupRecord, GroupHeader, MemberSlot, ShardRecord, VersionedGroupRecord } from './backends/group-store.js';
export { ManualHealth } from './health/manual-health.js';
export type { Eligibility, HealthSnapshot, HealthState, StandAside } from './health/eligibility.js';
export type { ProbeOptions, ProbeTarget, ThresholdOptions } from './health/health-settings.js';
export { readLeadership, type LeadershipView } from './status/status-reader.js';
export { readOwnedShards, type OwnedShard, type OwnedShardsView, type ShardsStatus } from './status/shards-status.js';
export type { LeaderStatus } from './status/leader-status.js';
export { openStore, type StoreSettings, type BackendName } from './backends/open-store.js';
export type { CallOptions, LeaseRecord, LeaseStore, SuccessorClaim, SuccessorClaimSupport, VersionedRecord, WatchEvent } from './backends/lease-store.js';
export { createLogger, type Logger, type LogFields, type LoggerOptions } from './log.js';
export * from './errors.js';
