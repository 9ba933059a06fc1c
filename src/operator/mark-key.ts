import { randomBytes } from 'node:crypto';
import { realClock, type Clock } from '../clock.js';
import { BackendError, describeError } from '../errors.js';
import { httpStatus } from '../kube/api-errors.js';
import type { KubeClient } from '../kube/api-client.js';
import type { LogFields, Logger } from '../log.js';
import type { MarkKeys } from './injection-mark.js';
import {
  KEY_BYTES,
  ROTATE_ANNOTATION,
  checkMark,
  keyringData,
  markKey,
  mergeKeyrings,
  parseKeyring,
  rotateKeyring,
  sameKeyring,
  withoutUnneeded,
  type Keyring,
  type MarkCheck,
  type SecretLike,
} from './mark-keyring.js';

/** What the reconciler asks of the keys: a pod's mark checked, and the retired keys no pod needs dropped. */
export interface MarkVerifier {
  check(pod: Parameters<typeof checkMark>[1]): MarkCheck;
  /** After a pass over every labelled pod, listed at `listedAt` (ms): the retired keys none of them needs may go. */
  keepOnly(needed: ReadonlySet<string>, listedAt: number): Promise<void>;
}

export interface MarkKeyOptions {
  client: KubeClient;
  namespace: string;
  /** The Secret's name (--mark-secret). */
  name: string;
  /** Labels on a Secret it creates: leasehold's and the install's. */
  labels: Record<string, string>;
  log: Logger;
  /**
   * How long a retired key still verifies pods made after its retirement: a replica signs with
   * the old key until it rereads the Secret (every --tls-check), so a few of those.
   */
  graceMs: number;
  clock?: Clock;
}

/**
 * The keys every replica signs and checks injection marks with, from the Secret `name` in the
 * operator's namespace (only the operator's ServiceAccount can read it, so no pod creator can
 * compute a mark). The first replica to find it absent makes it with a random key; one that loses
 * that race reads the winner's. Every replica then rereads it (refresh(), every --tls-check), so
 * that a rotation reaches every replica, and no change to the Secret takes a key from under the
 * pods it signed:
 * - deleted: made again at once from the keys this replica holds;
 * - lacking a key this replica holds (made again by another replica that had none, or by hand):
 *   that key is added back, retired;
 * - annotated leasehold.io/rotate (the elected replica only): a new signing key, the old one
 *   retired, verifying the pods made before, until the reconciler finds none left (keepOnly).
 */
export class MarkKeyKeeper implements MarkKeys, MarkVerifier {
  private writing: Promise<unknown> = Promise.resolve();
  private lastWarning = '';
  private warned = false;

  private constructor(
    private readonly o: MarkKeyOptions,
    private ring: Keyring,
  ) {}

  private get clock(): Clock {
    return this.o.clock ?? realClock;
  }

  private get where(): string {
    return `${this.o.namespace}/${this.o.name}`;
  }

  private get path(): string {
    return `/api/v1/namespaces/${this.o.namespace}/secrets`;
  }

