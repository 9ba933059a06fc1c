/**
 * Judges a fenced resource's rows after a chaos run (test/chaos/shard-chaos.ts), kept pure so
 * fenced-writes-judge.test.ts can show each judgement fails when it should:
 *   - per key, in commit order, every accepted write's token is at least every earlier one's
 *     (a lower token after a higher one is a stale write that landed);
 *   - every write an app was told was accepted is in the rows, and none it was told was refused.
 */

/** One row of the resource, as committed: `seq` is the commit order. */
export interface WriteRow {
  seq: number;
  key: string;
  token: number;
  writer: string;
}

/** One attempt as the app reported it. */
export interface WriteAttempt {
  key: string;
  token: number;
  writer: string;
  /** 'accepted', 'stale' (refused by the fence), or 'error: ...' (anything else: busy, a cut connection). */
  outcome: string;
}

export interface FencedWritesVerdict {
  accepted: number;
  stale: number;
  errors: number;
  /** Keys whose token went up at least once: terms that changed hands and wrote. */
  keysHandedOver: number;
  violations: string[];
}

export function judgeFencedWrites(rows: WriteRow[], attempts: WriteAttempt[]): FencedWritesVerdict {
  const violations: string[] = [];
  const highest = new Map<string, WriteRow>();
  const handedOver = new Set<string>();
  for (const r of [...rows].sort((a, b) => a.seq - b.seq)) {
    const h = highest.get(r.key);
    if (h && r.token < h.token) {
      violations.push(`key ${r.key}: token ${r.token} accepted (seq ${r.seq}, ${r.writer}) after token ${h.token} (seq ${h.seq}, ${h.writer})`);
    }
    if (h && r.token > h.token) handedOver.add(r.key);
    if (!h || r.token > h.token) highest.set(r.key, r);
  }
  const written = new Set(rows.map((r) => r.writer));
  let accepted = 0;
  let stale = 0;
  let errors = 0;
  for (const a of attempts) {
    if (a.outcome === 'accepted') {
      accepted++;
      if (!written.has(a.writer)) violations.push(`${a.writer} (key ${a.key}, token ${a.token}) was told accepted but is not in the resource`);
    } else if (a.outcome === 'stale') {
      stale++;
      if (written.has(a.writer)) violations.push(`${a.writer} (key ${a.key}, token ${a.token}) was told refused but is in the resource`);
    } else errors++;
  }
  return { accepted, stale, errors, keysHandedOver: handedOver.size, violations };
}
