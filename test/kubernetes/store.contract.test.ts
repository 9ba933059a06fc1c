import { leaseStoreContract, upsertThrough } from '../../src/testing/lease-store-contract.js';
import { freshNamespace, kubectl, storeFor } from '../support/kube.js';

leaseStoreContract('Kubernetes, on a real kube-apiserver', async () => {
  const ns = await freshNamespace('contract');
  const store = storeFor(ns);
  // The other writer is another client (another process's sidecar); deletions come from kubectl.
  const other = storeFor(ns);
  return {
    store,
    writeElsewhere: (name, record) => upsertThrough(other, name, record),
    deleteElsewhere: async (name) => void kubectl(['delete', 'lease', name, '-n', ns]),
    close: async () => {
      await other.close();
      await store.close();
    },
  };
});
