import { beforeEach } from 'node:test';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Proc } from './cli.js';
import type { PostgresServer } from './postgres.js';
import { scratchDir } from './scratch.js';

/**
 * What a describe block of the PostgreSQL tier needs to start candidates: a folder per case,
 * since a killed sidecar's status file claims leadership until its validUntil and must not be
 * read as the next case's leader (all removed after the block, with every process `owned`
 * lists), and the CLI flags that reach a lease in a table of the test server.
 */
export function postgresCandidates(server: Promise<PostgresServer>, owned: () => Array<Proc | { proc: Proc }>) {
  const scratch = scratchDir(owned);
  let n = 0;
  const dir = {
    get path() {
      return join(scratch.path, `case-${n}`);
    },
  };
  beforeEach(() => {
    n++;
    mkdirSync(dir.path);
  });
  /** `--backend postgres` flags for `lease` in `table`, as the leasehold role unless `url` says otherwise. */
  const args = async (lease: string, table = 'public.leases', url?: string): Promise<string[]> => [
    '--backend',
    'postgres',
    '--postgres-url',
    url ?? (await server).url(),
    '--postgres-table',
    table,
    '--lease',
    lease,
  ];
  return { dir, args };
}
