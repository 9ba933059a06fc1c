/**
 * One shard group's Leases as the API server's watch tells them (docs/design.md, "Shard reads by
 * change"): what KubernetesGroupStore.readGroupChanges answers from, so an idle group costs its
 * members the events of the others' heartbeats, not a LIST of N + M + 1 Leases per hint.
 *
 * A LIST fills the copy at the first read, and again only when the watch cannot resume: it
 * ended with 410 Gone (the server no longer has events from our resourceVersion), or a resume
 * failed. A watch that ended otherwise (the server's timeout, a dropped connection) resumes from
 * the last resourceVersion seen, event or bookmark (`allowWatchBookmarks`), with no LIST. Every
 * event is numbered (`seq`); a cursor is `ID.EPOCH.SEQ`: this copy's random id (a cursor from
 * another process or from before a restart is not continued from), the count of LISTs that filled
 * it (after a relist every caller reads the copy in full), and the last event the caller saw.
 * A deletion is an event too: a caller whose cursor is older than the last deletion is answered
 * in full (from the copy, with no request), so it sees the record gone at its next read.
 *
 * The copy may lag behind the store (a slow or stalled watch): safe for compare-and-swap writes
 * (a stale version loses), and the callers that judge from time passing re-read with a LIST first
 * (GroupStore.changesFromWatch). A read waits until the copy holds this store's own last write in
 * the group, so a member never reads its own take or heartbeat undone.
 */
import { randomUUID } from 'node:crypto';
import type { KubeClient } from '../../kube/api-client.js';
import { httpReason, httpStatus } from '../../kube/api-errors.js';
import { BackendError } from '../../errors.js';
import { abortReason, throwIfAborted } from '../../abort.js';
import { WATCH_TIMEOUT_SECONDS, keepWatching } from './kept-watch.js';
import type { Lease, LeaseList } from './lease-object.js';

/** What one read of the copy gives: the Leases changed since the cursor, or all of them (`full`). */
export interface WatchedChanges {
  leases: Lease[];
  cursor: string;
  full: boolean;
  total: number;
}

/** How the cache's requests are counted (tests): a LIST fills the copy, a watch (re)connects. */
export interface WatchCounts {
  lists: number;
  watches: number;
}

export class GroupWatchCache {
  private readonly id = randomUUID().slice(0, 8);
  private readonly leases = new Map<string, { lease: Lease; seq: number }>();
  private seq = 0;
  /** The seq of the last deletion: a caller's cursor older than it reads in full. */
  private deletedSeq = 0;
  /** How many LISTs have filled the copy; 0 until the first. */
  private epoch = 0;
  /** The last resourceVersion seen (LIST, event, bookmark): where a resume starts. */
  private rv: string | undefined;
  /** The next (re)connect must LIST first: the watch cannot resume from `rv`. */
  private mustList = true;
  /** The LIST in flight, shared by the reads that wait for it. */
  private listing: Promise<void> | null = null;
  /** The highest resourceVersion this store wrote in the group: a read waits until the copy holds it. */
  private ownWrite = 0n;
  private readonly waiters = new Set<() => void>();
  private readonly hints = new Set<() => void>();
  private readonly healths = new Set<(healthy: boolean) => void>();
  private stopWatch: (() => void) | null = null;
  private closed = false;
  /** Someone has read the copy: its watch runs until close(). */
  private everRead = false;
  readonly counts: WatchCounts = { lists: 0, watches: 0 };

  constructor(
    private readonly client: KubeClient,
    private readonly path: string,
    private readonly selector: string,
    /** Whether a Lease is one of the group's records (its name and labels): no other is kept, so the copy is bounded. */
    private readonly keep: (lease: Lease) => boolean,
    /** Each Lease the copy learns or forgets, so the store's writes carry its fields and uid. */
    private readonly remember: (lease: Lease) => void,
    private readonly forget: (name: string) => void,
  ) {}

  /** The changes since `cursor` (all, when it cannot be continued from), once the copy holds this store's own writes. */
  async read(cursor: string | undefined, signal?: AbortSignal): Promise<WatchedChanges> {
    // Only a read with no watch keeping the copy (the first) waits for a LIST; a relist after a
    // watch that cannot resume is the watch loop's, and reads meanwhile answer from the copy as
    // it is (safe: see above).
    this.everRead = true;
    if (this.epoch === 0 || this.stopWatch === null) await this.list(signal);
    this.ensureWatch();
    await this.caughtUp(signal);
    const since = this.continueFrom(cursor);
    const all = [...this.leases.values()];
    const out = `${this.id}.${this.epoch}.${this.seq}`;
    if (since === null) return { leases: all.map((e) => e.lease), cursor: out, full: true, total: all.length };
    return { leases: all.filter((e) => e.seq > since).map((e) => e.lease), cursor: out, full: false, total: all.length };
  }

  /** A write of ours landed at `resourceVersion`: later reads wait for the watch to bring it. */
  wrote(resourceVersion: string | undefined): void {
    const v = numeric(resourceVersion);
    if (v !== null && v > this.ownWrite) this.ownWrite = v;
  }