  /** Reads (or, absent, makes) the Secret; a Secret that holds no usable key stops the start, naming it. */
  static async load(o: MarkKeyOptions): Promise<MarkKeyKeeper> {
    const client = o.client;
    const path = `/api/v1/namespaces/${o.namespace}/secrets`;
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const ring = parseKeyring(await client.request<SecretLike>('GET', `${path}/${o.name}`), `${o.namespace}/${o.name}`);
        if ('error' in ring) throw new BackendError(ring.error);
        return new MarkKeyKeeper(o, ring);
      } catch (err) {
        if (httpStatus(err) !== 404) throw err;
      }
      const key = randomBytes(KEY_BYTES);
      try {
        const made = await client.request<SecretLike>('POST', path, {
          body: {
            apiVersion: 'v1',
            kind: 'Secret',
            type: 'Opaque',
            metadata: { name: o.name, namespace: o.namespace, labels: o.labels },
            data: { 'mark.key': key.toString('base64') },
          },
        });
        // Its creation is where the record begins: the API server's time, as the pods' are.
        const since = Date.parse(made?.metadata?.creationTimestamp ?? '');
        o.log.info('injection mark key made', { secret: `${o.namespace}/${o.name}`, key: markKey(key).id });
        return new MarkKeyKeeper(o, { current: markKey(key), retired: [], since: Number.isNaN(since) ? 0 : since, dropped: [] });
      } catch (err) {
        // Another replica made it first: read theirs.
        if (httpStatus(err) !== 409) throw err;
      }
    }
    throw new BackendError(`Secret ${o.namespace}/${o.name}: could neither read nor create the injection mark key`);
  }

  signing(): Buffer {
    return this.ring.current.key;
  }

  verifying(): Buffer[] {
    return [this.ring.current.key, ...this.ring.retired.map((k) => k.key)];
  }

  /** The ring as this replica holds it now (tests, logs). */
  keyring(): Keyring {
    return this.ring;
  }

  check(pod: Parameters<typeof checkMark>[1]): MarkCheck {
    return checkMark(this.ring, pod, this.o.graceMs);
  }

  /** Rereads the Secret and reconciles it with the keys held (see the class); the leader also rotates when asked. */
  refresh(leading: boolean): Promise<void> {
    return this.update((ring, secret) => (leading && secret?.metadata?.annotations?.[ROTATE_ANNOTATION] !== undefined ? 'rotate' : ring));
  }

  keepOnly(needed: ReadonlySet<string>, listedAt: number): Promise<void> {
    // Nothing to drop in what this replica holds (the usual pass): no request at all.
    if (withoutUnneeded(this.ring, needed, listedAt, this.o.graceMs) === this.ring) return Promise.resolve();
    return this.update((ring) => withoutUnneeded(ring, needed, listedAt, this.o.graceMs));
  }

  /** One read-merge-write of the Secret, one at a time on this replica; failures are logged and tried again next time. */
  private update(change: (merged: Keyring, secret: SecretLike | undefined) => Keyring | 'rotate'): Promise<void> {
    const run = this.writing.then(async () => {
      this.warned = false;
      try {
        await this.updateOnce(change);
      } catch (err) {
        this.warn('injection mark Secret not updated: keeping the keys held', { error: describeError(err) });
      }
      // A trouble gone is said again if it comes back.
      if (!this.warned) this.lastWarning = '';
    });
    this.writing = run;
    return run;
  }

  private async updateOnce(change: (merged: Keyring, secret: SecretLike | undefined) => Keyring | 'rotate'): Promise<void> {
    const { client, log } = this.o;
    const now = this.clock.now().getTime();
    let secret: SecretLike | undefined;
    try {
      secret = await client.request<SecretLike>('GET', `${this.path}/${this.o.name}`);
    } catch (err) {
      if (httpStatus(err) !== 404) throw err;
    }
    if (!secret) {
      // Deleted: made again from memory, so no pod's mark loses its key. Another replica may do
      // the same at once (409): the next refresh reads theirs and merges.
      try {
        await client.request('POST', this.path, {
          body: {
            apiVersion: 'v1',
            kind: 'Secret',
            type: 'Opaque',
            metadata: { name: this.o.name, namespace: this.o.namespace, labels: this.o.labels },
            data: keyringData(this.ring),
          },
        });
        log.warn('injection mark Secret was deleted: made it again with the keys this replica holds', {
          secret: this.where,
          keys: this.ring.retired.length + 1,
        });
      } catch (err) {
        if (httpStatus(err) !== 409) throw err;
      }
      return;
    }
    const theirs = parseKeyring(secret, this.where);
    if ('error' in theirs) {
      this.warn(`${theirs.error}; keeping the keys this replica holds`, { secret: this.where });
      return;
    }
    const merged = mergeKeyrings(this.ring, theirs, now);
    const asked = change(merged, secret);
    const rotating = asked === 'rotate';
    const next = rotating ? rotateKeyring(merged, randomBytes(KEY_BYTES), now) : asked;
    if (!rotating && sameKeyring(next, theirs)) {
      this.ring = theirs;
      return;
    }
    const annotations = { ...secret.metadata?.annotations };
    if (rotating) delete annotations[ROTATE_ANNOTATION];
    try {
      await client.request('PUT', `${this.path}/${this.o.name}`, {
        body: { ...secret, metadata: { ...secret.metadata, annotations }, data: keyringData(next) },
      });
    } catch (err) {
      // Changed meanwhile (409) or deleted (404): the next refresh starts from what is there.
      // What this replica verifies with meanwhile is the union, never less than it held.
      if (httpStatus(err) !== 409 && httpStatus(err) !== 404) throw err;
      this.ring = merged;
      return;
    }
    const added = merged.retired.length - theirs.retired.length;
    if (added > 0) log.warn('injection mark Secret lacked keys this replica holds: added them back, retired', { secret: this.where, keys: added });
    if (rotating)
      log.info('injection mark key rotated: new pods are signed with the new key', { secret: this.where, key: next.current.id, retired: merged.current.id });
    for (const k of merged.retired.filter((r) => !next.retired.includes(r)))
      log.info('retired injection mark key dropped: no pod needs it', { secret: this.where, key: k.id });
    this.ring = next;
  }

  /** A warning once until it changes: a Secret that stays unreadable is not logged every --tls-check. */
  private warn(message: string, fields: LogFields): void {
    this.warned = true;
    if (message === this.lastWarning) return;
    this.lastWarning = message;
    this.o.log.warn(message, fields);
  }
}
