import { leaseStoreContract } from './lease-store-contract.js';
import { MemoryLeaseStore } from './memory-store.js';

leaseStoreContract("in-memory (the elector unit tests' store)", async () => {
  const store = new MemoryLeaseStore();
  return {
    store,
    writeElsewhere: async (name, record) => void store.put(name, record),
    deleteElsewhere: async (name) => store.delete(name),
    close: () => store.close(),
  };
});
