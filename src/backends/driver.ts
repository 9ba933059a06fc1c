import { createRequire } from 'node:module';
import { StoreOpenError } from '../errors.js';

/**
 * The store drivers (better-sqlite3, pg) are optional dependencies: a Kubernetes-only install
 * can leave them out (`npm install --omit=optional`), and a native build that fails does not
 * fail the install. Each is loaded only when its backend (or FencedSqliteResource) is opened; a missing one is a
 * StoreOpenError that names the package and the way out, not a bare module-resolution error.
 */
export async function loadDriver<T>(pkg: Driver, backend: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    throw missingDriver(err, pkg, `the ${backend} backend`, 'or use another backend');
  }
}

const require = createRequire(import.meta.url);

/** The same, synchronously, for a constructor (FencedSqliteResource): `user` names what needs it. */
export function requireDriver<T>(pkg: Driver, user: string): T {
  try {
    return require(pkg) as T;
  } catch (err) {
    throw missingDriver(err, pkg, user, '');
  }
}

type Driver = 'better-sqlite3' | 'pg';

/** A StoreOpenError when `err` says `pkg` itself is not installed; `err` unchanged otherwise. */
function missingDriver(err: unknown, pkg: Driver, user: string, alternative: string): unknown {
  const e = err as NodeJS.ErrnoException;
  const missing = (e.code === 'ERR_MODULE_NOT_FOUND' || e.code === 'MODULE_NOT_FOUND') && e.message.includes(`'${pkg}'`);
  if (!missing) return err;
  return new StoreOpenError(
    `${user} needs the package ${pkg}, which is not installed: it is an optional dependency of leasehold (left out by --omit=optional, or its install failed). Install it (npm install ${pkg})${alternative ? ' ' + alternative : ''}`,
    { cause: err },
  );
}
