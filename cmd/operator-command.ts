import { hostname } from 'node:os';
import { parseDuration } from '../src/config/duration.js';
import { validateIdentity, validateLeaseName } from '../src/config/election-options.js';
import { InvalidConfigError, describeError } from '../src/errors.js';
import { connect } from '../src/kube/connect.js';
import { createLogger } from '../src/log.js';
import { parseListen } from '../src/sidecar/http-server.js';
import { Operator } from '../src/operator/operator.js';
import { OperatorMetrics } from '../src/operator/operator-metrics.js';
import { ELECTION_OPTIONS, TIMING_OPTIONS, duration, resolveTimings } from './election-flags.js';
import { isGiven, type ArgsOf, type CommandSpec, type FlagTable, type FlagValues, type Origins } from './flag-table.js';
import type { CommandContext } from './cli-io.js';
import { onShutdownSignal } from './signals.js';
import { badFlag } from './cli-errors.js';

export const OPERATOR_DESCRIPTION =
  'Inject the sidecar into pods labelled leasehold.io/inject=true (a mutating admission webhook, or beside a MutatingAdmissionPolicy) and keep their RBAC';

/**
 * The operator's flags. Its own election shares the sidecar's timings and log flags, rules and
 * all (its lease is a Kubernetes Lease); the rest are its own.
 */
export const OPERATOR_OPTIONS = {
  namespace: { type: 'string', describe: "The operator's namespace: its Secret, its lease (default: the pod's own)" },
  kubeconfig: { type: 'string', describe: 'kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster)' },
  identity: { type: 'string', describe: "This replica's identity (default: the host name, the pod's name in a pod)" },
  lease: { type: 'string', default: 'leasehold-operator', describe: 'The lease the replicas elect their reconciler with' },
  ...TIMING_OPTIONS,
  'injection-mode': {
    type: 'string',
    default: 'webhook',
    describe:
      "webhook: serve the mutating webhook and keep its certificates and mark key; policy: the chart's MutatingAdmissionPolicy injects, and the replicas only elect, grant and report",
  },
  listen: {
    type: 'string',
    default: '0.0.0.0:8443',
    describe: 'HTTPS address of the webhook (/mutate-pods, /healthz, /metrics); with --injection-mode policy, plain HTTP (/healthz, /metrics)',
  },
  secret: { type: 'string', default: 'leasehold-operator-tls', describe: 'The Secret keeping the CA and the serving certificate' },
  'mark-secret': {
    type: 'string',
    default: 'leasehold-operator-mark',
    describe: 'The Secret keeping the key that marks pods as injected by this webhook (made on first start)',
  },
  certificates: {
    type: 'string',
    default: 'operator',
    describe:
      "operator: keep its own CA, the Secret and the caBundle; external: serve the Secret's tls.crt/tls.key as another (cert-manager) keeps them, writing neither",
  },
  'webhook-configuration': {
    type: 'string',
    default: 'leasehold-operator',
    describe: 'The MutatingWebhookConfiguration whose caBundle is kept (--certificates operator only)',
  },
  service: {
    type: 'string',
    default: 'leasehold-operator',
    describe: "The webhook Service's name: the serving certificate names <service>.<namespace>.svc",
  },
  'extra-host': {
    type: 'list',
    describe: 'More names or IPv4 addresses for the serving certificate, one per --extra-host (--certificates operator only)',
  },
  'sidecar-image': { type: 'string', required: true, describe: 'The image of the injected sidecar (required)' },
  'sidecar-image-pull-policy': { type: 'string', default: 'IfNotPresent', describe: 'Always | IfNotPresent | Never' },
  'native-sidecar': { type: 'string', default: 'false', describe: 'Default of leasehold.io/native-sidecar: true | false | auto' },
  'inject-value': {
    type: 'string',
    default: 'true',
    describe:
      'The value of the pod label leasehold.io/inject its webhook configuration selects: the pods it grants and reports (another install in the cluster needs another value)',
  },
  'exclude-namespace': {
    type: 'list',
    describe: 'Namespaces never granted nor reported, besides kube-system and its own; one per --exclude-namespace',
  },
  'namespace-opt-in': {
    type: 'boolean',
    default: false,
    describe: 'Grant and report only in namespaces labelled leasehold.io/injection=enabled (the webhook namespaceSelector of the same name)',
  },
  'fence-objects-policy': {
    type: 'string',
    describe:
      'The ValidatingAdmissionPolicy (its chart installs it) that the bindings made for leasehold.io/fence-objects name; unset, none are made and the pods asking are reported',
  },
  resync: { type: 'string', default: '30s', describe: 'Full reconcile interval (RBAC, uninjected pods)' },
  'tls-check': { type: 'string', default: '10s', describe: 'How often each replica rereads the Secret (the leader renews what is due)' },
  'cert-validity': {
    type: 'string',
    default: '2160h',
    describe: 'Serving certificate lifetime; renewed with a third left (--certificates operator only)',
  },
  'ca-validity': {
    type: 'string',
    default: '87600h',
    describe: 'CA lifetime; a new CA joins the bundle with a third left (--certificates operator only)',
  },
  'log-format': ELECTION_OPTIONS['log-format'],
  'log-level': ELECTION_OPTIONS['log-level'],
} as const satisfies FlagTable;

