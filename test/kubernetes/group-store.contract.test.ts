import { groupStoreContract, upsertGroupThrough } from '../../src/testing/group-store-contract.js';
import { leaseNameOf } from '../../src/backends/kubernetes/group-names.js';
import { freshNamespace, kubectl, storeFor } from '../support/kube.js';

groupStoreContract('Kubernetes, on a real kube-apiserver', async () => {
  const ns = await freshNamespace('group-contract');
  const store = storeFor(ns);
  // The other writer is another client (another process's member); deletions come from kubectl.
  const other = storeFor(ns);
  return {
    store,
    writeElsewhere: (group, record) => upsertGroupThrough(other, group, record),
    deleteElsewhere: async (group, key) => void kubectl(['delete', 'lease', leaseNameOf(group, key), '-n', ns]),
    watchConnects: true,
    close: async () => {
      await other.close();
      await store.close();
    },
  };
});
