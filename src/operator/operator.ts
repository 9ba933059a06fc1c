import { X509Certificate } from 'node:crypto';
import { describeError } from '../errors.js';
import { LeaderElection, type Leadership } from '../election/leader-election.js';
import type { KubeConnection } from '../kube/connect.js';
import type { Logger } from '../log.js';
import type { InjectorDefaults } from './injection-settings.js';
import { MarkKeyKeeper } from './mark-key.js';
import type { OperatorMetrics } from './operator-metrics.js';
import { installationOf, ownLabels } from './rbac.js';
import { ProbeServer } from './probe-server.js';
import { Reconciler } from './reconciler.js';
import { loadServingPair, loadTls, syncTls, type ServingPair, type TlsLocation } from './tls-keeper.js';
import type { TlsPolicy } from './tls-state.js';
import { WebhookServer } from './webhook-server.js';

/**
 * How labelled pods get their sidecar. 'webhook': every replica serves the mutating webhook
 * (HTTPS, its certificates, the mark key). 'policy': the API server injects through the chart's
 * MutatingAdmissionPolicy; the replicas serve no webhook, keep no certificate or key, and only
 * elect, grant (policy-grant.ts) and report.
 */
export type InjectionMode = 'webhook' | 'policy';

export interface OperatorOptions {
  kube: KubeConnection;
  mode: InjectionMode;
  identity: string;
  lease: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  tls: TlsLocation;
  /**
   * 'operator': the elected replica keeps its own CA and serving certificate in the Secret and
   * the caBundle. 'external': another (cert-manager) keeps the Secret and the caBundle; every
   * replica only serves the Secret's tls.crt and tls.key, and writes neither.
   */
  certificates: 'operator' | 'external';
  policy: TlsPolicy;
  /** The webhook's HTTPS address; in policy mode the plain HTTP address of /healthz and /metrics. */
  listen: { host: string; port: number };
  injector: Omit<InjectorDefaults, 'clusterSupportsNativeSidecars' | 'marks'>;
  /** The Secret in its namespace holding the keys injection marks are signed with (made on first start). */
  markSecret: string;
  /** The value of the pod label leasehold.io/inject its webhook configuration selects (--inject-value): the pods it grants and reports. */
  injectValue: string;
  excludedNamespaces: string[];
  /** Only namespaces labelled leasehold.io/injection=enabled are granted and reported (the webhook's namespaceOptIn). */
  namespaceOptIn: boolean;
  resyncMs: number;
  /** --fence-objects-policy: the policy the bindings of leasehold.io/fence-objects name; undefined: none are made. */
  fencePolicy?: string;
  /** How often every replica rereads the Secrets (and the leader moves them on). */
  tlsCheckMs: number;
  log: Logger;
  metrics: OperatorMetrics;
}

/** Native sidecars (restartPolicy Always on an init container) are on by default from Kubernetes 1.29. */
export async function supportsNativeSidecars(kube: KubeConnection): Promise<boolean> {
  const v = await kube.client.request<{ major?: string; minor?: string }>('GET', '/version');
  const major = Number.parseInt(v.major ?? '', 10);
  const minor = Number.parseInt(v.minor ?? '', 10);
  return major > 1 || (major === 1 && minor >= 29);
}

/**
 * `leasehold operator`: every replica serves the webhook with the certificate in the Secret;
 * the one elected by leasehold's own LeaderElection keeps that Secret and the caBundle, and
 * runs the reconciler (RBAC, uninjected pods). In policy mode there is no webhook, Secret or
 * caBundle: the replicas serve only /healthz and /metrics, and the elected one reconciles.
 */
export class Operator {
  private election: LeaderElection | undefined;
  private server: WebhookServer | undefined;
  private probes: ProbeServer | undefined;
  private native = false;
  private tlsTimer: NodeJS.Timeout | undefined;
  private checking: Promise<void> | undefined;
  private leading = false;
  private listening: Promise<number> | undefined;
  private stopped = false;
  private marks: MarkKeyKeeper | undefined;
  private checkingMarks: Promise<void> | undefined;
  /** This install's name, on everything it makes (rbac.ts installationOf). */
  private readonly installation: string;
  /** The last warning about the external Secret, so each is logged once, not every --tls-check. */
  private externalWarning = '';

  constructor(private readonly o: OperatorOptions) {
    this.installation = installationOf(o.kube.namespace, o.lease);
  }

  /** The webhook's port once it listens (it listens once a certificate exists); in policy mode the probes' port. */
  port(): Promise<number> | undefined {
    return this.listening;
  }

  async start(): Promise<void> {
    const o = this.o;
    const native = await supportsNativeSidecars(o.kube);
    this.native = native;
    o.log.info('starting', { installation: this.installation, injects: `leasehold.io/inject=${o.injectValue}`, mode: o.mode });
    if (o.mode === 'policy') return this.startPolicy();
    // Before the port opens: a replica signs every pod it injects, so it serves none without the key.
    const marks = await MarkKeyKeeper.load({
      client: o.kube.client,
      namespace: o.kube.namespace,
      name: o.markSecret,
      labels: ownLabels(this.installation),
      log: o.log,
      graceMs: markGraceMs(o.tlsCheckMs),
    });
    this.marks = marks;
    this.server = new WebhookServer({ ...o.injector, clusterSupportsNativeSidecars: native, marks }, o.log, o.metrics);
    this.election = await this.elect();
    this.tlsTimer = setInterval(() => {
      void this.checkTls();
      void this.checkMarks();
    }, o.tlsCheckMs);
    await this.checkTls();
  }