export type OperatorArgs = ArgsOf<typeof OPERATOR_OPTIONS>;

export const OPERATOR_COMMAND = {
  name: 'operator',
  description: OPERATOR_DESCRIPTION,
  flags: OPERATOR_OPTIONS,
} as const satisfies CommandSpec;

const NATIVE = ['true', 'false', 'auto'] as const;
const MODES = ['webhook', 'policy'] as const;
/** What only the webhook reads: its certificates, its Service's names, the mark key and the Secrets' rereads. */
export const WEBHOOK_ONLY = [
  'secret',
  'mark-secret',
  'certificates',
  'webhook-configuration',
  'service',
  'extra-host',
  'cert-validity',
  'ca-validity',
  'tls-check',
] as const;
const CERTIFICATES = ['operator', 'external'] as const;
const LOG_FORMATS = ['json', 'text'] as const;
const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** An object name: a ValidatingAdmissionPolicy's. */
const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** A Kubernetes label value, not empty: what an objectSelector's matchLabels can match. */
const LABEL_VALUE = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/** Refuses a webhook-only flag given with --injection-mode policy: it would mean nothing there. */
function checkWebhookFlags(a: OperatorArgs, origins: Origins): void {
  const stray = WEBHOOK_ONLY.find((flag) => isGiven(origins, flag));
  if (stray === undefined) return;
  const value = a[stray];
  const from = origins[stray];
  const leaveOut = from?.from === 'variable' ? `unset ${from.variable}` : `leave --${stray} out`;
  throw badFlag(
    stray,
    Array.isArray(value) ? value[0] : value,
    `only --injection-mode webhook reads it, and the injection mode is policy (no webhook, certificate or mark key): ${leaveOut}`,
  );
}

function lifetime(flag: string, text: string): number {
  const ms = parseDuration(text);
  if (ms === null || ms < 60_000) throw badFlag(flag, text, 'expected a duration of at least 1m, such as 2160h');
  return ms;
}

