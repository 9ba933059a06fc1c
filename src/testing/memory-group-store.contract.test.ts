import { groupStoreContract } from './group-store-contract.js';
import { MemoryGroupStore } from './memory-group-store.js';

groupStoreContract("in-memory (the shard group's unit tests' store)", async () => {
  const store = new MemoryGroupStore();
  return {
    store,
    writeElsewhere: async (group, record) => void store.put(group, record),
    deleteElsewhere: async (group, key) => void store.delete(group, key),
    close: async () => {},
  };
});
