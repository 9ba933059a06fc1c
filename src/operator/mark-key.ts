import { randomBytes } from 'node:crypto';
import { BackendError } from '../errors.js';
import { httpStatus } from '../kube/api-errors.js';
import type { KubeClient } from '../kube/api-client.js';

/** The data key of the Secret that holds the injection mark's key. */
const DATA_KEY = 'mark.key';
/** A 256-bit key: HMAC-SHA256's block input is longer, its security no greater. */
const KEY_BYTES = 32;

interface Secret {
  data?: Record<string, string>;
}

/**
 * The key every replica signs and checks injection marks with, from the Secret `name` in the
 * operator's namespace; the first replica to find it absent creates it with a random key, and a
 * replica that loses that race reads the winner's. Only the operator's ServiceAccount can read
 * the Secret (its Role), so no pod creator can compute a mark.
 */
export async function loadMarkKey(client: KubeClient, namespace: string, name: string): Promise<Buffer> {
  const path = `/api/v1/namespaces/${namespace}/secrets`;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const secret = await client.request<Secret>('GET', `${path}/${name}`);
      const key = Buffer.from(secret.data?.[DATA_KEY] ?? '', 'base64');
      if (key.length < KEY_BYTES)
        throw new BackendError(`Secret ${namespace}/${name} has no ${DATA_KEY} of ${KEY_BYTES} bytes: delete it to have a new key made`);
      return key;
    } catch (err) {
      if (httpStatus(err) !== 404) throw err;
    }
    const body = {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: { name, namespace, labels: { 'app.kubernetes.io/managed-by': 'leasehold-operator' } },
      data: { [DATA_KEY]: randomBytes(KEY_BYTES).toString('base64') },
    };
    try {
      await client.request('POST', path, { body });
    } catch (err) {
      // Another replica made it first: read theirs.
      if (httpStatus(err) !== 409) throw err;
    }
  }
  throw new BackendError(`Secret ${namespace}/${name}: could neither read nor create the injection mark key`);
}
