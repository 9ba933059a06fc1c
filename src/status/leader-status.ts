/**
 * The status-file contract between the sidecar, which writes it (src/sidecar/status-publisher.ts,
 * from to-leader-status.ts), and the app, which reads it (status-reader.ts): the content of
 * status.json, as docs/status-files.md describes it. Only types live here, so either side can
 * import it.
 */
export interface LeaderStatus {
  lease: string;
  identity: string;
  /** The holder in the record last seen; '' when released, null before the first read. */
  holder: string | null;
  isLeader: boolean;
  /** This sidecar's token while it leads; null otherwise. */
  fencingToken: number | null;
  acquiredAt: string | null;
  renewedAt: string | null;
  /** Treat the status as "not leader" once this has passed: the sidecar may be frozen. */
  validUntil: string | null;
  /**
   * Why this candidate does not campaign (its app is not healthy, docs/health.md), and since
   * when (ISO); null while it campaigns, and always without a health source.
   */
  standingAside: { reason: string; since: string } | null;
  /**
   * When this sidecar stopped (ISO): its last write, after the step-down and the release. null
   * while it runs. A file that says so is a candidate no longer campaigning, not a standby.
   */
  stoppedAt: string | null;
  updatedAt: string;
}