/** Every operator flag checked, before anything is made; `env`: POD_NAME, its identity in a pod. */
export function resolveOperator(f: FlagValues<OperatorArgs>, env: NodeJS.ProcessEnv) {
  const a = f.values;
  // Left out, not empty (the parser refuses an empty value): no value to quote.
  if (!a['sidecar-image']) throw new InvalidConfigError("--sidecar-image is required: the image the sidecar runs (the operator's own)");
  for (const flag of ['secret', 'mark-secret', 'webhook-configuration', 'service'] as const) {
    if (!DNS_LABEL.test(a[flag])) throw badFlag(flag, a[flag], 'must be a DNS-1123 label');
  }
  if (a.namespace !== undefined && !DNS_LABEL.test(a.namespace)) throw badFlag('namespace', a.namespace, 'must be a DNS-1123 label');
  try {
    validateLeaseName(a.lease);
  } catch (err) {
    throw badFlag('lease', a.lease, describeError(err).replace(/^lease name "[^"]*" is invalid: /, ''));
  }
  const identity = a.identity ?? env.POD_NAME ?? hostname();
  try {
    validateIdentity(identity);
  } catch (err) {
    throw badFlag('identity', identity, describeError(err));
  }
  let listen: { host: string; port: number };
  try {
    listen = parseListen(a.listen);
  } catch (err) {
    throw badFlag('listen', a.listen, describeError(err));
  }
  if (!['Always', 'IfNotPresent', 'Never'].includes(a['sidecar-image-pull-policy'])) {
    throw badFlag('sidecar-image-pull-policy', a['sidecar-image-pull-policy'], 'must be Always, IfNotPresent or Never');
  }
  if (!LABEL_VALUE.test(a['inject-value']))
    throw badFlag('inject-value', a['inject-value'], 'must be a label value: 1 to 63 letters, digits, -, _ or ., beginning and ending with a letter or digit');
  const fencePolicy = a['fence-objects-policy'];
  if (fencePolicy !== undefined && !DNS_SUBDOMAIN.test(fencePolicy)) throw badFlag('fence-objects-policy', fencePolicy, 'must be a DNS-1123 subdomain');
  const mode = MODES.find((v) => v === a['injection-mode']);
  if (mode === undefined) throw badFlag('injection-mode', a['injection-mode'], 'must be webhook or policy');
  if (mode === 'policy') checkWebhookFlags(a, f.origins);
  const native = NATIVE.find((v) => v === a['native-sidecar']);
  if (native === undefined) throw badFlag('native-sidecar', a['native-sidecar'], 'must be true, false or auto');
  const certificates = CERTIFICATES.find((v) => v === a.certificates);
  if (certificates === undefined) throw badFlag('certificates', a.certificates, 'must be operator or external');
  const certValidityMs = lifetime('cert-validity', a['cert-validity']);
  const caValidityMs = lifetime('ca-validity', a['ca-validity']);
  if (caValidityMs <= certValidityMs) throw badFlag('ca-validity', a['ca-validity'], `must be longer than --cert-validity (${a['cert-validity']})`);
  const logFormat = LOG_FORMATS.find((v) => v === a['log-format']);
  if (logFormat === undefined) throw badFlag('log-format', a['log-format'], 'must be json or text');
  const logLevel = LOG_LEVELS.find((v) => v === a['log-level']);
  if (logLevel === undefined) throw badFlag('log-level', a['log-level'], 'must be debug, info, warn or error');
  const timings = resolveTimings(f, true);
  return {
    ...a,
    identity,
    listen,
    mode,
    native,
    certificates,
    certValidityMs,
    caValidityMs,
    resyncMs: duration('resync', a.resync),
    tlsCheckMs: duration('tls-check', a['tls-check']),
    timings,
    image: a['sidecar-image'],
    logFormat,
    logLevel,
  };
}

export async function runOperator(f: FlagValues<OperatorArgs>, { env, io }: CommandContext): Promise<number> {
  const s = resolveOperator(f, env);
  const log = createLogger({
    format: s.logFormat,
    level: s.logLevel,
    base: { component: 'operator', identity: s.identity },
    write: (line) => io.stderr(`${line}\n`),
  });
  const kube = connect({ kubeconfig: s.kubeconfig, namespace: s.namespace, requestTimeoutMs: 5_000 });
  const ns = kube.namespace;
  const operator = new Operator({
    kube,
    mode: s.mode,
    identity: s.identity,
    lease: s.lease,
    ...s.timings,
    tls: { namespace: ns, secret: s.secret, webhookConfiguration: s['webhook-configuration'] },
    certificates: s.certificates,
    policy: {
      hosts: [`${s.service}.${ns}.svc`, `${s.service}.${ns}.svc.cluster.local`, `${s.service}.${ns}`, s.service, ...s['extra-host']],
      certValidityMs: s.certValidityMs,
      caValidityMs: s.caValidityMs,
      propagationMs: 60_000,
    },
    listen: s.listen,
    injector: { image: s.image, imagePullPolicy: s['sidecar-image-pull-policy'], nativeSidecar: s.native },
    markSecret: s['mark-secret'],
    injectValue: s['inject-value'],
    excludedNamespaces: ['kube-system', ns, ...s['exclude-namespace']],
    namespaceOptIn: s['namespace-opt-in'],
    ...(s['fence-objects-policy'] !== undefined ? { fencePolicy: s['fence-objects-policy'] } : {}),
    resyncMs: s.resyncMs,
    tlsCheckMs: s.tlsCheckMs,
    log,
    metrics: new OperatorMetrics(),
  });
  const stopped = new Promise<void>((resolve) =>
    onShutdownSignal(io, async (signal) => {
      log.info('shutting down', { signal });
      await operator.stop();
      resolve();
    }),
  );
  try {
    await operator.start();
  } catch (err) {
    // Its election and timers may be running already: nothing may be left when main() returns.
    await operator.stop().catch(() => {});
    throw err;
  }
  await stopped;
  return 0;
}
