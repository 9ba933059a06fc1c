import { httpStatus } from '../kube/api-errors.js';
import type { KubeClient } from '../kube/api-client.js';
import { fromSecretData, nextTlsState, toSecretData, type TlsPolicy, type TlsState } from './tls-state.js';

/** Annotate the Secret with this ("true") to renew the serving certificate at once (same CA). */
export const RENEW_ANNOTATION = 'leasehold.io/renew';

interface Secret {
  metadata?: { name?: string; resourceVersion?: string; annotations?: Record<string, string>; labels?: Record<string, string> };
  data?: Record<string, string>;
}

interface WebhookConfiguration {
  metadata?: { resourceVersion?: string };
  webhooks?: { clientConfig?: { caBundle?: string } }[];
}

export interface TlsLocation {
  namespace: string;
  secret: string;
  /** The MutatingWebhookConfiguration whose caBundle the CA goes into. */
  webhookConfiguration: string;
}

const secretPath = (l: TlsLocation, name = true) => `/api/v1/namespaces/${l.namespace}/secrets${name ? `/${l.secret}` : ''}`;

/** What the Secret holds now, or null (absent, or incomplete). Every replica reads it to serve. */
export async function loadTls(client: KubeClient, l: TlsLocation): Promise<TlsState | null> {
  try {
    return fromSecretData((await client.request<Secret>('GET', secretPath(l))).data);
  } catch (err) {
    if (httpStatus(err) === 404) return null;
    throw err;
  }
}

/** A serving certificate and its key, PEM, as another keeps them in a Secret. */
export interface ServingPair {
  tlsCert: string;
  tlsKey: string;
}

/**
 * The `tls.crt` and `tls.key` of a Secret someone else keeps (cert-manager writes them, with
 * `ca.crt`, into a `kubernetes.io/tls` Secret), or null while it is absent or lacks either.
 * Read only: in this mode nothing here writes the Secret or the caBundle.
 */
export async function loadServingPair(client: KubeClient, l: Pick<TlsLocation, 'namespace' | 'secret'>): Promise<ServingPair | null> {
  let data: Record<string, string> | undefined;
  try {
    data = (await client.request<Secret>('GET', secretPath({ ...l, webhookConfiguration: '' }))).data;
  } catch (err) {
    if (httpStatus(err) === 404) return null;
    throw err;
  }
  const text = (key: string) => (data?.[key] ? Buffer.from(data[key], 'base64').toString() : '');
  const pair = { tlsCert: text('tls.crt'), tlsKey: text('tls.key') };
  return pair.tlsCert && pair.tlsKey ? pair : null;
}

/**
 * One pass of the leader's certificate keeping: moves the Secret on (nextTlsState) and writes
 * its CA bundle into the webhook configuration. Writes are compare-and-swap (resourceVersion):
 * a conflict means someone else wrote; the next pass starts from what they wrote. Returns the
 * state the Secret holds afterwards, and whether the webhook configuration is there.
 */
export async function syncTls(client: KubeClient, l: TlsLocation, policy: TlsPolicy, now: number): Promise<{ state: TlsState; webhookFound: boolean }> {
  let secret: Secret | null = null;
  try {
    secret = await client.request<Secret>('GET', secretPath(l));
  } catch (err) {
    if (httpStatus(err) !== 404) throw err;
  }
  const current = fromSecretData(secret?.data);
  const forced = secret?.metadata?.annotations?.[RENEW_ANNOTATION] === 'true';
  const state = nextTlsState(current, now, policy, forced);
  if (state !== current || forced) {
    const annotations = { ...(secret?.metadata?.annotations ?? {}) };
    delete annotations[RENEW_ANNOTATION];
    const body = {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: {
        name: l.secret,
        namespace: l.namespace,
        labels: { ...(secret?.metadata?.labels ?? {}), 'app.kubernetes.io/managed-by': 'leasehold-operator' },
        annotations,
        ...(secret?.metadata?.resourceVersion ? { resourceVersion: secret.metadata.resourceVersion } : {}),
      },
      data: toSecretData(state),
    };
    if (secret) await client.request('PUT', secretPath(l), { body });
    else await client.request('POST', secretPath(l, false), { body });
  }
  const webhookFound = await writeCaBundle(client, l.webhookConfiguration, state.caBundle);
  return { state, webhookFound };
}

/** Sets every webhook's clientConfig.caBundle; false when the configuration does not exist. */
async function writeCaBundle(client: KubeClient, name: string, bundle: string): Promise<boolean> {
  const path = `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${name}`;
  let config: WebhookConfiguration;
  try {
    config = await client.request<WebhookConfiguration>('GET', path);
  } catch (err) {
    if (httpStatus(err) === 404) return false;
    throw err;
  }
  const caBundle = Buffer.from(bundle).toString('base64');
  const webhooks = config.webhooks ?? [];
  if (webhooks.every((w) => w.clientConfig?.caBundle === caBundle)) return true;
  for (const w of webhooks) w.clientConfig = { ...w.clientConfig, caBundle };
  await client.request('PUT', path, { body: config });
  return true;
}
