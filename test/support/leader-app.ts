/**
 * An app beside a sidecar, as a real process: it follows `GET /leader?watch=1` and prints one
 * JSON line once it follows the stream, and one per moment it starts or stops its leader work, with the wall time in fractional ms
 * (performance.timeOrigin + now(): one machine, one clock for every app of a test). When told
 * "not leader" it takes STOP_DELAY_MS to stop (a last batch to finish), then, with
 * POST_STOPPED=1, says so with `POST /leader/stopped?token=N` and the drain key its sidecar wrote
 * (DRAIN_KEY_FILE, read when it posts: a restarted sidecar writes a new one). With
 * STOP_AFTER_FILE it stops no sooner than that file exists: a test's other process has done what
 * it must while the drain waits (test/support/drain-neighbour.ts's first round). It exits when
 * the stream ends.
 *
 * Env: LEADER_URL (http://HOST:PORT of its sidecar), STOP_DELAY_MS (default 0), POST_STOPPED (0|1),
 * DRAIN_KEY_FILE (the sidecar's status directory's drain-key), STOP_AFTER_FILE (optional).
 * Run: node --import tsx test/support/leader-app.ts
 */
import { existsSync, readFileSync } from 'node:fs';

const base = process.env.LEADER_URL!;
const stopDelayMs = Number(process.env.STOP_DELAY_MS ?? '0');
const postStopped = process.env.POST_STOPPED === '1';
const keyFile = process.env.DRAIN_KEY_FILE;
const stopAfterFile = process.env.STOP_AFTER_FILE;

export interface AppEvent {
  event: 'following' | 'start' | 'stop' | 'posted';
  token: number;
  at: number;
  code?: number;
}

const now = () => performance.timeOrigin + performance.now();
const say = (e: AppEvent) => process.stdout.write(`${JSON.stringify(e)}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The token of the term whose work runs; null while none does. */
let working: number | null = null;
let stopping: Promise<void> = Promise.resolve();

async function stopWork(token: number): Promise<void> {
  if (stopDelayMs > 0) await sleep(stopDelayMs);
  while (stopAfterFile && !existsSync(stopAfterFile)) await sleep(5);
  say({ event: 'stop', token, at: now() });
  if (!postStopped) return;
  try {
    const headers: Record<string, string> = keyFile ? { authorization: `Bearer ${readFileSync(keyFile, 'utf8').trim()}` } : {};
    const r = await fetch(`${base}/leader/stopped?token=${token}`, { method: 'POST', headers });
    say({ event: 'posted', token, at: now(), code: r.status });
  } catch {
    say({ event: 'posted', token, at: now(), code: 0 });
  }
}

function onStatus(s: { isLeader: boolean; fencingToken: number | null }): void {
  if (s.isLeader && working === null && s.fencingToken !== null) {
    const token = s.fencingToken;
    // One term's work at a time: a new term starts once the last one's stop has been said.
    stopping = stopping.then(() => {
      working = token;
      say({ event: 'start', token, at: now() });
    });
  } else if (!s.isLeader && working !== null) {
    const token = working;
    working = null;
    stopping = stopping.then(() => stopWork(token));
  }
}

async function follow(): Promise<void> {
  const res = await fetch(`${base}/leader?watch=1`);
  if (!res.ok || !res.body) throw new Error(`stream answered ${res.status}`);
  const decoder = new TextDecoder();
  let buffered = '';
  say({ event: 'following', token: 0, at: now() });
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const event = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      const data = event
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trim())
        .join('');
      if (data) onStatus(JSON.parse(data) as { isLeader: boolean; fencingToken: number | null });
    }
  }
}

try {
  await follow();
} catch {
  // The sidecar went away (or never answered): stop as for "not leader".
}
if (working !== null) {
  const token = working;
  working = null;
  stopping = stopping.then(() => stopWork(token));
}
await stopping;
