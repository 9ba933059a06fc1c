/**
 * A sidecar's own counts, from its /metrics: its store requests
 * (`leasehold_backend_request_duration_seconds_count{op,result}`), which the shard groups' bench
 * reads for the lists a member sends and to check the store's count of writes against the
 * members'; and a shard member's reads of its group (`leasehold_shard_group_reads_total` and
 * `leasehold_shard_group_records_read_total`, by `read` = full | changes), for its whole-group
 * reads and the records it read; and its turns (`leasehold_shard_turns_total`, by `turn` =
 * planned | quiet).
 */

/**
 * Counts by key: "op result" for requests (e.g. "list ok", "update conflict"); "reads full",
 * "reads changes", "records full", "records changes" for a member's reads of its group; "turns
 * planned", "turns quiet" for its turns.
 */
export type RequestCounts = Map<string, number>;

/** The series read, and the key each line's labels make. */
const SERIES: { prefix: string; key: (line: string) => string | undefined }[] = [
  {
    prefix: 'leasehold_backend_request_duration_seconds_count{',
    key: (line) => {
      const op = /op="([^"]+)"/.exec(line)?.[1];
      const result = /result="([^"]+)"/.exec(line)?.[1];
      return op && result ? `${op} ${result}` : undefined;
    },
  },
  { prefix: 'leasehold_shard_group_reads_total{', key: (line) => readKey('reads', line) },
  { prefix: 'leasehold_shard_group_records_read_total{', key: (line) => readKey('records', line) },
  { prefix: 'leasehold_shard_turns_total{', key: (line) => turnKey(line) },
];

function turnKey(line: string): string | undefined {
  const turn = /turn="([^"]+)"/.exec(line)?.[1];
  return turn ? `turns ${turn}` : undefined;
}

function readKey(what: string, line: string): string | undefined {
  const read = /read="([^"]+)"/.exec(line)?.[1];
  return read ? `${what} ${read}` : undefined;
}

export function parseRequestCounts(metrics: string): RequestCounts {
  const out: RequestCounts = new Map();
  for (const line of metrics.split('\n')) {
    const series = SERIES.find((s) => line.startsWith(s.prefix));
    const key = series?.key(line);
    if (!key) continue;
    out.set(key, (out.get(key) ?? 0) + Number(line.split(' ').at(-1)));
  }
  return out;
}

/** The counts of the sidecar listening at `address` (host:port); undefined when it does not answer. */
export async function requestCounts(address: string): Promise<RequestCounts | undefined> {
  try {
    return parseRequestCounts(await (await fetch(`http://${address}/metrics`)).text());
  } catch {
    return undefined;
  }
}

/** after − before, summed over the keys `want` accepts. */
export function countsBetween(before: RequestCounts, after: RequestCounts, want: (key: string) => boolean): number {
  let n = 0;
  for (const [k, v] of after) if (want(k)) n += v - (before.get(k) ?? 0);
  return n;
}
