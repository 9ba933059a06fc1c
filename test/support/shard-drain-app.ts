/**
 * An app beside a `leasehold sidecar --shards` process, as the chart's example app behaves
 * (deploy/helm/leasehold/files/example-app.sh), in the test's own process: it follows the
 * sidecar's `GET /shards?watch=1` stream and, for each shard the stream stops listing, says at
 * once that the shard's work stopped (`POST /shards/stopped?shard=S&token=T`, with the drain key
 * from the status directory). A new stream is opened when one ends (the sidecar restarted).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ShardDrainApp {
  /** Each report the sidecar answered 200: the shard and its token, and when (ms since the epoch). */
  reported: { shard: number; token: number; at: number }[];
  /** Reports the sidecar refused or that failed, as one line each (none is expected). */
  refused: string[];
  stop: () => void;
}

export function followShards(url: string, statusDir: string): ShardDrainApp {
  const app: ShardDrainApp = { reported: [], refused: [], stop: () => abort.abort() };
  const abort = new AbortController();
  let owned = new Map<number, number>();

  const report = async (shard: number, token: number) => {
    try {
      const key = readFileSync(join(statusDir, 'drain-key'), 'utf8').trim();
      const res = await fetch(`${url}/shards/stopped?shard=${shard}&token=${token}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}` },
        signal: abort.signal,
      });
      const body = await res.text();
      if (res.status === 200) app.reported.push({ shard, token, at: Date.now() });
      else app.refused.push(`shard ${shard} token ${token}: ${res.status} ${body.trim()}`);
    } catch (err) {
      if (!abort.signal.aborted) app.refused.push(`shard ${shard} token ${token}: ${(err as Error).message}`);
    }
  };

  const onEvent = (json: string) => {
    const s = JSON.parse(json) as { owned: { shard: number; fencingToken: number }[] };
    const now = new Map(s.owned.map((o) => [o.shard, o.fencingToken]));
    for (const [shard, token] of owned) if (now.get(shard) !== token) void report(shard, token);
    owned = now;
  };

  void (async () => {
    while (!abort.signal.aborted) {
      try {
        const res = await fetch(`${url}/shards?watch=1`, { signal: abort.signal });
        const reader = res.body!.getReader() as ReadableStreamDefaultReader<Uint8Array>;
        const decoder = new TextDecoder();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += decoder.decode(value, { stream: true });
          for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
            const line = buf.slice(0, i);
            buf = buf.slice(i + 1);
            if (line.startsWith('data: ')) onEvent(line.slice(6));
          }
        }
      } catch {
        // The sidecar is not listening (yet, or any more): try again below.
      }
      // The stream ended: this app no longer knows what it owns, so it stops all of it.
      for (const [shard, token] of owned) void report(shard, token);
      owned = new Map();
      if (!abort.signal.aborted) await new Promise((r) => setTimeout(r, 200));
    }
  })();
  return app;
}
