import { reconnectDelayMs } from '../../util/backoff.js';

/** How long the API server keeps one watch open before ending it (we then reconnect), like client-go's 5–10 minutes. */
export const WATCH_TIMEOUT_SECONDS = 300;

/** What `open` is given: the calls that tie one watch to the loop keeping it open. */
export interface WatchTie {
  /** Call on every event: the watch works, so the next reconnect starts its backoff over. */
  readonly sawEvent: () => void;
  /** Call when the watch ends (the server's timeout, 410 Gone, a dropped connection). */
  readonly ended: () => void;
  /** True once the caller stopped the watch: events past it are not reported. */
  readonly stopped: boolean;
}

/**
 * Keeps one watch open until the returned function is called: `open` starts a watch and
 * resolves with its handle; when it fails or ends, `onHealth(false)` is reported and it is
 * opened again after a backoff (reconnectDelayMs). `onOpen` runs each time one is open, after
 * `onHealth(true)`. The lease's watch (store.ts) and the group's (group-store.ts) share it.
 */
export function keepWatching(open: (tie: WatchTie) => Promise<{ abort(): void }>, onOpen: () => void, onHealth?: (healthy: boolean) => void): () => void {
  let stopped = false;
  let current: { abort(): void } | null = null;
  let timer: NodeJS.Timeout | null = null;
  let failures = 0;
  const tie: WatchTie = {
    sawEvent: () => void (failures = 0),
    ended: () => reconnect(),
    get stopped() {
      return stopped;
    },
  };
  const connect = async () => {
    if (stopped) return;
    try {
      current = await open(tie);
      if (stopped) {
        current.abort();
        return;
      }
      onHealth?.(true);
      onOpen();
    } catch {
      reconnect();
    }
  };
  const reconnect = () => {
    current = null;
    if (stopped) return;
    onHealth?.(false);
    if (timer) return;
    failures++;
    timer = setTimeout(() => {
      timer = null;
      void connect();
    }, reconnectDelayMs(failures));
    timer.unref();
  };
  void connect();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    current?.abort();
  };
}
