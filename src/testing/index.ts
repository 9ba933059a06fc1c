/**
 * `leasehold/testing` (package.json `exports`): for people who write their own LeaseStore, the
 * tools leasehold tests its own stores with (docs/library.md, "Writing your own store"):
 * - the store contract suite, written with node:test, which ships with Node;
 * - the in-memory store, a reference store that also lets an app test its election in-process;
 * - the fake clock, which moves time only when told to.
 * The seeded election simulation and its PRNG test leasehold itself: they live in test/support/.
 */
export { leaseStoreContract, upsertThrough, type ContractSubject } from './lease-store-contract.js';
export { MemoryLeaseStore, type StoreOp } from './memory-store.js';
export { FakeClock, settle } from './fake-clock.js';
