import { StoreOpenError } from '../errors.js';

/**
 * The store drivers (better-sqlite3, pg) are optional dependencies: a Kubernetes-only install
 * can leave them out (`npm install --omit=optional`), and a native build that fails does not
 * fail the install. Each is loaded only when its backend is opened; a missing one is a
 * StoreOpenError that names the package and the way out, not a bare module-resolution error.
 */
export async function loadDriver<T>(pkg: 'better-sqlite3' | 'pg', backend: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ERR_MODULE_NOT_FOUND' && e.message.includes(`'${pkg}'`)) {
      throw new StoreOpenError(
        `the ${backend} backend needs the package ${pkg}, which is not installed: it is an optional dependency of leasehold (left out by --omit=optional, or its install failed). Install it (npm install ${pkg}) or use another backend`,
        { cause: err },
      );
    }
    throw err;
  }
}
