/**
 * A neighbour on the network of a sidecar, as a real process: it can reach the sidecar's port
 * but not its status directory. It follows `GET /leader?watch=1` (open to anyone) to learn the
 * token of the term the sidecar leads, and once that term has ended it tries to end its drain:
 * `POST /leader/stopped?token=N` without a key, with a made-up one, and with the token as the
 * key, every INTERVAL_MS until the sidecar stops answering. One JSON line once it follows a
 * term (`{"following":N}`), then one per answer: `{"auth":"none"|"forged"|"token","code":401,"at":<epoch ms>}`.
 * With ROUND_FILE it creates that file once all three were answered once (for an app told to
 * stop no sooner: test/support/leader-app.ts STOP_AFTER_FILE).
 *
 * Env: LEADER_URL (http://HOST:PORT), INTERVAL_MS (default 20), ROUND_FILE (optional).
 * Run: node --import tsx test/support/drain-neighbour.ts
 */
import { writeFileSync } from 'node:fs';

const base = process.env.LEADER_URL!;
const roundFile = process.env.ROUND_FILE;
const intervalMs = Number(process.env.INTERVAL_MS ?? '20');
const now = () => performance.timeOrigin + performance.now();

async function endedToken(): Promise<number> {
  const res = await fetch(`${base}/leader?watch=1`);
  if (!res.ok || !res.body) throw new Error(`stream answered ${res.status}`);
  const decoder = new TextDecoder();
  let buffered = '';
  let led: number | null = null;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const data = buffered
        .slice(0, end)
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trim())
        .join('');
      buffered = buffered.slice(end + 2);
      if (!data) continue;
      const s = JSON.parse(data) as { isLeader: boolean; fencingToken: number | null };
      if (s.isLeader && led !== s.fencingToken) {
        led = s.fencingToken;
        process.stdout.write(`${JSON.stringify({ following: led })}\n`);
      } else if (!s.isLeader && led !== null) return led;
    }
  }
  throw new Error('the stream ended before a term it led ended');
}

const token = await endedToken();
const attempts: [string, Record<string, string>][] = [
  ['none', {}],
  ['forged', { authorization: `Bearer ${'0'.repeat(64)}` }],
  ['token', { authorization: `Bearer ${token}` }],
];
for (;;) {
  try {
    for (const [auth, headers] of attempts) {
      const r = await fetch(`${base}/leader/stopped?token=${token}`, { method: 'POST', headers });
      process.stdout.write(`${JSON.stringify({ auth, code: r.status, at: now() })}\n`);
    }
    if (roundFile) writeFileSync(roundFile, '');
  } catch {
    break; // the sidecar is gone
  }
  await new Promise((r) => setTimeout(r, intervalMs));
}