  /** Policy mode: the election and the probes' port only; nothing is served to the API server. */
  private async startPolicy(): Promise<void> {
    const o = this.o;
    this.probes = new ProbeServer(o.metrics);
    this.election = await this.elect();
    this.listening = this.probes.listen(o.listen.host, o.listen.port).then((port) => {
      o.log.info('probes listening', { port });
      return port;
    });
    await this.listening;
  }

  private elect(): Promise<LeaderElection> {
    const o = this.o;
    return LeaderElection.start({
      store: { backend: 'kubernetes', kube: o.kube, namespace: o.kube.namespace },
      lease: o.lease,
      identity: o.identity,
      leaseDurationMs: o.leaseDurationMs,
      renewDeadlineMs: o.renewDeadlineMs,
      retryPeriodMs: o.retryPeriodMs,
      log: o.log,
      callbacks: { onStartedLeading: (l) => this.lead(l) },
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.tlsTimer);
    await this.election?.stop();
    await this.checking;
    await this.checkingMarks;
    await this.server?.close();
    await this.probes?.close();
  }

  private async lead(l: Leadership): Promise<void> {
    const o = this.o;
    const policy = o.mode === 'policy';
    o.log.info(policy ? 'leading: keeping the RBAC of injected pods' : 'leading: keeping the certificates and the RBAC of injected pods');
    this.leading = true;
    o.metrics.isLeader.set(1);
    if (!policy) {
      // A pass begun as a follower only read the Secret: this one keeps it.
      await this.checking;
      await this.checkTls();
    }
    const reconciler = new Reconciler({
      client: o.kube.client,
      log: o.log,
      metrics: o.metrics,
      excludedNamespaces: o.excludedNamespaces,
      namespaceOptIn: o.namespaceOptIn,
      // Policy mode: a pod is judged by its container, against what the policy injects with the same defaults.
      ...(policy ? { policy: { ...o.injector, clusterSupportsNativeSidecars: this.native } } : { marks: this.marks! }),
      installation: this.installation,
      injectValue: o.injectValue,
      ...(o.fencePolicy !== undefined ? { fencePolicy: o.fencePolicy } : {}),
    });
    reconciler.start(o.resyncMs);
    await new Promise<void>((resolve) => l.signal.addEventListener('abort', () => resolve(), { once: true }));
    this.leading = false;
    o.metrics.isLeader.set(0);
    await reconciler.stop();
  }

  /** One reread of the mark keys' Secret (mark-key.ts); the leader also rotates when asked. One at a time. */
  private checkMarks(): Promise<void> {
    this.checkingMarks ??= this.marks!.refresh(this.leading).finally(() => {
      this.checkingMarks = undefined;
    });
    return this.checkingMarks;
  }

  /** What to serve now: the Secret as another keeps it, or (the leader) as moved on by this pass. */
  private async servingPair(): Promise<ServingPair | null> {
    const o = this.o;
    if (o.certificates === 'external') return loadServingPair(o.kube.client, o.tls);
    return this.leading ? (await syncTls(o.kube.client, o.tls, o.policy, Date.now())).state : await loadTls(o.kube.client, o.tls);
  }

  /**
   * With --certificates external nothing here can mend the Secret: say, once each, why there is
   * nothing to serve (no port is opened until there is) or why the API server will not trust
   * what is served (expired: cert-manager should have renewed it).
   */
  private warnExternal(pair: ServingPair | null): void {
    const o = this.o;
    const secret = `${o.tls.namespace}/${o.tls.secret}`;
    let warning = '';
    let fields: Record<string, string> = { secret };
    if (!pair) warning = 'waiting for the serving certificate: the Secret is absent or lacks tls.crt or tls.key';
    else {
      let validTo: Date | undefined;
      try {
        validTo = new Date(new X509Certificate(pair.tlsCert).validTo);
      } catch {
        // Not a certificate: setCertificate refuses it and says so.
      }
      if (validTo && validTo.getTime() <= Date.now()) {
        warning = 'serving certificate expired: the API server refuses it; is cert-manager renewing it?';
        fields = { secret, notAfter: validTo.toISOString() };
      }
    }
    const key = warning && `${warning} ${fields.notAfter ?? ''}`;
    if (key && key !== this.externalWarning) o.log.warn(warning, fields);
    this.externalWarning = key;
  }

  /**
   * One certificate pass: the leader moves the Secret on (unless another keeps it); every replica
   * serves what it holds. A pair that cannot be served (a key that does not match) is logged and
   * the one served so far is kept.
   */
  private checkTls(): Promise<void> {
    if (this.checking) return this.checking;
    this.checking = (async () => {
      const o = this.o;
      try {
        const state = await this.servingPair();
        if (o.certificates === 'external') this.warnExternal(state);
        if (!state || this.stopped) return;
        const changed = this.server!.certificate !== state.tlsCert;
        this.server!.setCertificate(state.tlsCert, state.tlsKey);
        if (changed) o.log.info('serving certificate loaded');
        this.listening ??= this.server!.listen(o.listen.host, o.listen.port).then(
          (port) => {
            o.log.info('webhook listening', { port });
            return port;
          },
          (err: unknown) => {
            // Not listening (the port taken, say): the next check tries again, rather than
            // keep a failed listen as if the webhook were served.
            this.listening = undefined;
            throw err;
          },
        );
        await this.listening;
      } catch (err) {
        o.log.warn('certificate check failed', { error: describeError(err) });
      }
    })().finally(() => {
      this.checking = undefined;
    });
    return this.checking;
  }
}

/**
 * How long a retired mark key still verifies pods made after a rotation: every replica rereads
 * the Secret each --tls-check, so after three of them (one missed read, and the clocks' skew
 * against the API server's timestamps, which have whole seconds) none signs with the old key.
 */
export const markGraceMs = (tlsCheckMs: number): number => 3 * tlsCheckMs;