  /** Hints at every change the watch brings (and at each reconnect), until the returned function is called. */
  subscribe(onChange: () => void, onHealth?: (healthy: boolean) => void): () => void {
    this.hints.add(onChange);
    if (onHealth) this.healths.add(onHealth);
    this.ensureWatch();
    return () => {
      this.hints.delete(onChange);
      if (onHealth) this.healths.delete(onHealth);
      // Watched for hints alone, and nobody left: the watch ends (a later use lists again). Once
      // read, the copy is kept until the store closes: a read must never answer from a copy no
      // watch keeps.
      if (this.hints.size === 0 && !this.everRead) {
        this.stopWatch?.();
        this.stopWatch = null;
        this.mustList = true;
      }
    };
  }

  /** Stops the watch (the store is closing). */
  close(): void {
    this.closed = true;
    this.stopWatch?.();
    this.stopWatch = null;
    for (const w of this.waiters) w();
  }

  /** The seq a cursor continues from, or null when it cannot be (another copy, a relist since, a deletion since, malformed). */
  private continueFrom(cursor: string | undefined): number | null {
    const m = cursor === undefined ? null : /^([0-9a-f]{8})\.(\d{1,15})\.(\d{1,15})$/.exec(cursor);
    if (!m || m[1] !== this.id || Number(m[2]) !== this.epoch) return null;
    const seq = Number(m[3]);
    return seq > this.seq || seq < this.deletedSeq ? null : seq;
  }

  /** One LIST fills the copy; reads that come meanwhile share it. */
  private list(signal?: AbortSignal): Promise<void> {
    this.listing ??= this.fill().finally(() => (this.listing = null));
    return abortable(this.listing, signal);
  }

  private async fill(): Promise<void> {
    this.counts.lists++;
    const list = await this.client.request<LeaseList>('GET', `${this.path}?${new URLSearchParams({ labelSelector: this.selector }).toString()}`);
    const rv = list.metadata?.resourceVersion;
    if (!rv) throw new BackendError(`list of Leases ${this.selector} came back without a resourceVersion`);
    for (const name of this.leases.keys()) this.forget(name);
    this.leases.clear();
    this.epoch++;
    for (const lease of list.items ?? []) this.put(lease);
    this.rv = rv;
    this.mustList = false;
    this.wake();
  }

  /** Starts the watch loop once; its first connect lists when no read has yet. */
  private ensureWatch(): void {
    if (this.stopWatch || this.closed) return;
    this.stopWatch = keepWatching(
      async (tie) => {
        if (this.mustList) await this.list();
        if (tie.stopped) return { abort: () => {} };
        this.counts.watches++;
        try {
          return await this.client.watch(
            this.path,
            { labelSelector: this.selector, resourceVersion: this.rv!, allowWatchBookmarks: 'true', timeoutSeconds: String(WATCH_TIMEOUT_SECONDS) },
            (e) => {
              tie.sawEvent();
              if (!tie.stopped) this.apply(e.type, e.object as Lease);
            },
            (err) => {
              // 410 Gone (reason Expired): the server has no events from our resourceVersion any more.
              if (err && (httpStatus(err) === 410 || httpReason(err) === 'Expired' || httpReason(err) === 'Gone')) this.mustList = true;
              tie.ended();
            },
          );
        } catch (err) {
          // A resume the server refused (410 at once, or any failure): the next attempt lists.
          this.mustList = true;
          throw err;
        }
      },
      () => this.hint(),
      (healthy) => {
        for (const h of this.healths) h(healthy);
      },
    );
  }

  private apply(type: string, lease: Lease): void {
    const rv = lease?.metadata?.resourceVersion;
    if (rv) this.rv = rv;
    const name = lease?.metadata?.name;
    if (type === 'BOOKMARK' || !name) {
      this.wake();
      return;
    }
    if (type === 'DELETED') {
      this.forget(name);
      if (this.leases.delete(name)) this.deletedSeq = ++this.seq;
    } else if (type === 'ADDED' || type === 'MODIFIED') this.put(lease);
    else return;
    this.wake();
    this.hint();
  }

  private put(lease: Lease): void {
    const name = lease.metadata?.name;
    if (!name) return;
    if (this.keep(lease)) {
      this.leases.set(name, { lease, seq: ++this.seq });
      this.remember(lease);
    } else if (this.leases.delete(name)) {
      // No longer a record of the group (relabelled by hand): gone, as a deletion.
      this.forget(name);
      this.deletedSeq = ++this.seq;
    }
  }

  private hint(): void {
    for (const h of this.hints) h();
  }

  private wake(): void {
    for (const w of [...this.waiters]) w();
  }

  /** Waits until the copy has seen this store's last write in the group (resourceVersions are etcd's revisions: they grow). */
  private async caughtUp(signal?: AbortSignal): Promise<void> {
    while ((numeric(this.rv) ?? this.ownWrite) < this.ownWrite) {
      throwIfAborted({ signal });
      await new Promise<void>((resolve, reject) => {
        const done = () => {
          this.waiters.delete(done);
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
        const onAbort = () => {
          this.waiters.delete(done);
          reject(abortReason(signal!));
        };
        this.waiters.add(done);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
      if (this.closed) throw new BackendError(`the watch of Leases ${this.selector} stopped before it brought this store's last write`);
    }
  }
}

/** A resourceVersion as a number, or null when it is not one (opaque to clients, etcd's revision in practice). */
function numeric(rv: string | undefined): bigint | null {
  return rv !== undefined && /^\d{1,30}$/.test(rv) ? BigInt(rv) : null;
}

function abortable<T>(p: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return p;
  throwIfAborted({ signal });
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
