/**
 * A sidecar's own count of its store requests, from its /metrics
 * (`leasehold_backend_request_duration_seconds_count{op,result}`): the shard groups' bench reads
 * it for the lists a member sends, and to check the store's count of writes against the members'.
 */

/** Requests by "op result" (e.g. "list ok", "update conflict"). */
export type RequestCounts = Map<string, number>;

export function parseRequestCounts(metrics: string): RequestCounts {
  const out: RequestCounts = new Map();
  for (const line of metrics.split('\n')) {
    if (!line.startsWith('leasehold_backend_request_duration_seconds_count{')) continue;
    const op = /op="([^"]+)"/.exec(line)?.[1];
    const result = /result="([^"]+)"/.exec(line)?.[1];
    if (!op || !result) continue;
    const key = `${op} ${result}`;
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
