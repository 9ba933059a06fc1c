/**
 * Leadership terms as each sidecar reports them in its own JSON log (run with --log-level
 * debug): a term opens at "became leader" and its validity ends at the latest validUntil the
 * sidecar computed ("became leader" and each "renewed"), or earlier at "stopped leading".
 * [start, end] is therefore the span in which that sidecar's status could have told its app
 * "leader, token N". A killed or frozen sidecar never logs its step-down; its term ends at its
 * last validUntil, which is exactly how long its status file stays valid.
 */
export interface Term {
  id: string;
  token: number;
  /** ms since the epoch */
  start: number;
  end: number;
}

interface LogLine {
  time?: string;
  msg?: string;
  token?: number | null;
  validUntil?: string;
}

export function termsFromLog(id: string, stderr: string): Term[] {
  const out: Term[] = [];
  let open: Term | null = null;
  for (const line of stderr.split('\n')) {
    if (!line.startsWith('{')) continue;
    let e: LogLine;
    try {
      e = JSON.parse(line) as LogLine;
    } catch {
      continue; // a line cut by SIGKILL
    }
    const time = Date.parse(e.time ?? '');
    if (e.msg === 'became leader' && typeof e.token === 'number' && e.validUntil) {
      if (open) out.push(open);
      open = { id, token: e.token, start: time, end: Date.parse(e.validUntil) };
    } else if (e.msg === 'renewed' && open && e.token === open.token && e.validUntil) {
      open.end = Math.max(open.end, Date.parse(e.validUntil));
    } else if (e.msg === 'stopped leading' && open) {
      open.end = Math.min(open.end, time);
      out.push(open);
      open = null;
    }
  }
  if (open) out.push(open);
  return out;
}

/**
 * The checks over all terms: no two candidates' terms overlap, and tokens strictly increase
 * in the order terms start. Returns one line per violation.
 */
export function termViolations(terms: Term[]): string[] {
  const sorted = [...terms].sort((a, b) => a.start - b.start);
  const iso = (t: number) => new Date(t).toISOString().slice(11, 23);
  const show = (t: Term) => `${t.id} token ${t.token} [${iso(t.start)}, ${iso(t.end)}]`;
  const out: string[] = [];
  for (let i = 0; i < sorted.length; i++) {
    const a = sorted[i]!;
    if (i > 0 && a.token <= sorted[i - 1]!.token) out.push(`tokens did not increase: ${show(sorted[i - 1]!)} then ${show(a)}`);
    for (let j = i + 1; j < sorted.length && sorted[j]!.start < a.end; j++) {
      const b = sorted[j]!;
      if (b.id !== a.id) out.push(`overlapping leadership: ${show(a)} and ${show(b)}`);
    }
  }
  return out;
}
