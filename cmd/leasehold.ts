#!/usr/bin/env node
/**
 * leasehold: leader election with fencing tokens.
 *   leasehold sidecar   campaign for a lease and report leadership (status files, HTTP, metrics)
 *   leasehold status    show who holds a lease, its token and when it expires
 *   leasehold run -- CMD  run CMD only while leader, with its fencing token in the environment
 *   leasehold operator  inject the sidecar into labelled pods (admission webhook) and keep their RBAC
 * Every flag can also be set as LEASEHOLD_<FLAG> (e.g. LEASEHOLD_LEASE_DURATION=30s).
 *
 * The bin only: main() (cmd/main.ts) with this process's arguments, environment, streams and
 * signals; its status becomes the process's exit code.
 */
import { main } from './main.js';
import { processIo } from './cli-io.js';

process.exitCode = await main(process.argv.slice(2), process.env, processIo());
